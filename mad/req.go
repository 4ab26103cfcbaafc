package mad

import "github.com/go-rdma/rdmacm/ece"

// Private-data and information field sizes (kernel enum ib_cm_data_size).
const (
	REQPrivateDataSize     = 92
	MRAPrivateDataSize     = 222
	REJPrivateDataSize     = 148
	REPPrivateDataSize     = 196
	RTUPrivateDataSize     = 224
	DREQPrivateDataSize    = 220
	DREPPrivateDataSize    = 224
	LAPPrivateDataSize     = 168
	APRPrivateDataSize     = 148
	SIDRREQPrivateDataSize = 216
	SIDRREPPrivateDataSize = 136
	REJARISize             = 72
	APRInfoSize            = 72
	SIDRREPInfoSize        = 72
)

// Path is one path of a REQ (primary or alternate) or LAP (alternate).
// Local is the sender of the message, Remote its peer.
type Path struct {
	LocalLID  uint16
	RemoteLID uint16
	LocalGID  GID
	RemoteGID GID
	// FlowLabel is 20 bits.
	FlowLabel uint32
	// PacketRate is the 6-bit IB rate enum (3 = 10 Gb/s, ...).
	PacketRate   uint8
	TrafficClass uint8
	HopLimit     uint8
	// SL is 4 bits.
	SL          uint8
	SubnetLocal bool
	// LocalACKTimeout is 5 bits: 4.096 µs × 2^n.
	LocalACKTimeout uint8
}

// pathFieldNames are the checked Path fields, for primary and alternate.
var pathFieldNames = [2][4]string{
	{"Primary.FlowLabel", "Primary.PacketRate", "Primary.SL", "Primary.LocalACKTimeout"},
	{"Alternate.FlowLabel", "Alternate.PacketRate", "Alternate.SL", "Alternate.LocalACKTimeout"},
}

func (p *Path) check(c *widthChecker, base int, alternate bool) {
	names := &pathFieldNames[bit(alternate)]
	c.check(names[0], base+36, uint64(p.FlowLabel), 20)
	c.check(names[1], base+39, uint64(p.PacketRate), 6)
	c.check(names[2], base+42, uint64(p.SL), 4)
	c.check(names[3], base+43, uint64(p.LocalACKTimeout), 5)
}

// REQ path layout (table 106, data 52 primary / 96 alternate):
// +0 LIDs, +4 GIDs, +36 flow label (20 bits) and packet rate (low 6
// bits of +39), +40 TC, +41 hop limit, +42 SL/subnet local,
// +43 local ACK timeout.
func (p *Path) putREQ(m *mad, o int) {
	put16(m, o, p.LocalLID)
	put16(m, o+2, p.RemoteLID)
	copy(m[o+4:o+20], p.LocalGID[:])
	copy(m[o+20:o+36], p.RemoteGID[:])
	put32(m, o+36, (p.FlowLabel&0xfffff)<<12|uint32(p.PacketRate&0x3f))
	m[o+40] = p.TrafficClass
	m[o+41] = p.HopLimit
	m[o+42] = (p.SL&0xf)<<4 | bit(p.SubnetLocal)<<3
	m[o+43] = (p.LocalACKTimeout & 0x1f) << 3
}

func (p *Path) getREQ(m *mad, o int) {
	p.LocalLID = get16(m, o)
	p.RemoteLID = get16(m, o+2)
	p.LocalGID = getGID(m, o+4)
	p.RemoteGID = getGID(m, o+20)
	p.FlowLabel = get32(m, o+36) >> 12
	p.PacketRate = m[o+39] & 0x3f
	p.TrafficClass = m[o+40]
	p.HopLimit = m[o+41]
	p.SL = m[o+42] >> 4
	p.SubnetLocal = m[o+42]&0x08 != 0
	p.LocalACKTimeout = m[o+43] >> 3
}

