package mad

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/go-rdma/rdmacm/rdma"
)

// ServiceID returns the service ID rdma_cm uses for an IP port
// (IBTA annex A11; kernel cma_get_service_id): 0x0000_0000_PPPP_pppp
// with PPPP the port space and pppp the destination (listening) port.
func ServiceID(ps rdma.PortSpace, port uint16) uint64 { return uint64(ps)<<16 | uint64(port) }

// SplitServiceID reverses ServiceID. ok is false unless the upper 32
// bits are zero and the port space is one of the four above.
func SplitServiceID(id uint64) (ps rdma.PortSpace, port uint16, ok bool) {
	ps, port = rdma.PortSpace(id>>16), uint16(id)
	return ps, port, id>>32 == 0 && ps.Valid()
}

// IPHeaderSize is the size of the rdma_cm IP private-data header.
const IPHeaderSize = 36

// rdma_cm IP private-data header offsets from the start of private data
// (IBTA vol. 1 annex A11; kernel struct cma_hdr).
const (
	ipHdrCMAVersion     = 0 // 8 bits
	ipHdrIPVersion      = 1
	ipHdrIPVersionShift = 4
	ipHdrIPVersionBits  = 4
	ipHdrSrcPort        = 2  // 16 bits
	ipHdrSrcAddr        = 4  // 128 bits
	ipHdrDstAddr        = 20 // 128 bits
	// ipHdrIPv4 is where an IPv4 address sits in an address field.
	ipHdrIPv4 = 12
)

// IP private-data header limits: what is left for the consumer.
const (
	REQUserDataSize     = REQPrivateDataSize - IPHeaderSize     // 56
	SIDRREQUserDataSize = SIDRREQPrivateDataSize - IPHeaderSize // 180
)

// IPHeader is the header rdma_cm puts at the start of REQ and SIDR_REQ
// private data for AF_INET/AF_INET6 ids (kernel struct cma_hdr,
// librdmacm struct ib_connect_hdr):
//
//	0  CMA version (0)
//	1  IP version in the high nibble (4 or 6), low nibble reserved
//	2  source port of the active side, big-endian
//	4  source address: IPv6, or IPv4 in bytes 16..19 with 4..15 zero
//	20 destination address, same layout
type IPHeader struct {
	// CMAVersion must be 0.
	CMAVersion uint8
	// IPVersion is 4 or 6.
	IPVersion uint8
	// SrcPort is the active side's source port.
	SrcPort uint16
	// Src and Dst are the source and destination addresses.
	Src, Dst netip.Addr
}

// MarshalTo writes the 36-byte header into b.
func (h *IPHeader) MarshalTo(b []byte) (int, error) {
	if len(b) < IPHeaderSize {
		return 0, fmt.Errorf("rdma_cm IP header: buffer %d bytes, need %d: %w", len(b), IPHeaderSize, ErrShortBuffer)
	}
	if h.CMAVersion != 0 {
		return 0, ipFieldError("CMAVersion", ipHdrCMAVersion, uint64(h.CMAVersion), ErrBadCMAVersion)
	}
	p := (*[IPHeaderSize]byte)(b[:IPHeaderSize])
	clear(p[:])
	p[ipHdrIPVersion] = h.IPVersion << ipHdrIPVersionShift
	binary.BigEndian.PutUint16(p[ipHdrSrcPort:], h.SrcPort)
	for i, a := range [2]netip.Addr{h.Src, h.Dst} {
		off := [2]int{ipHdrSrcAddr, ipHdrDstAddr}[i]
		switch {
		case h.IPVersion == 4 && (a.Is4() || a.Is4In6()):
			a4 := a.Unmap().As4()
			copy(p[off+ipHdrIPv4:off+16], a4[:])
		case h.IPVersion == 6 && a.Is6():
			a16 := a.As16()
			copy(p[off:off+16], a16[:])
		case h.IPVersion == 4 || h.IPVersion == 6:
			return 0, ipFieldError([2]string{"Src", "Dst"}[i], off, uint64(h.IPVersion), ErrBadIPVersion)
		default:
			return 0, ipFieldError("IPVersion", ipHdrIPVersion, uint64(h.IPVersion), ErrBadIPVersion)
		}
	}
	return IPHeaderSize, nil
}

