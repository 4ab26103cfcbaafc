package mad

import (
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
)

// Private-data and information field sizes in bytes (kernel enum
// ib_cm_data_size): what is left of the 232-byte data area after each
// message's fields.
const (
	REQPrivateDataSize     = 92  // REQ private data
	MRAPrivateDataSize     = 222 // MRA private data
	REJPrivateDataSize     = 148 // REJ private data
	REPPrivateDataSize     = 196 // REP private data
	RTUPrivateDataSize     = 224 // RTU private data
	DREQPrivateDataSize    = 220 // DREQ private data
	DREPPrivateDataSize    = 224 // DREP private data
	LAPPrivateDataSize     = 168 // LAP private data
	APRPrivateDataSize     = 148 // APR private data
	SIDRREQPrivateDataSize = 216 // SIDR_REQ private data
	SIDRREPPrivateDataSize = 136 // SIDR_REP private data
	REJARISize             = 72  // REJ Additional Reject Information
	APRInfoSize            = 72  // APR Additional Information
	SIDRREPInfoSize        = 72  // SIDR_REP Additional Information
)

// Path is one path of a REQ (primary or alternate) or LAP (alternate).
// Local is the sender of the message, Remote its peer.
type Path struct {
	LocalLID  uint16   // 16 bits; 0xFFFF (permissive) on routed RoCE
	RemoteLID uint16   // 16 bits
	LocalGID  rdma.GID // sender's port GID
	RemoteGID rdma.GID // peer's port GID
	// FlowLabel is 20 bits.
	FlowLabel uint32
	// PacketRate is the 6-bit IB rate enum (3 = 10 Gb/s, ...).
	PacketRate   uint8
	TrafficClass uint8 // 8 bits
	HopLimit     uint8 // 8 bits
	// SL is 4 bits.
	SL          uint8
	SubnetLocal bool // sender and peer are on one subnet
	// LocalACKTimeout is 5 bits: 4.096 µs × 2^n.
	LocalACKTimeout uint8
}

// REQ path field offsets from the start of a path (IBTA vol. 1 §12.6.5,
// table 106: primary path at data 52, alternate at data 96).
const (
	pathLocalLID             = 0  // 16 bits
	pathRemoteLID            = 2  // 16 bits
	pathLocalGID             = 4  // 128 bits
	pathRemoteGID            = 20 // 128 bits
	pathFlowLabel            = 36 // top 20 bits of the 32-bit word
	pathFlowLabelShift       = 32 - flowLabelBits
	pathPacketRate           = 39
	pathPacketRateShift      = 0
	pathPacketRateBits       = 6
	pathTrafficClass         = 40 // 8 bits
	pathHopLimit             = 41 // 8 bits
	pathSL                   = 42
	pathSLShift              = 4
	pathSLBits               = 4
	pathSubnetLocalShift     = 3 // in the pathSL byte
	pathLocalACKTimeout      = 43
	pathLocalACKTimeoutShift = 3
	pathLocalACKTimeoutBits  = timeoutBits
)

// pathFieldNames are the checked Path fields, for primary and alternate.
var pathFieldNames = [2][4]string{
	{"Primary.FlowLabel", "Primary.PacketRate", "Primary.SL", "Primary.LocalACKTimeout"},
	{"Alternate.FlowLabel", "Alternate.PacketRate", "Alternate.SL", "Alternate.LocalACKTimeout"},
}

func (p *Path) check(c *widthChecker, base int, alternate bool) {
	names := &pathFieldNames[bit(alternate)]
	c.check(names[0], base+pathFlowLabel, uint64(p.FlowLabel), flowLabelBits)
	c.check(names[1], base+pathPacketRate, uint64(p.PacketRate), pathPacketRateBits)
	c.check(names[2], base+pathSL, uint64(p.SL), pathSLBits)
	c.check(names[3], base+pathLocalACKTimeout, uint64(p.LocalACKTimeout), pathLocalACKTimeoutBits)
}

