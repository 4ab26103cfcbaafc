package roce

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Frame describes a RoCEv2 packet to build, or one that Parse decoded.
//
// Building always writes: IPv4 with no options, a zero UDP checksum (as
// Linux rxe does; A17.3), BTH TVer from the field (0 today), zero reserved
// bits, pad bytes to a 4-byte payload multiple and the ICRC. A DETH is
// written for the UD SEND opcodes and only for them.
type Frame struct {
	DstMAC MAC
	SrcMAC MAC
	// VLAN, when non-nil, adds one 802.1Q tag (TPID 0 means 0x8100).
	VLAN *VLANTag `json:",omitempty"`

	// SrcIP and DstIP are both IPv4 or both IPv6. IPv4-mapped IPv6
	// addresses (the form of RoCEv2 GIDs for IPv4) are sent as IPv4.
	SrcIP netip.Addr
	DstIP netip.Addr
	// TrafficClass is the IPv4 TOS byte or the IPv6 traffic class.
	TrafficClass uint8
	// HopLimit is the IPv4 TTL or the IPv6 hop limit.
	HopLimit uint8
	// FlowLabel is the IPv6 flow label (20 bits); must be 0 for IPv4.
	FlowLabel uint32
	// IPv4ID and DontFragment are IPv4 header fields, ignored for IPv6.
	IPv4ID       uint16
	DontFragment bool

	// SrcPort is the UDP source port. The destination is always UDPPort.
	SrcPort uint16

	// BTH fields (IBTA 9.2).
	Opcode    uint8
	Solicited bool
	MigReq    bool
	TVer      uint8
	PKey      uint16
	FECN      bool
	BECN      bool
	DestQP    uint32
	AckReq    bool
	PSN       uint32

	// DETH fields (9.3.2), used for the UD SEND opcodes.
	QKey  uint32
	SrcQP uint32

	// Payload follows the transport headers; pad bytes are not part of it.
	Payload []byte
}

// GSIFrame returns a Frame carrying mad from the GSI (QP 1) to the GSI, as
// Linux sends CM MADs on RoCE: UD SEND only, P_Key 0xFFFF, Q_Key
// 0x80010000, source and destination QP 1, hop limit 64, DF set. The
// caller fills the addresses and may change anything else.
func GSIFrame(mad []byte) Frame {
	return Frame{
		HopLimit:     64,
		DontFragment: true,
		Opcode:       OpcodeUDSendOnly,
		PKey:         DefaultPKey,
		DestQP:       GSIQP,
		QKey:         GSIQKey,
		SrcQP:        GSIQP,
		Payload:      mad,
	}
}

// validate checks everything AppendTo would otherwise have to reject.
func (f *Frame) validate() (src, dst netip.Addr, err error) {
	src, dst = f.SrcIP.Unmap(), f.DstIP.Unmap()
	switch {
	case !src.IsValid() || !dst.IsValid():
		return src, dst, fmt.Errorf("%w: source or destination IP address missing", ErrInvalidFrame)
	case src.Is4() != dst.Is4():
		return src, dst, fmt.Errorf("%w: mixed IPv4 and IPv6 addresses %v, %v", ErrInvalidFrame, src, dst)
	case src.Is4() && f.FlowLabel != 0:
		return src, dst, fmt.Errorf("%w: flow label %#x on IPv4", ErrInvalidFrame, f.FlowLabel)
	case f.FlowLabel > 0xFFFFF:
		return src, dst, fmt.Errorf("%w: flow label %#x does not fit 20 bits", ErrInvalidFrame, f.FlowLabel)
	case f.TVer > 0x0F:
		return src, dst, fmt.Errorf("%w: TVer %d does not fit 4 bits", ErrInvalidFrame, f.TVer)
	case f.DestQP > maxQPN || f.SrcQP > maxQPN:
		return src, dst, fmt.Errorf("%w: QPN does not fit 24 bits", ErrInvalidFrame)
	case f.PSN > maxPSN:
		return src, dst, fmt.Errorf("%w: PSN %#x does not fit 24 bits", ErrInvalidFrame, f.PSN)
	case !hasDETH(f.Opcode) && (f.QKey != 0 || f.SrcQP != 0):
		return src, dst, fmt.Errorf("%w: Q_Key or source QP set for opcode %#02x, which has no DETH", ErrInvalidFrame, f.Opcode)
	case f.VLAN != nil && (f.VLAN.ID > 0x0FFF || f.VLAN.Priority > 7):
		return src, dst, fmt.Errorf("%w: VLAN ID %d or priority %d out of range", ErrInvalidFrame, f.VLAN.ID, f.VLAN.Priority)
	case f.VLAN != nil && f.VLAN.TPID != 0 && f.VLAN.TPID != EtherTypeVLAN && f.VLAN.TPID != EtherTypeQinQ:
		return src, dst, fmt.Errorf("%w: VLAN TPID %#04x", ErrInvalidFrame, f.VLAN.TPID)
	}
	maxUDP := 0xFFFF // the IPv6 payload length excludes the header
	if src.Is4() {
		maxUDP -= ipv4MinHdrLen
	}
	if f.udpLen() > maxUDP {
		return src, dst, fmt.Errorf("%w: payload of %d bytes is too long", ErrInvalidFrame, len(f.Payload))
	}
	return src, dst, nil
}

func (f *Frame) padCount() int { return -len(f.Payload) & 3 }