// MarshalWithData writes the header and then user into dst (a message's
// private data field, e.g. req.PrivateData[:]), zeroing the rest.
func (h *IPHeader) MarshalWithData(dst, user []byte) error {
	if len(dst) < IPHeaderSize || len(user) > len(dst)-IPHeaderSize {
		return fmt.Errorf("rdma_cm IP header + %d bytes of user data in %d bytes: %w", len(user), len(dst), ErrPrivateDataTooLong)
	}
	if _, err := h.MarshalTo(dst); err != nil {
		return err
	}
	clear(dst[IPHeaderSize+copy(dst[IPHeaderSize:], user):])
	return nil
}

func ipFieldError(field string, off int, v uint64, err error) error {
	return &FieldError{Field: "IPHeader." + field, Offset: off, Value: v, Err: err}
}

// IPHeaderView reads an rdma_cm IP header in place.
type IPHeaderView struct{ p *[IPHeaderSize]byte }

// ParseIPHeader validates the start of private data pd as an rdma_cm IP
// header: at least 36 bytes, CMA version 0 (else ErrBadCMAVersion, as
// the kernel refuses it) and IP version 4 or 6 (else ErrBadIPVersion:
// the kernel then treats the REQ as AF_IB, without header).
func ParseIPHeader(pd []byte) (IPHeaderView, error) {
	if len(pd) < IPHeaderSize {
		return IPHeaderView{}, fmt.Errorf("rdma_cm IP header: %d bytes, need %d: %w", len(pd), IPHeaderSize, ErrShortBuffer)
	}
	v := IPHeaderView{(*[IPHeaderSize]byte)(pd[:IPHeaderSize])}
	if v.CMAVersion() != 0 {
		return IPHeaderView{}, ipFieldError("CMAVersion", ipHdrCMAVersion, uint64(v.CMAVersion()), ErrBadCMAVersion)
	}
	if ipv := v.IPVersion(); ipv != 4 && ipv != 6 {
		return IPHeaderView{}, ipFieldError("IPVersion", ipHdrIPVersion, uint64(ipv), ErrBadIPVersion)
	}
	return v, nil
}

// CMAVersion is the 8-bit CMA version; 0.
func (v IPHeaderView) CMAVersion() uint8 { return v.p[ipHdrCMAVersion] }

// IPVersion is the 4-bit IP version: 4 or 6.
func (v IPHeaderView) IPVersion() uint8 {
	return getBits(v.p[ipHdrIPVersion], ipHdrIPVersionShift, ipHdrIPVersionBits)
}

// SrcPort is the active side's 16-bit source port.
func (v IPHeaderView) SrcPort() uint16 { return binary.BigEndian.Uint16(v.p[ipHdrSrcPort:]) }

// Src is the source address: IPv4 for IPVersion 4, else IPv6.
func (v IPHeaderView) Src() netip.Addr { return v.addr(ipHdrSrcAddr) }

// Dst is the destination address: IPv4 for IPVersion 4, else IPv6.
func (v IPHeaderView) Dst() netip.Addr { return v.addr(ipHdrDstAddr) }

func (v IPHeaderView) addr(off int) netip.Addr {
	if v.IPVersion() == 4 {
		return netip.AddrFrom4([4]byte(v.p[off+ipHdrIPv4 : off+16]))
	}
	return netip.AddrFrom16([16]byte(v.p[off : off+16]))
}

// Bytes returns the 36 header bytes (not a copy).
func (v IPHeaderView) Bytes() []byte { return v.p[:] }

// Decode copies the fields into h without allocating.
func (v IPHeaderView) Decode(h *IPHeader) {
	*h = IPHeader{CMAVersion: v.CMAVersion(), IPVersion: v.IPVersion(), SrcPort: v.SrcPort(), Src: v.Src(), Dst: v.Dst()}
}