// putREQ writes p in the REQ path layout at offset o.
func (p *Path) putREQ(m *mad, o int) {
	put16(m, o+pathLocalLID, p.LocalLID)
	put16(m, o+pathRemoteLID, p.RemoteLID)
	copy(m[o+pathLocalGID:o+pathLocalGID+16], p.LocalGID[:])
	copy(m[o+pathRemoteGID:o+pathRemoteGID+16], p.RemoteGID[:])
	put32(m, o+pathFlowLabel, (p.FlowLabel&(1<<flowLabelBits-1))<<pathFlowLabelShift)
	m[o+pathPacketRate] = setBits(p.PacketRate, pathPacketRateShift, pathPacketRateBits)
	m[o+pathTrafficClass] = p.TrafficClass
	m[o+pathHopLimit] = p.HopLimit
	m[o+pathSL] = setBits(p.SL, pathSLShift, pathSLBits) | setFlag(p.SubnetLocal, pathSubnetLocalShift)
	m[o+pathLocalACKTimeout] = setBits(p.LocalACKTimeout, pathLocalACKTimeoutShift, pathLocalACKTimeoutBits)
}

// getREQ reads the REQ path layout at offset o.
func (p *Path) getREQ(m *mad, o int) {
	p.LocalLID = get16(m, o+pathLocalLID)
	p.RemoteLID = get16(m, o+pathRemoteLID)
	p.LocalGID = getGID(m, o+pathLocalGID)
	p.RemoteGID = getGID(m, o+pathRemoteGID)
	p.FlowLabel = get32(m, o+pathFlowLabel) >> pathFlowLabelShift
	p.PacketRate = getBits(m[o+pathPacketRate], pathPacketRateShift, pathPacketRateBits)
	p.TrafficClass = m[o+pathTrafficClass]
	p.HopLimit = m[o+pathHopLimit]
	p.SL = getBits(m[o+pathSL], pathSLShift, pathSLBits)
	p.SubnetLocal = getFlag(m[o+pathSL], pathSubnetLocalShift)
	p.LocalACKTimeout = getBits(m[o+pathLocalACKTimeout], pathLocalACKTimeoutShift, pathLocalACKTimeoutBits)
}

// REQ field offsets from the start of the MAD (IBTA vol. 1 §12.6.5,
// table 106; kernel CM_REQ_*). Shift counts from the least significant
// bit of the byte; Bits is the width.
const (
	reqLocalCommID                  = cmData + 0  // 32 bits
	reqVendorID                     = cmData + 5  // 24 bits (ECE)
	reqServiceID                    = cmData + 8  // 64 bits
	reqLocalCAGUID                  = cmData + 16 // 64 bits
	reqLocalQKey                    = cmData + 28 // 32 bits
	reqLocalQPN                     = cmData + 32 // 24 bits
	reqResponderResources           = cmData + 35 // 8 bits
	reqLocalEECN                    = cmData + 36 // 24 bits
	reqInitiatorDepth               = cmData + 39 // 8 bits
	reqRemoteEECN                   = cmData + 40 // 24 bits
	reqRemoteCMResponseTimeout      = cmData + 43
	reqRemoteCMResponseTimeoutShift = 3
	reqRemoteCMResponseTimeoutBits  = timeoutBits
	reqTransportServiceType         = cmData + 43
	reqTransportServiceTypeShift    = 1
	reqTransportServiceTypeBits     = 2
	reqEndToEndFlowControl          = cmData + 43
	reqEndToEndFlowControlShift     = 0
	reqStartingPSN                  = cmData + 44 // 24 bits
	reqLocalCMResponseTimeout       = cmData + 47
	reqLocalCMResponseTimeoutShift  = 3
	reqLocalCMResponseTimeoutBits   = timeoutBits
	reqRetryCount                   = cmData + 47
	reqRetryCountShift              = 0
	reqRetryCountBits               = 3
	reqPartitionKey                 = cmData + 48 // 16 bits
	reqPathMTU                      = cmData + 50
	reqPathMTUShift                 = 4
	reqPathMTUBits                  = 4
	reqRDCExists                    = cmData + 50
	reqRDCExistsShift               = 3
	reqRNRRetryCount                = cmData + 50
	reqRNRRetryCountShift           = 0
	reqRNRRetryCountBits            = 3
	reqMaxCMRetries                 = cmData + 51
	reqMaxCMRetriesShift            = 4
	reqMaxCMRetriesBits             = 4
	reqSRQ                          = cmData + 51
	reqSRQShift                     = 3
	reqExtendedTransportType        = cmData + 51
	reqExtendedTransportTypeShift   = 0
	reqExtendedTransportTypeBits    = 3
	reqPrimaryPath                  = cmData + 52  // 44-byte path
	reqAlternatePath                = cmData + 96  // 44-byte path
	reqSAPSupported                 = cmData + 139 // shares the alternate LocalACKTimeout byte
	reqSAPSupportedShift            = 2
	reqPrivateData                  = cmData + 140 // REQPrivateDataSize bytes
)

