package mad

// LAP is a LoadAlternatePath (IBTA 12.8.1, table 115). Linux refuses LAP
// on RoCE ports; it is here for completeness and traces.
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
	c.check("RemoteQPNEECN", cmData+12, uint64(m.RemoteQPNEECN), 24)
	c.check("RemoteCMResponseTimeout", cmData+15, uint64(m.RemoteCMResponseTimeout), 5)
	a := &m.Alternate
	c.check("Alternate.FlowLabel", cmData+56, uint64(a.FlowLabel), 20)
	c.check("Alternate.PacketRate", cmData+61, uint64(a.PacketRate), 6)
	c.check("Alternate.SL", cmData+62, uint64(a.SL), 4)
	c.check("Alternate.LocalACKTimeout", cmData+63, uint64(a.LocalACKTimeout), 5)
	return c.err
}

// LAP's path layout differs from REQ's: flow label at data 56 (20 bits),
// traffic class 59, hop limit 60, packet rate 61, SL/subnet local 62,
// local ACK timeout 63.
func (m *LAP) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrLAP, MethodSend)
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	put24(p, cmData+12, m.RemoteQPNEECN)
	p[cmData+15] = (m.RemoteCMResponseTimeout & 0x1f) << 3
	a := &m.Alternate
	put16(p, cmData+20, a.LocalLID)
	put16(p, cmData+22, a.RemoteLID)
	copy(p[cmData+24:cmData+40], a.LocalGID[:])
	copy(p[cmData+40:cmData+56], a.RemoteGID[:])
	put32(p, cmData+56, (a.FlowLabel&0xfffff)<<12|uint32(a.TrafficClass))
	p[cmData+60] = a.HopLimit
	p[cmData+61] = a.PacketRate & 0x3f
	p[cmData+62] = (a.SL&0xf)<<4 | bit(a.SubnetLocal)<<3
	p[cmData+63] = (a.LocalACKTimeout & 0x1f) << 3
	copy(p[cmData+64:], m.PrivateData[:])
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

func (v LAPView) AttributeID() AttributeID { return AttrLAP }
func (v LAPView) Header() HeaderView       { return headerOf(v.p) }
func (v LAPView) Bytes() []byte            { return v.p[:] }
func (v LAPView) LocalCommID() uint32      { return get32(v.p, cmData+0) }
func (v LAPView) RemoteCommID() uint32     { return get32(v.p, cmData+4) }
func (v LAPView) RemoteQPNEECN() uint32    { return get24(v.p, cmData+12) }
func (v LAPView) RemoteCMResponseTimeout() uint8 {
	return v.p[cmData+15] >> 3
}

// Alternate returns the alternate path (data 20..63).
func (v LAPView) Alternate() Path {
	p := v.p
	return Path{
		LocalLID:        get16(p, cmData+20),
		RemoteLID:       get16(p, cmData+22),
		LocalGID:        getGID(p, cmData+24),
		RemoteGID:       getGID(p, cmData+40),
		FlowLabel:       get32(p, cmData+56) >> 12,
		TrafficClass:    p[cmData+59],
		HopLimit:        p[cmData+60],
		PacketRate:      p[cmData+61] & 0x3f,
		SL:              p[cmData+62] >> 4,
		SubnetLocal:     p[cmData+62]&0x08 != 0,
		LocalACKTimeout: p[cmData+63] >> 3,
	}
}

// PrivateData returns the 168-byte private data field (not a copy).
func (v LAPView) PrivateData() []byte { return v.p[cmData+64:] }

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

// APR is an AlternatePathResponse (table 116).
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
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	put32(p, cmData+8, uint32(m.InfoLength)<<24|uint32(m.Status)<<16)
	copy(p[cmData+12:], m.Info[:])
	copy(p[cmData+84:], m.PrivateData[:])
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

func (v APRView) AttributeID() AttributeID { return AttrAPR }
func (v APRView) Header() HeaderView       { return headerOf(v.p) }
func (v APRView) Bytes() []byte            { return v.p[:] }
func (v APRView) LocalCommID() uint32      { return get32(v.p, cmData+0) }
func (v APRView) RemoteCommID() uint32     { return get32(v.p, cmData+4) }
func (v APRView) InfoLength() uint8        { return v.p[cmData+8] }
func (v APRView) Status() APRStatus        { return APRStatus(v.p[cmData+9]) }

// Info returns the first InfoLength bytes of the information field, at
// most 72.
func (v APRView) Info() []byte {
	return v.p[cmData+12 : cmData+12+min(int(v.InfoLength()), APRInfoSize)]
}

// InfoField returns the whole 72-byte information field.
func (v APRView) InfoField() []byte { return v.p[cmData+12 : cmData+12+APRInfoSize] }

// PrivateData returns the 148-byte private data field (not a copy).
func (v APRView) PrivateData() []byte { return v.p[cmData+84:] }

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
