package mad

// LAP field offsets from the start of the MAD (IBTA vol. 1 §12.8.1,
// table 115; kernel CM_LAP_*). The alternate path has its own layout,
// unlike REQ's. Shift counts from the least significant bit of the
// byte; Bits is the width.
const (
	lapLocalCommID                  = cmData + 0  // 32 bits
	lapRemoteCommID                 = cmData + 4  // 32 bits
	lapRemoteQPNEECN                = cmData + 12 // 24 bits
	lapRemoteCMResponseTimeout      = cmData + 15
	lapRemoteCMResponseTimeoutShift = 3
	lapRemoteCMResponseTimeoutBits  = timeoutBits
	lapAltLocalLID                  = cmData + 20 // 16 bits
	lapAltRemoteLID                 = cmData + 22 // 16 bits
	lapAltLocalGID                  = cmData + 24 // 128 bits
	lapAltRemoteGID                 = cmData + 40 // 128 bits
	lapAltFlowLabel                 = cmData + 56 // top 20 bits of the 32-bit word
	lapAltFlowLabelShift            = 32 - flowLabelBits
	lapAltTrafficClass              = cmData + 59 // 8 bits
	lapAltHopLimit                  = cmData + 60 // 8 bits
	lapAltPacketRate                = cmData + 61
	lapAltPacketRateShift           = 0
	lapAltPacketRateBits            = 6
	lapAltSL                        = cmData + 62
	lapAltSLShift                   = 4
	lapAltSLBits                    = 4
	lapAltSubnetLocalShift          = 3 // in the lapAltSL byte
	lapAltLocalACKTimeout           = cmData + 63
	lapAltLocalACKTimeoutShift      = 3
	lapAltLocalACKTimeoutBits       = timeoutBits
	lapPrivateData                  = cmData + 64 // LAPPrivateDataSize bytes
)

// LAP is a LoadAlternatePath (IBTA §12.8.1, table 115). Linux refuses LAP
// on RoCE ports; it is here for completeness and traces.
// Field widths and meanings are those of the LAPView accessors
// of the same names.
type LAP struct {
	Header
	LocalCommID             uint32
	RemoteCommID            uint32
	RemoteQPNEECN           uint32 // 24 bits
	RemoteCMResponseTimeout uint8  // 5 bits
	Alternate               Path
	PrivateData             [LAPPrivateDataSize]byte
}

// AttributeID returns AttrLAP.
func (m *LAP) AttributeID() AttributeID { return AttrLAP }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *LAP) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrLAP) }

func (m *LAP) check() error {
	c := widthChecker{attr: AttrLAP}
	c.check("RemoteQPNEECN", lapRemoteQPNEECN, uint64(m.RemoteQPNEECN), uint24Bits)
	c.check("RemoteCMResponseTimeout", lapRemoteCMResponseTimeout, uint64(m.RemoteCMResponseTimeout), lapRemoteCMResponseTimeoutBits)
	a := &m.Alternate
	c.check("Alternate.FlowLabel", lapAltFlowLabel, uint64(a.FlowLabel), flowLabelBits)
	c.check("Alternate.PacketRate", lapAltPacketRate, uint64(a.PacketRate), lapAltPacketRateBits)
	c.check("Alternate.SL", lapAltSL, uint64(a.SL), lapAltSLBits)
	c.check("Alternate.LocalACKTimeout", lapAltLocalACKTimeout, uint64(a.LocalACKTimeout), lapAltLocalACKTimeoutBits)
	return c.err
}