// REQ is a ConnectRequest (IBTA 12.6.5, table 106).
type REQ struct {
	Header
	LocalCommID uint32
	// VendorID is the 24-bit ECE vendor ID (data bytes 5..7); the ECE
	// options travel in Header.AttributeModifier.
	VendorID                uint32
	ServiceID               uint64
	LocalCAGUID             uint64
	LocalQKey               uint32
	LocalQPN                uint32 // 24 bits
	ResponderResources      uint8
	LocalEECN               uint32 // 24 bits
	InitiatorDepth          uint8
	RemoteEECN              uint32 // 24 bits
	RemoteCMResponseTimeout uint8  // 5 bits
	TransportServiceType    TransportServiceType
	EndToEndFlowControl     bool
	StartingPSN             uint32 // 24 bits
	LocalCMResponseTimeout  uint8  // 5 bits
	RetryCount              uint8  // 3 bits
	PartitionKey            uint16
	PathMTU                 MTU // 4 bits
	RDCExists               bool
	RNRRetryCount           uint8 // 3 bits
	MaxCMRetries            uint8 // 4 bits
	SRQ                     bool
	ExtendedTransportType   ExtendedTransportType // 3 bits
	Primary                 Path
	// Alternate is present when Alternate.LocalLID != 0 (kernel
	// cm_req_has_alt_path, for IB).
	Alternate    Path
	SAPSupported bool
	PrivateData  [REQPrivateDataSize]byte
}

// ECE returns the ECE the REQ carries.
func (m *REQ) ECE() ece.ECE { return ece.ECE{VendorID: m.VendorID, Options: m.AttributeModifier} }

// SetECE places e as cm_format_req does: vendor in data 5..7, options in
// the AttributeModifier. A vendor wider than 24 bits fails at encode.
func (m *REQ) SetECE(e ece.ECE) { m.VendorID, m.AttributeModifier = e.VendorID, e.Options }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *REQ) SetPrivateData(p []byte) error {
	return setPrivate(m.PrivateData[:], p, AttrREQ)
}

// AttributeID returns AttrREQ.
func (m *REQ) AttributeID() AttributeID { return AttrREQ }

func (m *REQ) check() error {
	// Fast path: one test for every narrow field.
	wide := (m.VendorID|m.LocalQPN|m.LocalEECN|m.RemoteEECN|m.StartingPSN)>>24 |
		(m.Primary.FlowLabel|m.Alternate.FlowLabel)>>20 |
		uint32(m.RemoteCMResponseTimeout|m.LocalCMResponseTimeout|m.Primary.LocalACKTimeout|m.Alternate.LocalACKTimeout)>>5 |
		uint32(m.Primary.PacketRate|m.Alternate.PacketRate)>>6 |
		uint32(byte(m.PathMTU)|m.MaxCMRetries|m.Primary.SL|m.Alternate.SL)>>4 |
		uint32(m.RetryCount|m.RNRRetryCount|byte(m.ExtendedTransportType))>>3 |
		uint32(m.TransportServiceType)>>2
	if wide == 0 && m.TransportServiceType != TransportExtended {
		return nil
	}
	c := widthChecker{attr: AttrREQ}
	c.check("VendorID", cmData+5, uint64(m.VendorID), 24)
	c.check("LocalQPN", cmData+32, uint64(m.LocalQPN), 24)
	c.check("LocalEECN", cmData+36, uint64(m.LocalEECN), 24)
	c.check("RemoteEECN", cmData+40, uint64(m.RemoteEECN), 24)
	c.check("RemoteCMResponseTimeout", cmData+43, uint64(m.RemoteCMResponseTimeout), 5)
	c.check("TransportServiceType", cmData+43, uint64(m.TransportServiceType), 2)
	c.check("StartingPSN", cmData+44, uint64(m.StartingPSN), 24)
	c.check("LocalCMResponseTimeout", cmData+47, uint64(m.LocalCMResponseTimeout), 5)
	c.check("RetryCount", cmData+47, uint64(m.RetryCount), 3)
	c.check("PathMTU", cmData+50, uint64(m.PathMTU), 4)
	c.check("RNRRetryCount", cmData+50, uint64(m.RNRRetryCount), 3)
	c.check("MaxCMRetries", cmData+51, uint64(m.MaxCMRetries), 4)
	c.check("ExtendedTransportType", cmData+51, uint64(m.ExtendedTransportType), 3)
	m.Primary.check(&c, cmData+52, false)
	m.Alternate.check(&c, cmData+96, true)
	if c.err == nil {
		c.err = checkTransport(m.TransportServiceType, m.ExtendedTransportType)
	}
	return c.err
}