// REQ is a ConnectRequest (IBTA §12.6.5, table 106). Field widths and
// meanings are those of the REQView accessors of the same names.
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
	PathMTU                 rdma.MTU // 4 bits
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
	wide := (m.VendorID|m.LocalQPN|m.LocalEECN|m.RemoteEECN|m.StartingPSN)>>uint24Bits |
		(m.Primary.FlowLabel|m.Alternate.FlowLabel)>>flowLabelBits |
		uint32(m.RemoteCMResponseTimeout|m.LocalCMResponseTimeout|m.Primary.LocalACKTimeout|m.Alternate.LocalACKTimeout)>>timeoutBits |
		uint32(m.Primary.PacketRate|m.Alternate.PacketRate)>>pathPacketRateBits |
		uint32(byte(m.PathMTU)|m.MaxCMRetries|m.Primary.SL|m.Alternate.SL)>>reqPathMTUBits | // all 4 bits
		uint32(m.RetryCount|m.RNRRetryCount|byte(m.ExtendedTransportType))>>reqRetryCountBits | // all 3 bits
		uint32(m.TransportServiceType)>>reqTransportServiceTypeBits
	if wide == 0 && m.TransportServiceType != TransportExtended {
		return nil
	}
	c := widthChecker{attr: AttrREQ}
	c.check("VendorID", reqVendorID, uint64(m.VendorID), uint24Bits)
	c.check("LocalQPN", reqLocalQPN, uint64(m.LocalQPN), uint24Bits)
	c.check("LocalEECN", reqLocalEECN, uint64(m.LocalEECN), uint24Bits)
	c.check("RemoteEECN", reqRemoteEECN, uint64(m.RemoteEECN), uint24Bits)
	c.check("RemoteCMResponseTimeout", reqRemoteCMResponseTimeout, uint64(m.RemoteCMResponseTimeout), reqRemoteCMResponseTimeoutBits)
	c.check("TransportServiceType", reqTransportServiceType, uint64(m.TransportServiceType), reqTransportServiceTypeBits)
	c.check("StartingPSN", reqStartingPSN, uint64(m.StartingPSN), uint24Bits)
	c.check("LocalCMResponseTimeout", reqLocalCMResponseTimeout, uint64(m.LocalCMResponseTimeout), reqLocalCMResponseTimeoutBits)
	c.check("RetryCount", reqRetryCount, uint64(m.RetryCount), reqRetryCountBits)
	c.check("PathMTU", reqPathMTU, uint64(m.PathMTU), reqPathMTUBits)
	c.check("RNRRetryCount", reqRNRRetryCount, uint64(m.RNRRetryCount), reqRNRRetryCountBits)
	c.check("MaxCMRetries", reqMaxCMRetries, uint64(m.MaxCMRetries), reqMaxCMRetriesBits)
	c.check("ExtendedTransportType", reqExtendedTransportType, uint64(m.ExtendedTransportType), reqExtendedTransportTypeBits)
	m.Primary.check(&c, reqPrimaryPath, false)
	m.Alternate.check(&c, reqAlternatePath, true)
	if c.err == nil {
		c.err = checkTransport(m.TransportServiceType, m.ExtendedTransportType)
	}
	return c.err
}

// checkTransport refuses TST 3 unless the extended type is XRC.
func checkTransport(t TransportServiceType, x ExtendedTransportType) error {
	if t == TransportExtended && x != ExtendedTransportXRC {
		return &FieldError{Attr: AttrREQ, Field: "ExtendedTransportType", Offset: reqExtendedTransportType, Value: uint64(x), Err: ErrReservedTransport}
	}
	return nil
}