func (f *Frame) udpLen() int {
	n := udpHeaderLen + BTHLen + len(f.Payload) + f.padCount() + ICRCLen
	if hasDETH(f.Opcode) {
		n += DETHLen
	}
	return n
}

// Marshal encodes the frame.
func (f Frame) Marshal() ([]byte, error) { return f.AppendTo(nil) }

// AppendTo appends the encoded frame to b. On error b is returned unchanged.
func (f Frame) AppendTo(b []byte) ([]byte, error) {
	src, dst, err := f.validate()
	if err != nil {
		return b, err
	}
	b = append(b, f.DstMAC[:]...)
	b = append(b, f.SrcMAC[:]...)
	if f.VLAN != nil {
		tpid := f.VLAN.TPID
		if tpid == 0 {
			tpid = EtherTypeVLAN
		}
		b = binary.BigEndian.AppendUint16(b, tpid)
		b = binary.BigEndian.AppendUint16(b, f.VLAN.tci())
	}
	udpLen := f.udpLen()
	l3 := len(b) + 2
	if src.Is4() {
		b = binary.BigEndian.AppendUint16(b, EtherTypeIPv4)
		var flags uint16
		if f.DontFragment {
			flags = 0x4000
		}
		b = append(b, 0x45, f.TrafficClass)
		b = binary.BigEndian.AppendUint16(b, uint16(ipv4MinHdrLen+udpLen))
		b = binary.BigEndian.AppendUint16(b, f.IPv4ID)
		b = binary.BigEndian.AppendUint16(b, flags)
		b = append(b, f.HopLimit, ipProtoUDP, 0, 0)
		s, d := src.As4(), dst.As4()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
		binary.BigEndian.PutUint16(b[l3+10:], ^ipv4HeaderSum(b[l3:]))
	} else {
		b = binary.BigEndian.AppendUint16(b, EtherTypeIPv6)
		b = binary.BigEndian.AppendUint32(b, 6<<28|uint32(f.TrafficClass)<<20|f.FlowLabel)
		b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
		b = append(b, ipProtoUDP, f.HopLimit)
		s, d := src.As16(), dst.As16()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	}
	l4 := len(b)
	b = binary.BigEndian.AppendUint16(b, f.SrcPort)
	b = binary.BigEndian.AppendUint16(b, UDPPort)
	b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
	b = binary.BigEndian.AppendUint16(b, 0)

	flags := uint8(f.padCount())<<4 | f.TVer
	if f.Solicited {
		flags |= 0x80
	}
	if f.MigReq {
		flags |= 0x40
	}
	b = append(b, f.Opcode, flags)
	b = binary.BigEndian.AppendUint16(b, f.PKey)
	var congestion uint32
	if f.FECN {
		congestion |= 0x80 << 24
	}
	if f.BECN {
		congestion |= 0x40 << 24
	}
	b = binary.BigEndian.AppendUint32(b, congestion|f.DestQP)
	psn := f.PSN
	if f.AckReq {
		psn |= 0x80 << 24
	}
	b = binary.BigEndian.AppendUint32(b, psn)
	if hasDETH(f.Opcode) {
		b = binary.BigEndian.AppendUint32(b, f.QKey)
		b = binary.BigEndian.AppendUint32(b, f.SrcQP)
	}
	b = append(b, f.Payload...)
	b = append(b, make([]byte, f.padCount())...)
	icrc := computeICRC(b[l3:], l4-l3, !src.Is4())
	b = binary.LittleEndian.AppendUint32(b, icrc)
	return b, nil
}

// Parse decodes an Ethernet frame, verifies its ICRC and returns it as a
// Frame whose Payload is a copy.
func Parse(frame []byte) (Frame, error) {
	p, err := Decode(frame)
	if err != nil {
		return Frame{}, err
	}
	if err := p.CheckICRC(); err != nil {
		return Frame{}, err
	}
	return p.Frame(), nil
}

// Frame copies the packet's fields into a Frame. Encoding that Frame gives
// the same bytes back when the packet used no IPv4 options, more than one
// VLAN tag, a UDP checksum, reserved bits or extra pad bytes.
func (p Packet) Frame() Frame {
	bth := p.BTH()
	f := Frame{
		DstMAC:       p.DstMAC(),
		SrcMAC:       p.SrcMAC(),
		SrcIP:        p.SrcIP(),
		DstIP:        p.DstIP(),
		TrafficClass: p.TrafficClass(),
		HopLimit:     p.HopLimit(),
		FlowLabel:    p.FlowLabel(),
		IPv4ID:       p.IPv4ID(),
		DontFragment: p.DontFragment(),
		SrcPort:      p.UDPSrcPort(),
		Opcode:       bth.Opcode(),
		Solicited:    bth.Solicited(),
		MigReq:       bth.MigReq(),
		TVer:         bth.TVer(),
		PKey:         bth.PKey(),
		FECN:         bth.FECN(),
		BECN:         bth.BECN(),
		DestQP:       bth.DestQP(),
		AckReq:       bth.AckReq(),
		PSN:          bth.PSN(),
		Payload:      append([]byte(nil), p.Payload()...),
	}
	if p.nvlan > 0 {
		t := p.vlans[p.nvlan-1]
		f.VLAN = &t
	}
	if deth, ok := p.DETH(); ok {
		f.QKey = deth.QKey()
		f.SrcQP = deth.SrcQP()
	}
	return f
}

// ipv4HeaderSum returns the ones'-complement sum of an IPv4 header (0xFFFF
// for a header with a correct checksum; RFC 1071).
func ipv4HeaderSum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return uint16(sum)
}
