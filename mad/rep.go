package mad

import "github.com/go-rdma/rdmacm/ece"

// REP field offsets from the start of the MAD (IBTA vol. 1 §12.6.8,
// table 110; kernel CM_REP_*). Shift counts from the least significant
// bit of the byte; Bits is the width.
const (
	repLocalCommID              = cmData + 0  // 32 bits
	repRemoteCommID             = cmData + 4  // 32 bits
	repLocalQKey                = cmData + 8  // 32 bits
	repLocalQPN                 = cmData + 12 // 24 bits
	repVendorIDHigh             = cmData + 15 // ECE vendor bits 23:16
	repLocalEECN                = cmData + 16 // 24 bits
	repVendorIDMid              = cmData + 19 // ECE vendor bits 15:8
	repStartingPSN              = cmData + 20 // 24 bits
	repVendorIDLow              = cmData + 23 // ECE vendor bits 7:0
	repResponderResources       = cmData + 24 // 8 bits
	repInitiatorDepth           = cmData + 25 // 8 bits
	repTargetACKDelay           = cmData + 26
	repTargetACKDelayShift      = 3
	repTargetACKDelayBits       = timeoutBits
	repFailoverAccepted         = cmData + 26
	repFailoverAcceptedShift    = 1
	repFailoverAcceptedBits     = 2
	repEndToEndFlowControl      = cmData + 26
	repEndToEndFlowControlShift = 0
	repRNRRetryCount            = cmData + 27
	repRNRRetryCountShift       = 5
	repRNRRetryCountBits        = 3
	repSRQ                      = cmData + 27
	repSRQShift                 = 4
	repLocalCAGUID              = cmData + 28 // 64 bits
	repPrivateData              = cmData + 36 // REPPrivateDataSize bytes
)

// REP is a ConnectReply (IBTA §12.6.8, table 110). Field widths and
// meanings are those of the REPView accessors of the same names.
type REP struct {
	Header
	LocalCommID  uint32
	RemoteCommID uint32
	LocalQKey    uint32
	LocalQPN     uint32 // 24 bits
	// LocalEECN is 24 bits; for XRC Linux puts the target QPN here.
	LocalEECN   uint32
	StartingPSN uint32 // 24 bits
	// VendorID is the 24-bit ECE vendor ID, split on the wire into data
	// bytes 15 (bits 23:16), 19 (15:8) and 23 (7:0); the options travel
	// in Header.AttributeModifier.
	VendorID            uint32
	ResponderResources  uint8
	InitiatorDepth      uint8
	TargetACKDelay      uint8 // 5 bits
	FailoverAccepted    Failover
	EndToEndFlowControl bool
	RNRRetryCount       uint8 // 3 bits
	SRQ                 bool
	LocalCAGUID         uint64
	PrivateData         [REPPrivateDataSize]byte
}

// ECE returns the ECE the REP carries.
func (m *REP) ECE() ece.ECE { return ece.ECE{VendorID: m.VendorID, Options: m.AttributeModifier} }

// SetECE places e as cm_format_rep does.
func (m *REP) SetECE(e ece.ECE) { m.VendorID, m.AttributeModifier = e.VendorID, e.Options }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *REP) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrREP) }

// AttributeID returns AttrREP.
func (m *REP) AttributeID() AttributeID { return AttrREP }

func (m *REP) check() error {
	c := widthChecker{attr: AttrREP}
	c.check("LocalQPN", repLocalQPN, uint64(m.LocalQPN), uint24Bits)
	c.check("VendorID", repVendorIDHigh, uint64(m.VendorID), uint24Bits)
	c.check("LocalEECN", repLocalEECN, uint64(m.LocalEECN), uint24Bits)
	c.check("StartingPSN", repStartingPSN, uint64(m.StartingPSN), uint24Bits)
	c.check("TargetACKDelay", repTargetACKDelay, uint64(m.TargetACKDelay), repTargetACKDelayBits)
	c.check("FailoverAccepted", repFailoverAccepted, uint64(m.FailoverAccepted), repFailoverAcceptedBits)
	c.check("RNRRetryCount", repRNRRetryCount, uint64(m.RNRRetryCount), repRNRRetryCountBits)
	return c.err
}

func (m *REP) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrREP, MethodSend)
	h, mid, l := ece.SplitREP(m.VendorID)
	put32(p, repLocalCommID, m.LocalCommID)
	put32(p, repRemoteCommID, m.RemoteCommID)
	put32(p, repLocalQKey, m.LocalQKey)
	put24(p, repLocalQPN, m.LocalQPN)
	p[repVendorIDHigh] = h
	put24(p, repLocalEECN, m.LocalEECN)
	p[repVendorIDMid] = mid
	put24(p, repStartingPSN, m.StartingPSN)
	p[repVendorIDLow] = l
	p[repResponderResources] = m.ResponderResources
	p[repInitiatorDepth] = m.InitiatorDepth
	p[repTargetACKDelay] |= setBits(m.TargetACKDelay, repTargetACKDelayShift, repTargetACKDelayBits)
	p[repFailoverAccepted] |= setBits(byte(m.FailoverAccepted), repFailoverAcceptedShift, repFailoverAcceptedBits)
	p[repEndToEndFlowControl] |= setFlag(m.EndToEndFlowControl, repEndToEndFlowControlShift)
	p[repRNRRetryCount] |= setBits(m.RNRRetryCount, repRNRRetryCountShift, repRNRRetryCountBits)
	p[repSRQ] |= setFlag(m.SRQ, repSRQShift)
	put64(p, repLocalCAGUID, m.LocalCAGUID)
	copy(p[repPrivateData:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *REP) MarshalTo(b []byte) (int, error) {
	if err := m.check(); err != nil {
		return 0, err
	}
	p, err := outBuf(b, AttrREP)
	if err != nil {
		return 0, err
	}
	m.put(p)
	return MADSize, nil
}

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *REP) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseREP) and decodes it into m.
func (m *REP) UnmarshalMAD(b []byte) error {
	v, err := ParseREP(b)
	if err != nil {
		return err
	}
	v.Decode(m)
	return nil
}