func (m *REQ) put(p *mad) {
	clear(p[HeaderSize:reqPrivateData]) // private data is copied whole below
	m.Header.put(p, AttrREQ, MethodSend)
	put32(p, reqLocalCommID, m.LocalCommID)
	put24(p, reqVendorID, m.VendorID)
	put64(p, reqServiceID, m.ServiceID)
	put64(p, reqLocalCAGUID, m.LocalCAGUID)
	put32(p, reqLocalQKey, m.LocalQKey)
	put24(p, reqLocalQPN, m.LocalQPN)
	p[reqResponderResources] = m.ResponderResources
	put24(p, reqLocalEECN, m.LocalEECN)
	p[reqInitiatorDepth] = m.InitiatorDepth
	put24(p, reqRemoteEECN, m.RemoteEECN)
	p[reqRemoteCMResponseTimeout] |= setBits(m.RemoteCMResponseTimeout, reqRemoteCMResponseTimeoutShift, reqRemoteCMResponseTimeoutBits)
	p[reqTransportServiceType] |= setBits(byte(m.TransportServiceType), reqTransportServiceTypeShift, reqTransportServiceTypeBits)
	p[reqEndToEndFlowControl] |= setFlag(m.EndToEndFlowControl, reqEndToEndFlowControlShift)
	put24(p, reqStartingPSN, m.StartingPSN)
	p[reqLocalCMResponseTimeout] |= setBits(m.LocalCMResponseTimeout, reqLocalCMResponseTimeoutShift, reqLocalCMResponseTimeoutBits)
	p[reqRetryCount] |= setBits(m.RetryCount, reqRetryCountShift, reqRetryCountBits)
	put16(p, reqPartitionKey, m.PartitionKey)
	p[reqPathMTU] |= setBits(byte(m.PathMTU), reqPathMTUShift, reqPathMTUBits)
	p[reqRDCExists] |= setFlag(m.RDCExists, reqRDCExistsShift)
	p[reqRNRRetryCount] |= setBits(m.RNRRetryCount, reqRNRRetryCountShift, reqRNRRetryCountBits)
	p[reqMaxCMRetries] |= setBits(m.MaxCMRetries, reqMaxCMRetriesShift, reqMaxCMRetriesBits)
	p[reqSRQ] |= setFlag(m.SRQ, reqSRQShift)
	p[reqExtendedTransportType] |= setBits(byte(m.ExtendedTransportType), reqExtendedTransportTypeShift, reqExtendedTransportTypeBits)
	m.Primary.putREQ(p, reqPrimaryPath)
	m.Alternate.putREQ(p, reqAlternatePath)
	p[reqSAPSupported] |= setFlag(m.SAPSupported, reqSAPSupportedShift)
	copy(p[reqPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrREQ.
func (v REQView) AttributeID() AttributeID { return AttrREQ }

// Header returns a view of the MAD common header.
func (v REQView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v REQView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v REQView) LocalCommID() uint32 { return get32(v.p, reqLocalCommID) }

// VendorID is the 24-bit ECE vendor ID at data 5..7.
func (v REQView) VendorID() uint32 { return get24(v.p, reqVendorID) }

// ECE returns the vendor ID and the AttributeModifier options, as the
// kernel's cm_format_req_event reads them.
func (v REQView) ECE() ece.ECE {
	return ece.ECE{VendorID: v.VendorID(), Options: v.Header().AttributeModifier()}
}

// ServiceID is the 64-bit ServiceID the REQ connects to.
func (v REQView) ServiceID() uint64 { return get64(v.p, reqServiceID) }

// LocalCAGUID is the sender's 64-bit CA GUID.
func (v REQView) LocalCAGUID() uint64 { return get64(v.p, reqLocalCAGUID) }

// LocalQKey is the 32-bit Local Q_Key (UD/RD only; Linux sends 0).
func (v REQView) LocalQKey() uint32 { return get32(v.p, reqLocalQKey) }

// LocalQPN is the sender's 24-bit QP number.
func (v REQView) LocalQPN() uint32 { return get24(v.p, reqLocalQPN) }

// ResponderResources is the 8-bit count of incoming RDMA reads and
// atomics the sender accepts.
func (v REQView) ResponderResources() uint8 { return v.p[reqResponderResources] }

// LocalEECN is the sender's 24-bit EE context number (RD only).
func (v REQView) LocalEECN() uint32 { return get24(v.p, reqLocalEECN) }

// InitiatorDepth is the 8-bit count of outstanding RDMA reads and
// atomics the sender issues.
func (v REQView) InitiatorDepth() uint8 { return v.p[reqInitiatorDepth] }

// RemoteEECN is the 24-bit EE context number of the peer (RD only).
func (v REQView) RemoteEECN() uint32 { return get24(v.p, reqRemoteEECN) }

// RemoteCMResponseTimeout is the 5-bit Remote CM Response Timeout, how
// long the sender waits for a reply: 4.096 µs × 2^n.
func (v REQView) RemoteCMResponseTimeout() uint8 {
	return getBits(v.p[reqRemoteCMResponseTimeout], reqRemoteCMResponseTimeoutShift, reqRemoteCMResponseTimeoutBits)
}

// TransportServiceType is the 2-bit transport: RC, UC, RD or extended.
func (v REQView) TransportServiceType() TransportServiceType {
	return TransportServiceType(getBits(v.p[reqTransportServiceType], reqTransportServiceTypeShift, reqTransportServiceTypeBits))
}

// EndToEndFlowControl is the 1-bit End-to-End Flow Control flag.
func (v REQView) EndToEndFlowControl() bool {
	return getFlag(v.p[reqEndToEndFlowControl], reqEndToEndFlowControlShift)
}

// StartingPSN is the sender's 24-bit starting packet sequence number.
func (v REQView) StartingPSN() uint32 { return get24(v.p, reqStartingPSN) }

// LocalCMResponseTimeout is the 5-bit Local CM Response Timeout, how
// long the sender takes to answer: 4.096 µs × 2^n.
func (v REQView) LocalCMResponseTimeout() uint8 {
	return getBits(v.p[reqLocalCMResponseTimeout], reqLocalCMResponseTimeoutShift, reqLocalCMResponseTimeoutBits)
}

// RetryCount is the 3-bit transport retry count.
func (v REQView) RetryCount() uint8 {
	return getBits(v.p[reqRetryCount], reqRetryCountShift, reqRetryCountBits)
}

// PartitionKey is the 16-bit P_Key.
func (v REQView) PartitionKey() uint16 { return get16(v.p, reqPartitionKey) }

// PathMTU is the 4-bit Path Packet Payload MTU enum.
func (v REQView) PathMTU() rdma.MTU {
	return rdma.MTU(getBits(v.p[reqPathMTU], reqPathMTUShift, reqPathMTUBits))
}

// RDCExists is the 1-bit RDC Exists flag (RD only).
func (v REQView) RDCExists() bool { return getFlag(v.p[reqRDCExists], reqRDCExistsShift) }

// RNRRetryCount is the 3-bit RNR NAK retry count; 7 means infinite.
func (v REQView) RNRRetryCount() uint8 {
	return getBits(v.p[reqRNRRetryCount], reqRNRRetryCountShift, reqRNRRetryCountBits)
}

// MaxCMRetries is the 4-bit number of times the sender resends the REQ.
func (v REQView) MaxCMRetries() uint8 {
	return getBits(v.p[reqMaxCMRetries], reqMaxCMRetriesShift, reqMaxCMRetriesBits)
}

// SRQ is the 1-bit flag: the sender's QP uses a shared receive queue.
func (v REQView) SRQ() bool { return getFlag(v.p[reqSRQ], reqSRQShift) }

// ExtendedTransportType is the 3-bit extended transport type; XRC (1)
// when TransportServiceType is TransportExtended.
func (v REQView) ExtendedTransportType() ExtendedTransportType {
	return ExtendedTransportType(getBits(v.p[reqExtendedTransportType], reqExtendedTransportTypeShift, reqExtendedTransportTypeBits))
}

// Primary returns the primary path (data 52..95).
func (v REQView) Primary() (p Path) { p.getREQ(v.p, reqPrimaryPath); return }

// Alternate returns the alternate path (data 96..139).
func (v REQView) Alternate() (p Path) { p.getREQ(v.p, reqAlternatePath); return }

// HasAlternate reports whether an alternate path is present (kernel
// cm_req_has_alt_path: alternate local LID non-zero).
func (v REQView) HasAlternate() bool { return get16(v.p, reqAlternatePath+pathLocalLID) != 0 }

// SAPSupported is the 1-bit SAP Supported flag (Linux sends 0).
func (v REQView) SAPSupported() bool { return getFlag(v.p[reqSAPSupported], reqSAPSupportedShift) }

// PrivateData returns the 92-byte private data field (not a copy).
func (v REQView) PrivateData() []byte { return v.p[reqPrivateData : reqPrivateData+REQPrivateDataSize] }

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
	m.Primary.getREQ(p, reqPrimaryPath)
	m.Alternate.getREQ(p, reqAlternatePath)
	m.SAPSupported = v.SAPSupported()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *REQ holding v's fields.
func (v REQView) DecodeMessage() Message { m := new(REQ); v.Decode(m); return m }
