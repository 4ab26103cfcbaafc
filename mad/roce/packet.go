package roce

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// MAC is an Ethernet address. It marshals as text "aa:bb:cc:dd:ee:ff".
type MAC [6]byte

func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// MarshalText implements encoding.TextMarshaler.
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *MAC) UnmarshalText(text []byte) error {
	var b [6]byte
	n, err := fmt.Sscanf(string(text), "%02x:%02x:%02x:%02x:%02x:%02x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5])
	if err != nil || n != 6 || len(text) != 17 {
		return fmt.Errorf("roce: bad MAC address %q", text)
	}
	*m = b
	return nil
}

// VLANTag is one 802.1Q (or 802.1ad) tag.
type VLANTag struct {
	TPID         uint16 // EtherTypeVLAN or EtherTypeQinQ
	Priority     uint8  // PCP, 3 bits
	DropEligible bool   // DEI
	ID           uint16 // VID, 12 bits
}

func (t VLANTag) tci() uint16 {
	tci := uint16(t.Priority)<<13 | t.ID&0x0FFF
	if t.DropEligible {
		tci |= 1 << 12
	}
	return tci
}

func vlanTagFromTCI(tpid, tci uint16) VLANTag {
	return VLANTag{TPID: tpid, Priority: uint8(tci >> 13), DropEligible: tci&(1<<12) != 0, ID: tci & 0x0FFF}
}

// maxVLANTags is how many stacked tags Decode accepts (802.1ad + 802.1Q).
const maxVLANTags = 2

// Packet is a decoded RoCEv2 frame: a view over the bytes given to Decode
// (or DecodeIP), which must not be modified while the Packet is in use.
// Decode checked every length once; the accessors read fixed offsets.
type Packet struct {
	buf   []byte // the frame as given
	hasL2 bool
	vlans [maxVLANTags]VLANTag
	nvlan int
	l3    int // offset of the IP header
	l4    int // offset of the UDP header
	bth   int // offset of the BTH
	pay   int // offset of the payload after BTH (and DETH)
	padAt int // offset of the pad bytes (end of payload)
	icrc  int // offset of the ICRC; icrc+ICRCLen is the end of the UDP datagram
	ipv6  bool
}

// Decode checks and decodes an Ethernet frame carrying RoCEv2. Bytes after
// the IP packet (Ethernet padding, an FCS) are ignored. It does not verify
// the ICRC; see Packet.CheckICRC.
func Decode(frame []byte) (Packet, error) {
	var p Packet
	p.buf = frame
	p.hasL2 = true
	if len(frame) < ethHeaderLen {
		return Packet{}, fmt.Errorf("%w: %d bytes, Ethernet header needs %d", ErrTruncated, len(frame), ethHeaderLen)
	}
	off := 12
	etherType := binary.BigEndian.Uint16(frame[off:])
	for etherType == EtherTypeVLAN || etherType == EtherTypeQinQ {
		if p.nvlan == maxVLANTags {
			return Packet{}, fmt.Errorf("%w: more than %d VLAN tags", ErrMalformed, maxVLANTags)
		}
		if len(frame) < off+2+vlanTagLen {
			return Packet{}, fmt.Errorf("%w: in VLAN tag", ErrTruncated)
		}
		p.vlans[p.nvlan] = vlanTagFromTCI(etherType, binary.BigEndian.Uint16(frame[off+2:]))
		p.nvlan++
		off += vlanTagLen
		etherType = binary.BigEndian.Uint16(frame[off:])
	}
	off += 2
	switch etherType {
	case EtherTypeIPv4, EtherTypeIPv6:
	default:
		return Packet{}, fmt.Errorf("%w: EtherType %#04x", ErrNotIP, etherType)
	}
	if err := p.decodeIP(off); err != nil {
		return Packet{}, err
	}
	if (etherType == EtherTypeIPv6) != p.ipv6 {
		return Packet{}, fmt.Errorf("%w: EtherType %#04x carries an IPv%d header", ErrMalformed, etherType, p.ipVersion())
	}
	return p, nil
}

// DecodeIP is Decode for a packet that starts at the IP header (pcap
// LINKTYPE_RAW and the payload of Linux cooked captures).
func DecodeIP(packet []byte) (Packet, error) {
	p := Packet{buf: packet}
	if err := p.decodeIP(0); err != nil {
		return Packet{}, err
	}
	return p, nil
}

func (p *Packet) ipVersion() int {
	if p.ipv6 {
		return 6
	}
	return 4
}

// decodeIP checks the IP and UDP headers at off and everything after them.
func (p *Packet) decodeIP(off int) error {
	b := p.buf
	p.l3 = off
	if len(b) < off+1 {
		return fmt.Errorf("%w: no IP header", ErrTruncated)
	}
	var end int // end of the IP packet
	switch b[off] >> 4 {
	case 4:
		if len(b) < off+ipv4MinHdrLen {
			return fmt.Errorf("%w: %d bytes of IPv4 header", ErrTruncated, len(b)-off)
		}
		ihl := int(b[off]&0x0F) * 4
		if ihl < ipv4MinHdrLen {
			return fmt.Errorf("%w: IPv4 header length %d", ErrMalformed, ihl)
		}
		total := int(binary.BigEndian.Uint16(b[off+2:]))
		if total < ihl {
			return fmt.Errorf("%w: IPv4 total length %d < header length %d", ErrMalformed, total, ihl)
		}
		if len(b) < off+total {
			return fmt.Errorf("%w: IPv4 total length %d, %d bytes present", ErrTruncated, total, len(b)-off)
		}
		if frag := binary.BigEndian.Uint16(b[off+6:]); frag&0x3FFF != 0 {
			return fmt.Errorf("%w: IPv4 fragment (flags/offset %#04x)", ErrMalformed, frag)
		}
		if proto := b[off+9]; proto != ipProtoUDP {
			return fmt.Errorf("%w: IP protocol %d", ErrNotRoCEv2, proto)
		}
		p.l4 = off + ihl
		end = off + total
	case 6:
		if len(b) < off+ipv6HdrLen {
			return fmt.Errorf("%w: %d bytes of IPv6 header", ErrTruncated, len(b)-off)
		}
		// Extension headers are not followed: RoCEv2 puts UDP right after
		// the fixed header.
		if next := b[off+6]; next != ipProtoUDP {
			return fmt.Errorf("%w: IPv6 next header %d", ErrNotRoCEv2, next)
		}
		payload := int(binary.BigEndian.Uint16(b[off+4:]))
		if len(b) < off+ipv6HdrLen+payload {
			return fmt.Errorf("%w: IPv6 payload length %d, %d bytes present", ErrTruncated, payload, len(b)-off-ipv6HdrLen)
		}
		p.ipv6 = true
		p.l4 = off + ipv6HdrLen
		end = p.l4 + payload
	default:
		return fmt.Errorf("%w: IP version %d", ErrNotIP, b[off]>>4)
	}
	if end-p.l4 < udpHeaderLen {
		return fmt.Errorf("%w: %d bytes of UDP header", ErrTruncated, end-p.l4)
	}
	if dport := binary.BigEndian.Uint16(b[p.l4+2:]); dport != UDPPort {
		return fmt.Errorf("%w: UDP destination port %d", ErrNotRoCEv2, dport)
	}
	udpLen := int(binary.BigEndian.Uint16(b[p.l4+4:]))
	if udpLen < udpHeaderLen || udpLen > end-p.l4 {
		return fmt.Errorf("%w: UDP length %d with %d bytes of IP payload", ErrMalformed, udpLen, end-p.l4)
	}
	end = p.l4 + udpLen
	p.bth = p.l4 + udpHeaderLen
	if end-p.bth < BTHLen+ICRCLen {
		return fmt.Errorf("%w: UDP payload %d bytes, BTH and ICRC need %d", ErrTruncated, end-p.bth, BTHLen+ICRCLen)
	}
	p.icrc = end - ICRCLen
	p.pay = p.bth + BTHLen
	bth := p.BTH()
	if hasDETH(bth.Opcode()) {
		if p.icrc-p.pay < DETHLen {
			return fmt.Errorf("%w: no room for the DETH", ErrTruncated)
		}
		p.pay += DETHLen
	}
	pad := int(bth.PadCount())
	if p.icrc-p.pay < pad {
		return fmt.Errorf("%w: pad count %d with %d payload bytes", ErrMalformed, pad, p.icrc-p.pay)
	}
	p.padAt = p.icrc - pad
	return nil
}

// Bytes returns the frame the Packet was decoded from.
func (p Packet) Bytes() []byte { return p.buf }

// HasEthernet reports whether the packet was decoded from an Ethernet frame.
func (p Packet) HasEthernet() bool { return p.hasL2 }

// DstMAC returns the Ethernet destination (zero without Ethernet).
func (p Packet) DstMAC() (m MAC) {
	if p.hasL2 {
		copy(m[:], p.buf[0:6])
	}
	return m
}

// SrcMAC returns the Ethernet source (zero without Ethernet).
func (p Packet) SrcMAC() (m MAC) {
	if p.hasL2 {
		copy(m[:], p.buf[6:12])
	}
	return m
}

// VLANTags returns the VLAN tags in frame order (outermost first).
func (p Packet) VLANTags() []VLANTag {
	return append([]VLANTag(nil), p.vlans[:p.nvlan]...)
}

// IsIPv6 reports whether the packet is IPv6.
func (p Packet) IsIPv6() bool { return p.ipv6 }

// IPHeader returns the IP header bytes (with IPv4 options, if any).
func (p Packet) IPHeader() []byte { return p.buf[p.l3:p.l4] }

// SrcIP returns the IP source address.
func (p Packet) SrcIP() netip.Addr {
	if p.ipv6 {
		return netip.AddrFrom16([16]byte(p.buf[p.l3+8 : p.l3+24]))
	}
	return netip.AddrFrom4([4]byte(p.buf[p.l3+12 : p.l3+16]))
}

// DstIP returns the IP destination address.
func (p Packet) DstIP() netip.Addr {
	if p.ipv6 {
		return netip.AddrFrom16([16]byte(p.buf[p.l3+24 : p.l3+40]))
	}
	return netip.AddrFrom4([4]byte(p.buf[p.l3+16 : p.l3+20]))
}

// TrafficClass returns the IPv4 TOS byte or the IPv6 traffic class (DSCP
// and ECN).
func (p Packet) TrafficClass() uint8 {
	if p.ipv6 {
		return uint8(binary.BigEndian.Uint16(p.buf[p.l3:]) >> 4)
	}
	return p.buf[p.l3+1]
}

// HopLimit returns the IPv4 TTL or the IPv6 hop limit.
func (p Packet) HopLimit() uint8 {
	if p.ipv6 {
		return p.buf[p.l3+7]
	}
	return p.buf[p.l3+8]
}

// FlowLabel returns the IPv6 flow label (0 for IPv4).
func (p Packet) FlowLabel() uint32 {
	if !p.ipv6 {
		return 0
	}
	return binary.BigEndian.Uint32(p.buf[p.l3:]) & 0xFFFFF
}

// IPv4ID returns the IPv4 identification field (0 for IPv6).
func (p Packet) IPv4ID() uint16 {
	if p.ipv6 {
		return 0
	}
	return binary.BigEndian.Uint16(p.buf[p.l3+4:])
}

// DontFragment reports the IPv4 DF flag (false for IPv6).
func (p Packet) DontFragment() bool {
	return !p.ipv6 && p.buf[p.l3+6]&0x40 != 0
}

// IPv4Checksum returns the IPv4 header checksum field and whether it is
// correct (0, true for IPv6).
func (p Packet) IPv4Checksum() (field uint16, ok bool) {
	if p.ipv6 {
		return 0, true
	}
	h := p.buf[p.l3:p.l4]
	return binary.BigEndian.Uint16(h[10:]), ipv4HeaderSum(h) == 0xFFFF
}

// UDPSrcPort returns the UDP source port (RoCEv2 uses it for entropy).
func (p Packet) UDPSrcPort() uint16 { return binary.BigEndian.Uint16(p.buf[p.l4:]) }

// UDPChecksum returns the UDP checksum field (RoCEv2 senders put 0).
func (p Packet) UDPChecksum() uint16 { return binary.BigEndian.Uint16(p.buf[p.l4+6:]) }

// BTH returns the Base Transport Header.
func (p Packet) BTH() BTH { return BTH(p.buf[p.bth : p.bth+BTHLen]) }

// DETH returns the Datagram Extended Transport Header, if the opcode has one.
func (p Packet) DETH() (DETH, bool) {
	if !hasDETH(p.BTH().Opcode()) {
		return nil, false
	}
	return DETH(p.buf[p.bth+BTHLen : p.bth+BTHLen+DETHLen]), true
}

// Payload returns the bytes after the transport headers, without the pad
// bytes the BTH counts and without the ICRC.
func (p Packet) Payload() []byte { return p.buf[p.pay:p.padAt] }

// ICRC returns the packet's invariant CRC (see the package comment).
func (p Packet) ICRC() uint32 { return binary.LittleEndian.Uint32(p.buf[p.icrc:]) }

// ComputeICRC computes the invariant CRC the packet should carry.
func (p Packet) ComputeICRC() uint32 {
	return computeICRC(p.buf[p.l3:p.icrc], p.l4-p.l3, p.ipv6)
}

// CheckICRC returns an error wrapping ErrBadICRC if the packet's ICRC is
// wrong.
func (p Packet) CheckICRC() error {
	if got, want := p.ICRC(), p.ComputeICRC(); got != want {
		return fmt.Errorf("%w: packet has %#08x, computed %#08x", ErrBadICRC, got, want)
	}
	return nil
}

// MAD returns the 256-byte MAD of a GSI packet: UD SEND only to QP 1 with
// the GSI Q_Key (IBTA 13.5.1). Other packets give an error wrapping
// ErrNotGSI. The ICRC is not checked here.
func (p Packet) MAD() ([]byte, error) {
	bth := p.BTH()
	if op := bth.Opcode(); op != OpcodeUDSendOnly {
		return nil, fmt.Errorf("%w: BTH opcode %#02x", ErrNotGSI, op)
	}
	if qp := bth.DestQP(); qp != GSIQP {
		return nil, fmt.Errorf("%w: destination QP %d", ErrNotGSI, qp)
	}
	deth, _ := p.DETH()
	if qkey := deth.QKey(); qkey != GSIQKey {
		return nil, fmt.Errorf("%w: Q_Key %#08x", ErrNotGSI, qkey)
	}
	pl := p.Payload()
	if len(pl) != MADLen {
		return nil, fmt.Errorf("%w: payload %d bytes, a MAD has %d", ErrNotGSI, len(pl), MADLen)
	}
	return pl, nil
}

// BTH is a view of a 12-byte Base Transport Header (IBTA 9.2).
type BTH []byte

func (b BTH) Opcode() uint8    { return b[0] }
func (b BTH) Solicited() bool  { return b[1]&0x80 != 0 }
func (b BTH) MigReq() bool     { return b[1]&0x40 != 0 }
func (b BTH) PadCount() uint8  { return b[1] >> 4 & 0x3 }
func (b BTH) TVer() uint8      { return b[1] & 0x0F }
func (b BTH) PKey() uint16     { return binary.BigEndian.Uint16(b[2:]) }
func (b BTH) FECN() bool       { return b[4]&0x80 != 0 } // A17.9.1: RoCEv2 reuses resv8a
func (b BTH) BECN() bool       { return b[4]&0x40 != 0 }
func (b BTH) DestQP() uint32   { return binary.BigEndian.Uint32(b[4:]) & maxQPN }
func (b BTH) AckReq() bool     { return b[8]&0x80 != 0 }
func (b BTH) PSN() uint32      { return binary.BigEndian.Uint32(b[8:]) & maxPSN }
func (b BTH) Reserved8a() byte { return b[4] & 0x3F }
func (b BTH) Reserved7() byte  { return b[8] & 0x7F }

// DETH is a view of an 8-byte Datagram Extended Transport Header (9.3.2).
type DETH []byte

func (d DETH) QKey() uint32  { return binary.BigEndian.Uint32(d[0:]) }
func (d DETH) SrcQP() uint32 { return binary.BigEndian.Uint32(d[4:]) & maxQPN }
