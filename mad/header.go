package mad

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Sizes of a CM MAD (IBTA vol. 1 13.4.2: 24-byte common header and
// 232 bytes of class data; a CM MAD is always 256 bytes).
const (
	MADSize    = 256
	HeaderSize = 24
	DataSize   = MADSize - HeaderSize
)

// Fixed MAD header values for the CM class.
const (
	BaseVersion    = 1    // IB_MGMT_BASE_VERSION
	ClassCM        = 0x07 // IB_MGMT_CLASS_CM
	CMClassVersion = 2    // IB_CM_CLASS_VERSION
)

// Method is the MAD header Method byte.
type Method uint8

// Methods (IBTA 13.4.5). CM messages use Send only.
const (
	MethodGet     Method = 0x01
	MethodSet     Method = 0x02
	MethodSend    Method = 0x03
	MethodGetResp Method = 0x81
)

func (m Method) String() string {
	switch m {
	case MethodGet:
		return "Get"
	case MethodSet:
		return "Set"
	case MethodSend:
		return "Send"
	case MethodGetResp:
		return "GetResp"
	}
	return fmt.Sprintf("Method(%#02x)", uint8(m))
}

// AttributeID identifies the CM message (kernel CM_*_ATTR_ID).
type AttributeID uint16

// CM attribute IDs (IBTA 12.6, table 102; ClassPortInfo is the generic
// 13.4.8.1 attribute).
const (
	AttrClassPortInfo AttributeID = 0x0001
	AttrREQ           AttributeID = 0x0010
	AttrMRA           AttributeID = 0x0011
	AttrREJ           AttributeID = 0x0012
	AttrREP           AttributeID = 0x0013
	AttrRTU           AttributeID = 0x0014
	AttrDREQ          AttributeID = 0x0015
	AttrDREP          AttributeID = 0x0016
	AttrSIDRREQ       AttributeID = 0x0017
	AttrSIDRREP       AttributeID = 0x0018
	AttrLAP           AttributeID = 0x0019
	AttrAPR           AttributeID = 0x001A
)

// attrNames is indexed by AttributeID - AttrREQ.
var attrNames = [...]string{"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP", "SIDR_REQ", "SIDR_REP", "LAP", "APR"}

// Known reports whether a is one of the CM attributes above.
func (a AttributeID) Known() bool {
	return a == AttrClassPortInfo || (a >= AttrREQ && a <= AttrAPR)
}

func (a AttributeID) String() string {
	if a == AttrClassPortInfo {
		return "ClassPortInfo"
	}
	if a >= AttrREQ && a <= AttrAPR {
		return attrNames[a-AttrREQ]
	}
	return fmt.Sprintf("Attribute(%#04x)", uint16(a))
}

// Header holds the MAD common header fields a CM message may vary. The
// encoders write BaseVersion 1, class 0x07, class version 2, the
// message's method and AttributeID themselves, and zero the reserved
// bytes 18..19.
type Header struct {
	Status        uint16
	ClassSpecific uint16
	TransactionID uint64
	// AttributeModifier carries the ECE options in REQ, REP and
	// SIDR_REP (kernel cm_format_mad_ece_hdr); elsewhere Linux sends 0.
	AttributeModifier uint32
}

func (h *Header) put(p *mad, attr AttributeID, m Method) {
	p[0] = BaseVersion
	p[1] = ClassCM
	p[2] = CMClassVersion
	p[3] = byte(m)
	put16(p, 4, h.Status)
	put16(p, 6, h.ClassSpecific)
	put64(p, 8, h.TransactionID)
	put16(p, 16, uint16(attr))
	put16(p, 18, 0)
	put32(p, 20, h.AttributeModifier)
}

func (h *Header) get(p *mad) {
	h.Status = get16(p, 4)
	h.ClassSpecific = get16(p, 6)
	h.TransactionID = get64(p, 8)
	h.AttributeModifier = get32(p, 20)
}

// HeaderView reads the 24-byte MAD common header of any class.
type HeaderView struct{ p *[HeaderSize]byte }

// ParseHeader views the first 24 bytes of b. It checks only the length.
func ParseHeader(b []byte) (HeaderView, error) {
	if len(b) < HeaderSize {
		return HeaderView{}, fmt.Errorf("mad header: %d bytes, need %d: %w", len(b), HeaderSize, ErrShortBuffer)
	}
	return HeaderView{(*[HeaderSize]byte)(b[:HeaderSize])}, nil
}

func (h HeaderView) BaseVersion() uint8  { return h.p[0] }
func (h HeaderView) MgmtClass() uint8    { return h.p[1] }
func (h HeaderView) ClassVersion() uint8 { return h.p[2] }
func (h HeaderView) Method() Method      { return Method(h.p[3]) }
func (h HeaderView) Status() uint16      { return binary.BigEndian.Uint16(h.p[4:6]) }
func (h HeaderView) ClassSpecific() uint16 {
	return binary.BigEndian.Uint16(h.p[6:8])
}
func (h HeaderView) TransactionID() uint64 { return binary.BigEndian.Uint64(h.p[8:16]) }
func (h HeaderView) AttributeID() AttributeID {
	return AttributeID(binary.BigEndian.Uint16(h.p[16:18]))
}

// Reserved returns header bytes 18..19, which encoders write as zero.
func (h HeaderView) Reserved() uint16 { return binary.BigEndian.Uint16(h.p[18:20]) }
func (h HeaderView) AttributeModifier() uint32 {
	return binary.BigEndian.Uint32(h.p[20:24])
}

// Header returns the variable header fields.
func (h HeaderView) Header() Header {
	return Header{
		Status:            h.Status(),
		ClassSpecific:     h.ClassSpecific(),
		TransactionID:     h.TransactionID(),
		AttributeModifier: h.AttributeModifier(),
	}
}

// GID is a 128-bit InfiniBand global identifier. For RoCEv2 over IPv4 it
// holds the IPv4-mapped IPv6 address.
type GID [16]byte

// Addr returns g as an IPv6 address (IPv4-mapped for RoCEv2/IPv4).
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g) }

// GIDFromAddr returns the GID of an IP address, mapping IPv4 into IPv6
// as RoCEv2 GIDs do.
func GIDFromAddr(a netip.Addr) GID { return a.As16() }

func (g GID) String() string { return g.Addr().String() }

// mad is the fixed-size form every view and encoder works on.
type mad = [MADSize]byte

func get16(p *mad, o int) uint16 { return binary.BigEndian.Uint16(p[o : o+2]) }
func get24(p *mad, o int) uint32 {
	return uint32(p[o])<<16 | uint32(p[o+1])<<8 | uint32(p[o+2])
}
func get32(p *mad, o int) uint32 { return binary.BigEndian.Uint32(p[o : o+4]) }
func get64(p *mad, o int) uint64 { return binary.BigEndian.Uint64(p[o : o+8]) }

func put16(p *mad, o int, v uint16) { binary.BigEndian.PutUint16(p[o:o+2], v) }
func put24(p *mad, o int, v uint32) {
	p[o], p[o+1], p[o+2] = byte(v>>16), byte(v>>8), byte(v)
}
func put32(p *mad, o int, v uint32) { binary.BigEndian.PutUint32(p[o:o+4], v) }
func put64(p *mad, o int, v uint64) { binary.BigEndian.PutUint64(p[o:o+8], v) }

func getGID(p *mad, o int) (g GID) { copy(g[:], p[o:o+16]); return }

func bit(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// d converts a CM data offset (the kernel's CM_FIELD offsets, IBTA
// table byte numbers) to an offset from the start of the MAD.
const cmData = HeaderSize