// REPView reads a validated REP in place.
type REPView struct{ p *mad }

// ParseREP validates b as a REP (see Parse) and returns a view of it.
func ParseREP(b []byte) (REPView, error) {
	p, err := parseAs(b, AttrREP)
	return REPView{p}, err
}

// AttributeID returns AttrREP.
func (v REPView) AttributeID() AttributeID { return AttrREP }

// Header returns a view of the MAD common header.
func (v REPView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v REPView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v REPView) LocalCommID() uint32 { return get32(v.p, repLocalCommID) }

// RemoteCommID is the 32-bit Local Communication ID of the REQ's sender.
func (v REPView) RemoteCommID() uint32 { return get32(v.p, repRemoteCommID) }

// LocalQKey is the 32-bit Local Q_Key (RD only; Linux sends 0).
func (v REPView) LocalQKey() uint32 { return get32(v.p, repLocalQKey) }

// LocalQPN is the sender's 24-bit QP number.
func (v REPView) LocalQPN() uint32 { return get24(v.p, repLocalQPN) }

// LocalEECN is the 24-bit Local EE Context Number; for XRC Linux puts
// the target QPN here.
func (v REPView) LocalEECN() uint32 { return get24(v.p, repLocalEECN) }

// StartingPSN is the sender's 24-bit starting packet sequence number.
func (v REPView) StartingPSN() uint32 { return get24(v.p, repStartingPSN) }

// VendorID joins the three vendor bytes as cm_format_rep_event does.
func (v REPView) VendorID() uint32 {
	return ece.JoinREP(v.p[repVendorIDHigh], v.p[repVendorIDMid], v.p[repVendorIDLow])
}

// ECE returns the vendor ID and the AttributeModifier options.
func (v REPView) ECE() ece.ECE {
	return ece.ECE{VendorID: v.VendorID(), Options: v.Header().AttributeModifier()}
}

// ResponderResources is the 8-bit count of incoming RDMA reads and
// atomics the sender accepts.
func (v REPView) ResponderResources() uint8 { return v.p[repResponderResources] }

// InitiatorDepth is the 8-bit count of outstanding RDMA reads and
// atomics the sender issues.
func (v REPView) InitiatorDepth() uint8 { return v.p[repInitiatorDepth] }

// TargetACKDelay is the 5-bit Target ACK Delay of the sender's CA:
// 4.096 µs × 2^n.
func (v REPView) TargetACKDelay() uint8 {
	return getBits(v.p[repTargetACKDelay], repTargetACKDelayShift, repTargetACKDelayBits)
}

// FailoverAccepted is the 2-bit answer to the REQ's alternate path.
func (v REPView) FailoverAccepted() Failover {
	return Failover(getBits(v.p[repFailoverAccepted], repFailoverAcceptedShift, repFailoverAcceptedBits))
}

// EndToEndFlowControl is the 1-bit End-to-End Flow Control flag.
func (v REPView) EndToEndFlowControl() bool {
	return getFlag(v.p[repEndToEndFlowControl], repEndToEndFlowControlShift)
}

// RNRRetryCount is the 3-bit RNR NAK retry count; 7 means infinite.
func (v REPView) RNRRetryCount() uint8 {
	return getBits(v.p[repRNRRetryCount], repRNRRetryCountShift, repRNRRetryCountBits)
}

// SRQ is the 1-bit flag: the sender's QP uses a shared receive queue.
func (v REPView) SRQ() bool { return getFlag(v.p[repSRQ], repSRQShift) }

// LocalCAGUID is the sender's 64-bit CA GUID.
func (v REPView) LocalCAGUID() uint64 { return get64(v.p, repLocalCAGUID) }

// PrivateData returns the 196-byte private data field (not a copy).
func (v REPView) PrivateData() []byte { return v.p[repPrivateData : repPrivateData+REPPrivateDataSize] }

// Decode copies every field into m without allocating.
func (v REPView) Decode(m *REP) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	m.LocalQKey = v.LocalQKey()
	m.LocalQPN = v.LocalQPN()
	m.LocalEECN = v.LocalEECN()
	m.StartingPSN = v.StartingPSN()
	m.VendorID = v.VendorID()
	m.ResponderResources = v.ResponderResources()
	m.InitiatorDepth = v.InitiatorDepth()
	m.TargetACKDelay = v.TargetACKDelay()
	m.FailoverAccepted = v.FailoverAccepted()
	m.EndToEndFlowControl = v.EndToEndFlowControl()
	m.RNRRetryCount = v.RNRRetryCount()
	m.SRQ = v.SRQ()
	m.LocalCAGUID = v.LocalCAGUID()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *REP holding v's fields.
func (v REPView) DecodeMessage() Message { m := new(REP); v.Decode(m); return m }