// checkTransport refuses TST 3 unless the extended type is XRC.
func checkTransport(t TransportServiceType, x ExtendedTransportType) error {
	if t == TransportExtended && x != ExtendedTransportXRC {
		return &FieldError{Attr: AttrREQ, Field: "ExtendedTransportType", Offset: cmData + 51, Value: uint64(x), Err: ErrReservedTransport}
	}
	return nil
}

func (m *REQ) put(p *mad) {
	clear(p[HeaderSize : cmData+140]) // private data is copied whole below
	m.Header.put(p, AttrREQ, MethodSend)
	put32(p, cmData+0, m.LocalCommID)
	put24(p, cmData+5, m.VendorID)
	put64(p, cmData+8, m.ServiceID)
	put64(p, cmData+16, m.LocalCAGUID)
	put32(p, cmData+28, m.LocalQKey)
	put24(p, cmData+32, m.LocalQPN)
	p[cmData+35] = m.ResponderResources
	put24(p, cmData+36, m.LocalEECN)
	p[cmData+39] = m.InitiatorDepth
	put24(p, cmData+40, m.RemoteEECN)
	p[cmData+43] = (m.RemoteCMResponseTimeout&0x1f)<<3 | byte(m.TransportServiceType&3)<<1 | bit(m.EndToEndFlowControl)
	put24(p, cmData+44, m.StartingPSN)
	p[cmData+47] = (m.LocalCMResponseTimeout&0x1f)<<3 | m.RetryCount&7
	put16(p, cmData+48, m.PartitionKey)
	p[cmData+50] = byte(m.PathMTU&0xf)<<4 | bit(m.RDCExists)<<3 | m.RNRRetryCount&7
	p[cmData+51] = (m.MaxCMRetries&0xf)<<4 | bit(m.SRQ)<<3 | byte(m.ExtendedTransportType&7)
	m.Primary.putREQ(p, cmData+52)
	m.Alternate.putREQ(p, cmData+96)
	p[cmData+139] |= bit(m.SAPSupported) << 2
	copy(p[cmData+140:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *REQ) MarshalTo(b []byte) (int, error) {
	if err := m.check(); err != nil {
		return 0, err
	}
	p, err := outBuf(b, AttrREQ)
	if err != nil {
		return 0, err
	}
	m.put(p)
	return MADSize, nil
}

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *REQ) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseREQ) and decodes it into m.
func (m *REQ) UnmarshalMAD(b []byte) error {
	v, err := ParseREQ(b)
	if err != nil {
		return err
	}
	v.Decode(m)
	return nil
}

// REQView reads a validated REQ in place.
type REQView struct{ p *mad }

// ParseREQ validates b as a REQ (see Parse) and returns a view of it.
func ParseREQ(b []byte) (REQView, error) {
	p, err := parseAs(b, AttrREQ)
	return REQView{p}, err
}

func (v REQView) AttributeID() AttributeID { return AttrREQ }
func (v REQView) Header() HeaderView       { return headerOf(v.p) }
func (v REQView) Bytes() []byte            { return v.p[:] }
func (v REQView) LocalCommID() uint32      { return get32(v.p, cmData+0) }

// VendorID is the 24-bit ECE vendor ID at data 5..7.
func (v REQView) VendorID() uint32 { return get24(v.p, cmData+5) }

