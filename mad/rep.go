package mad

import "github.com/go-rdma/rdmacm/ece"

// REP is a ConnectReply (IBTA 12.6.8, table 110).
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
	c.check("LocalQPN", cmData+12, uint64(m.LocalQPN), 24)
	c.check("VendorID", cmData+15, uint64(m.VendorID), 24)
	c.check("LocalEECN", cmData+16, uint64(m.LocalEECN), 24)
	c.check("StartingPSN", cmData+20, uint64(m.StartingPSN), 24)
	c.check("TargetACKDelay", cmData+26, uint64(m.TargetACKDelay), 5)
	c.check("FailoverAccepted", cmData+26, uint64(m.FailoverAccepted), 2)
	c.check("RNRRetryCount", cmData+27, uint64(m.RNRRetryCount), 3)
	return c.err
}

func (m *REP) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrREP, MethodSend)
	h, mid, l := ece.SplitREP(m.VendorID)
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	put32(p, cmData+8, m.LocalQKey)
	put24(p, cmData+12, m.LocalQPN)
	p[cmData+15] = h
	put24(p, cmData+16, m.LocalEECN)
	p[cmData+19] = mid
	put24(p, cmData+20, m.StartingPSN)
	p[cmData+23] = l
	p[cmData+24] = m.ResponderResources
	p[cmData+25] = m.InitiatorDepth
	p[cmData+26] = (m.TargetACKDelay&0x1f)<<3 | byte(m.FailoverAccepted&3)<<1 | bit(m.EndToEndFlowControl)
	p[cmData+27] = (m.RNRRetryCount&7)<<5 | bit(m.SRQ)<<4
	put64(p, cmData+28, m.LocalCAGUID)
	copy(p[cmData+36:], m.PrivateData[:])
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

func (v REPView) AttributeID() AttributeID { return AttrREP }
func (v REPView) Header() HeaderView       { return headerOf(v.p) }
func (v REPView) Bytes() []byte            { return v.p[:] }
func (v REPView) LocalCommID() uint32      { return get32(v.p, cmData+0) }
func (v REPView) RemoteCommID() uint32     { return get32(v.p, cmData+4) }
func (v REPView) LocalQKey() uint32        { return get32(v.p, cmData+8) }
func (v REPView) LocalQPN() uint32         { return get24(v.p, cmData+12) }
func (v REPView) LocalEECN() uint32        { return get24(v.p, cmData+16) }
func (v REPView) StartingPSN() uint32      { return get24(v.p, cmData+20) }

// VendorID joins the three vendor bytes as cm_format_rep_event does.
func (v REPView) VendorID() uint32 {
	return ece.JoinREP(v.p[cmData+15], v.p[cmData+19], v.p[cmData+23])
}

// ECE returns the vendor ID and the AttributeModifier options.
func (v REPView) ECE() ece.ECE {
	return ece.ECE{VendorID: v.VendorID(), Options: get32(v.p, 20)}
}
func (v REPView) ResponderResources() uint8 { return v.p[cmData+24] }
func (v REPView) InitiatorDepth() uint8     { return v.p[cmData+25] }
func (v REPView) TargetACKDelay() uint8     { return v.p[cmData+26] >> 3 }
func (v REPView) FailoverAccepted() Failover {
	return Failover(v.p[cmData+26] >> 1 & 3)
}
func (v REPView) EndToEndFlowControl() bool { return v.p[cmData+26]&1 != 0 }
func (v REPView) RNRRetryCount() uint8      { return v.p[cmData+27] >> 5 }
func (v REPView) SRQ() bool                 { return v.p[cmData+27]&0x10 != 0 }
func (v REPView) LocalCAGUID() uint64       { return get64(v.p, cmData+28) }

// PrivateData returns the 196-byte private data field (not a copy).
func (v REPView) PrivateData() []byte { return v.p[cmData+36 : cmData+36+REPPrivateDataSize] }

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