func (m *LAP) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrLAP, MethodSend)
	put32(p, lapLocalCommID, m.LocalCommID)
	put32(p, lapRemoteCommID, m.RemoteCommID)
	put24(p, lapRemoteQPNEECN, m.RemoteQPNEECN)
	p[lapRemoteCMResponseTimeout] = setBits(m.RemoteCMResponseTimeout, lapRemoteCMResponseTimeoutShift, lapRemoteCMResponseTimeoutBits)
	a := &m.Alternate
	put16(p, lapAltLocalLID, a.LocalLID)
	put16(p, lapAltRemoteLID, a.RemoteLID)
	copy(p[lapAltLocalGID:lapAltLocalGID+16], a.LocalGID[:])
	copy(p[lapAltRemoteGID:lapAltRemoteGID+16], a.RemoteGID[:])
	put32(p, lapAltFlowLabel, (a.FlowLabel&(1<<flowLabelBits-1))<<lapAltFlowLabelShift)
	p[lapAltTrafficClass] = a.TrafficClass
	p[lapAltHopLimit] = a.HopLimit
	p[lapAltPacketRate] = setBits(a.PacketRate, lapAltPacketRateShift, lapAltPacketRateBits)
	p[lapAltSL] = setBits(a.SL, lapAltSLShift, lapAltSLBits) | setFlag(a.SubnetLocal, lapAltSubnetLocalShift)
	p[lapAltLocalACKTimeout] = setBits(a.LocalACKTimeout, lapAltLocalACKTimeoutShift, lapAltLocalACKTimeoutBits)
	copy(p[lapPrivateData:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *LAP) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, m.check) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *LAP) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseLAP) and decodes it into m.
func (m *LAP) UnmarshalMAD(b []byte) error {
	v, err := ParseLAP(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// LAPView reads a validated LAP in place.
type LAPView struct{ p *mad }

// ParseLAP validates b as a LAP and returns a view of it.
func ParseLAP(b []byte) (LAPView, error) { p, err := parseAs(b, AttrLAP); return LAPView{p}, err }

// AttributeID returns AttrLAP.
func (v LAPView) AttributeID() AttributeID { return AttrLAP }

// Header returns a view of the MAD common header.
func (v LAPView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v LAPView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v LAPView) LocalCommID() uint32 { return get32(v.p, lapLocalCommID) }

// RemoteCommID is the peer's 32-bit Local Communication ID.
func (v LAPView) RemoteCommID() uint32 { return get32(v.p, lapRemoteCommID) }

// RemoteQPNEECN is the peer's 24-bit QPN (or EECN for RD).
func (v LAPView) RemoteQPNEECN() uint32 { return get24(v.p, lapRemoteQPNEECN) }

// RemoteCMResponseTimeout is the 5-bit Remote CM Response Timeout, how
// long the sender waits for the APR: 4.096 µs × 2^n.
func (v LAPView) RemoteCMResponseTimeout() uint8 {
	return getBits(v.p[lapRemoteCMResponseTimeout], lapRemoteCMResponseTimeoutShift, lapRemoteCMResponseTimeoutBits)
}

// Alternate returns the alternate path (data 20..63).
func (v LAPView) Alternate() Path {
	p := v.p
	return Path{
		LocalLID:        get16(p, lapAltLocalLID),
		RemoteLID:       get16(p, lapAltRemoteLID),
		LocalGID:        getGID(p, lapAltLocalGID),
		RemoteGID:       getGID(p, lapAltRemoteGID),
		FlowLabel:       get32(p, lapAltFlowLabel) >> lapAltFlowLabelShift,
		TrafficClass:    p[lapAltTrafficClass],
		HopLimit:        p[lapAltHopLimit],
		PacketRate:      getBits(p[lapAltPacketRate], lapAltPacketRateShift, lapAltPacketRateBits),
		SL:              getBits(p[lapAltSL], lapAltSLShift, lapAltSLBits),
		SubnetLocal:     getFlag(p[lapAltSL], lapAltSubnetLocalShift),
		LocalACKTimeout: getBits(p[lapAltLocalACKTimeout], lapAltLocalACKTimeoutShift, lapAltLocalACKTimeoutBits),
	}
}

// PrivateData returns the 168-byte private data field (not a copy).
func (v LAPView) PrivateData() []byte { return v.p[lapPrivateData : lapPrivateData+LAPPrivateDataSize] }

// Decode copies every field into m without allocating.
func (v LAPView) Decode(m *LAP) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	m.RemoteQPNEECN = v.RemoteQPNEECN()
	m.RemoteCMResponseTimeout = v.RemoteCMResponseTimeout()
	m.Alternate = v.Alternate()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *LAP holding v's fields.
func (v LAPView) DecodeMessage() Message { m := new(LAP); v.Decode(m); return m }

// APR field offsets from the start of the MAD (IBTA vol. 1 §12.8.2,
// table 116; kernel CM_APR_*).
const (
	aprLocalCommID  = cmData + 0  // 32 bits
	aprRemoteCommID = cmData + 4  // 32 bits
	aprInfoLength   = cmData + 8  // 8 bits
	aprStatus       = cmData + 9  // 8 bits
	aprReserved     = cmData + 10 // 16 bits
	aprInfo         = cmData + 12 // APRInfoSize bytes
	aprPrivateData  = cmData + 84 // APRPrivateDataSize bytes
)

// APR is an AlternatePathResponse (IBTA §12.8.2, table 116).
// Field widths and meanings are those of the APRView accessors
// of the same names.
type APR struct {
	Header
	LocalCommID  uint32
	RemoteCommID uint32
	// InfoLength is the AdditionalInformationLength as sent; Info()
	// clamps values above 72.
	InfoLength  uint8
	Status      APRStatus
	Info        [APRInfoSize]byte
	PrivateData [APRPrivateDataSize]byte
}

// AttributeID returns AttrAPR.
func (m *APR) AttributeID() AttributeID { return AttrAPR }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *APR) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrAPR) }