// ECE returns the vendor ID and the AttributeModifier options, as the
// kernel's cm_format_req_event reads them.
func (v REQView) ECE() ece.ECE {
	return ece.ECE{VendorID: v.VendorID(), Options: get32(v.p, 20)}
}
func (v REQView) ServiceID() uint64         { return get64(v.p, cmData+8) }
func (v REQView) LocalCAGUID() uint64       { return get64(v.p, cmData+16) }
func (v REQView) LocalQKey() uint32         { return get32(v.p, cmData+28) }
func (v REQView) LocalQPN() uint32          { return get24(v.p, cmData+32) }
func (v REQView) ResponderResources() uint8 { return v.p[cmData+35] }
func (v REQView) LocalEECN() uint32         { return get24(v.p, cmData+36) }
func (v REQView) InitiatorDepth() uint8     { return v.p[cmData+39] }
func (v REQView) RemoteEECN() uint32        { return get24(v.p, cmData+40) }
func (v REQView) RemoteCMResponseTimeout() uint8 {
	return v.p[cmData+43] >> 3
}
func (v REQView) TransportServiceType() TransportServiceType {
	return TransportServiceType(v.p[cmData+43] >> 1 & 3)
}
func (v REQView) EndToEndFlowControl() bool     { return v.p[cmData+43]&1 != 0 }
func (v REQView) StartingPSN() uint32           { return get24(v.p, cmData+44) }
func (v REQView) LocalCMResponseTimeout() uint8 { return v.p[cmData+47] >> 3 }
func (v REQView) RetryCount() uint8             { return v.p[cmData+47] & 7 }
func (v REQView) PartitionKey() uint16          { return get16(v.p, cmData+48) }
func (v REQView) PathMTU() MTU                  { return MTU(v.p[cmData+50] >> 4) }
func (v REQView) RDCExists() bool               { return v.p[cmData+50]&0x08 != 0 }
func (v REQView) RNRRetryCount() uint8          { return v.p[cmData+50] & 7 }
func (v REQView) MaxCMRetries() uint8           { return v.p[cmData+51] >> 4 }
func (v REQView) SRQ() bool                     { return v.p[cmData+51]&0x08 != 0 }
func (v REQView) ExtendedTransportType() ExtendedTransportType {
	return ExtendedTransportType(v.p[cmData+51] & 7)
}

// Primary returns the primary path (data 52..95).
func (v REQView) Primary() (p Path) { p.getREQ(v.p, cmData+52); return }

// Alternate returns the alternate path (data 96..139).
func (v REQView) Alternate() (p Path) { p.getREQ(v.p, cmData+96); return }

// HasAlternate reports whether an alternate path is present (kernel
// cm_req_has_alt_path: alternate local LID non-zero).
func (v REQView) HasAlternate() bool { return get16(v.p, cmData+96) != 0 }
func (v REQView) SAPSupported() bool { return v.p[cmData+139]&0x04 != 0 }

// PrivateData returns the 92-byte private data field (not a copy).
func (v REQView) PrivateData() []byte { return v.p[cmData+140 : cmData+140+REQPrivateDataSize] }

// Decode copies every field into m without allocating.
func (v REQView) Decode(m *REQ) {
	p := v.p
	m.Header.get(p)
	m.LocalCommID = v.LocalCommID()
	m.VendorID = v.VendorID()
	m.ServiceID = v.ServiceID()
	m.LocalCAGUID = v.LocalCAGUID()
	m.LocalQKey = v.LocalQKey()
	m.LocalQPN = v.LocalQPN()
	m.ResponderResources = v.ResponderResources()
	m.LocalEECN = v.LocalEECN()
	m.InitiatorDepth = v.InitiatorDepth()
	m.RemoteEECN = v.RemoteEECN()
	m.RemoteCMResponseTimeout = v.RemoteCMResponseTimeout()
	m.TransportServiceType = v.TransportServiceType()
	m.EndToEndFlowControl = v.EndToEndFlowControl()
	m.StartingPSN = v.StartingPSN()
	m.LocalCMResponseTimeout = v.LocalCMResponseTimeout()
	m.RetryCount = v.RetryCount()
	m.PartitionKey = v.PartitionKey()
	m.PathMTU = v.PathMTU()
	m.RDCExists = v.RDCExists()
	m.RNRRetryCount = v.RNRRetryCount()
	m.MaxCMRetries = v.MaxCMRetries()
	m.SRQ = v.SRQ()
	m.ExtendedTransportType = v.ExtendedTransportType()
	m.Primary.getREQ(p, cmData+52)
	m.Alternate.getREQ(p, cmData+96)
	m.SAPSupported = v.SAPSupported()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *REQ holding v's fields.
func (v REQView) DecodeMessage() Message { m := new(REQ); v.Decode(m); return m }