// SetInfo copies info into Info, zeroes the rest and sets InfoLength.
func (m *APR) SetInfo(info []byte) error {
	n, err := setInfo(m.Info[:], info, AttrAPR)
	if err == nil {
		m.InfoLength = n
	}
	return err
}

func (m *APR) put(p *mad) {
	m.Header.put(p, AttrAPR, MethodSend)
	put32(p, aprLocalCommID, m.LocalCommID)
	put32(p, aprRemoteCommID, m.RemoteCommID)
	p[aprInfoLength] = m.InfoLength
	p[aprStatus] = byte(m.Status)
	put16(p, aprReserved, 0)
	copy(p[aprInfo:], m.Info[:])
	copy(p[aprPrivateData:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *APR) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, nil) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *APR) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseAPR) and decodes it into m.
func (m *APR) UnmarshalMAD(b []byte) error {
	v, err := ParseAPR(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// APRView reads a validated APR in place.
type APRView struct{ p *mad }

// ParseAPR validates b as an APR and returns a view of it.
func ParseAPR(b []byte) (APRView, error) { p, err := parseAs(b, AttrAPR); return APRView{p}, err }

// AttributeID returns AttrAPR.
func (v APRView) AttributeID() AttributeID { return AttrAPR }

// Header returns a view of the MAD common header.
func (v APRView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v APRView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v APRView) LocalCommID() uint32 { return get32(v.p, aprLocalCommID) }

// RemoteCommID is the 32-bit Local Communication ID of the LAP's sender.
func (v APRView) RemoteCommID() uint32 { return get32(v.p, aprRemoteCommID) }

// InfoLength is the 8-bit AdditionalInformationLength as sent.
func (v APRView) InfoLength() uint8 { return v.p[aprInfoLength] }

// Status is the 8-bit AP Status: the answer to the LAP.
func (v APRView) Status() APRStatus { return APRStatus(v.p[aprStatus]) }

// Info returns the first InfoLength bytes of the information field, at
// most 72.
func (v APRView) Info() []byte {
	return v.p[aprInfo : aprInfo+min(int(v.InfoLength()), APRInfoSize)]
}

// InfoField returns the whole 72-byte information field.
func (v APRView) InfoField() []byte { return v.p[aprInfo : aprInfo+APRInfoSize] }

// PrivateData returns the 148-byte private data field (not a copy).
func (v APRView) PrivateData() []byte { return v.p[aprPrivateData : aprPrivateData+APRPrivateDataSize] }

// Decode copies every field into m without allocating.
func (v APRView) Decode(m *APR) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	m.InfoLength = v.InfoLength()
	m.Status = v.Status()
	copy(m.Info[:], v.InfoField())
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *APR holding v's fields.
func (v APRView) DecodeMessage() Message { m := new(APR); v.Decode(m); return m }
