package mad

// This file holds the short connection messages: MRA, REJ, RTU, DREQ
// and DREP (IBTA 12.6.6, 12.6.7, 12.6.9, 12.6.10, 12.6.11).

// MRA is a MessageReceiptAcknowledgement (table 107).
type MRA struct {
	Header
	LocalCommID  uint32
	RemoteCommID uint32
	MessageMRAed MRAedMessage // 2 bits; 3 is refused
	// ServiceTimeout is 5 bits: 4.096 µs × 2^n.
	ServiceTimeout uint8
	PrivateData    [MRAPrivateDataSize]byte
}

// AttributeID returns AttrMRA.
func (m *MRA) AttributeID() AttributeID { return AttrMRA }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *MRA) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrMRA) }

func (m *MRA) check() error {
	c := widthChecker{attr: AttrMRA}
	if m.MessageMRAed > MRAedOther {
		c.fail("MessageMRAed", cmData+8, uint64(m.MessageMRAed), ErrReservedValue)
	}
	c.check("ServiceTimeout", cmData+9, uint64(m.ServiceTimeout), 5)
	return c.err
}

func (m *MRA) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrMRA, MethodSend)
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	p[cmData+8] = byte(m.MessageMRAed&3) << 6
	p[cmData+9] = (m.ServiceTimeout & 0x1f) << 3
	copy(p[cmData+10:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *MRA) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, m.check) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *MRA) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseMRA) and decodes it into m.
func (m *MRA) UnmarshalMAD(b []byte) error {
	v, err := ParseMRA(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// MRAView reads a validated MRA in place.
type MRAView struct{ p *mad }

// ParseMRA validates b as an MRA and returns a view of it.
func ParseMRA(b []byte) (MRAView, error) { p, err := parseAs(b, AttrMRA); return MRAView{p}, err }

func (v MRAView) AttributeID() AttributeID   { return AttrMRA }
func (v MRAView) Header() HeaderView         { return headerOf(v.p) }
func (v MRAView) Bytes() []byte              { return v.p[:] }
func (v MRAView) LocalCommID() uint32        { return get32(v.p, cmData+0) }
func (v MRAView) RemoteCommID() uint32       { return get32(v.p, cmData+4) }
func (v MRAView) MessageMRAed() MRAedMessage { return MRAedMessage(v.p[cmData+8] >> 6) }
func (v MRAView) ServiceTimeout() uint8      { return v.p[cmData+9] >> 3 }

// PrivateData returns the 222-byte private data field (not a copy).
func (v MRAView) PrivateData() []byte { return v.p[cmData+10 : cmData+10+MRAPrivateDataSize] }

// Decode copies every field into m without allocating.
func (v MRAView) Decode(m *MRA) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	m.MessageMRAed = v.MessageMRAed()
	m.ServiceTimeout = v.ServiceTimeout()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *MRA holding v's fields.
func (v MRAView) DecodeMessage() Message { m := new(MRA); v.Decode(m); return m }

// REJ is a ConnectReject (table 108). It carries no ECE; reason 35
// (RejectVendorOptionNotSupported) reports an ECE mismatch.
type REJ struct {
	Header
	// LocalCommID is 0 when Linux rejects a REQ it has not answered yet.
	LocalCommID     uint32
	RemoteCommID    uint32
	MessageRejected RejectedMessage // 2 bits
	// ARILength is the 7-bit RejectedInfoLength. Values above 72 are
	// kept as received; ARI() clamps.
	ARILength   uint8
	Reason      RejectReason
	ARI         [REJARISize]byte
	PrivateData [REJPrivateDataSize]byte
}

// AttributeID returns AttrREJ.
func (m *REJ) AttributeID() AttributeID { return AttrREJ }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *REJ) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrREJ) }

// SetARI copies ari into ARI, zeroes the rest and sets ARILength.
func (m *REJ) SetARI(ari []byte) error {
	n, err := setInfo(m.ARI[:], ari, AttrREJ)
	if err == nil {
		m.ARILength = n
	}
	return err
}

func (m *REJ) check() error {
	c := widthChecker{attr: AttrREJ}
	c.check("MessageRejected", cmData+8, uint64(m.MessageRejected), 2)
	c.check("ARILength", cmData+9, uint64(m.ARILength), 7)
	return c.err
}

func (m *REJ) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrREJ, MethodSend)
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	p[cmData+8] = byte(m.MessageRejected&3) << 6
	p[cmData+9] = (m.ARILength & 0x7f) << 1
	put16(p, cmData+10, uint16(m.Reason))
	copy(p[cmData+12:], m.ARI[:])
	copy(p[cmData+84:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *REJ) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, m.check) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *REJ) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseREJ) and decodes it into m.
func (m *REJ) UnmarshalMAD(b []byte) error {
	v, err := ParseREJ(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// REJView reads a validated REJ in place.
type REJView struct{ p *mad }

// ParseREJ validates b as a REJ and returns a view of it.
func ParseREJ(b []byte) (REJView, error) { p, err := parseAs(b, AttrREJ); return REJView{p}, err }

func (v REJView) AttributeID() AttributeID { return AttrREJ }
func (v REJView) Header() HeaderView       { return headerOf(v.p) }
func (v REJView) Bytes() []byte            { return v.p[:] }
func (v REJView) LocalCommID() uint32      { return get32(v.p, cmData+0) }
func (v REJView) RemoteCommID() uint32     { return get32(v.p, cmData+4) }
func (v REJView) MessageRejected() RejectedMessage {
	return RejectedMessage(v.p[cmData+8] >> 6)
}

// ARILength is the 7-bit RejectedInfoLength as sent.
func (v REJView) ARILength() uint8     { return v.p[cmData+9] >> 1 }
func (v REJView) Reason() RejectReason { return RejectReason(get16(v.p, cmData+10)) }

// ARI returns the first ARILength bytes of the ARI field, at most 72.
func (v REJView) ARI() []byte {
	return v.p[cmData+12 : cmData+12+min(int(v.ARILength()), REJARISize)]
}

// ARIField returns the whole 72-byte ARI field.
func (v REJView) ARIField() []byte { return v.p[cmData+12 : cmData+12+REJARISize] }

// PrivateData returns the 148-byte private data field (not a copy).
func (v REJView) PrivateData() []byte { return v.p[cmData+84 : cmData+84+REJPrivateDataSize] }

// Decode copies every field into m without allocating.
func (v REJView) Decode(m *REJ) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	m.MessageRejected = v.MessageRejected()
	m.ARILength = v.ARILength()
	m.Reason = v.Reason()
	copy(m.ARI[:], v.ARIField())
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *REJ holding v's fields.
func (v REJView) DecodeMessage() Message { m := new(REJ); v.Decode(m); return m }

// RTU is a ReadyToUse (table 111).
type RTU struct {
	Header
	LocalCommID  uint32
	RemoteCommID uint32
	PrivateData  [RTUPrivateDataSize]byte
}

// AttributeID returns AttrRTU.
func (m *RTU) AttributeID() AttributeID { return AttrRTU }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *RTU) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrRTU) }

func (m *RTU) put(p *mad) {
	m.Header.put(p, AttrRTU, MethodSend)
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	copy(p[cmData+8:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *RTU) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, nil) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *RTU) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseRTU) and decodes it into m.
func (m *RTU) UnmarshalMAD(b []byte) error {
	v, err := ParseRTU(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// RTUView reads a validated RTU in place.
type RTUView struct{ p *mad }

// ParseRTU validates b as an RTU and returns a view of it.
func ParseRTU(b []byte) (RTUView, error) { p, err := parseAs(b, AttrRTU); return RTUView{p}, err }

func (v RTUView) AttributeID() AttributeID { return AttrRTU }
func (v RTUView) Header() HeaderView       { return headerOf(v.p) }
func (v RTUView) Bytes() []byte            { return v.p[:] }
func (v RTUView) LocalCommID() uint32      { return get32(v.p, cmData+0) }
func (v RTUView) RemoteCommID() uint32     { return get32(v.p, cmData+4) }

// PrivateData returns the 224-byte private data field (not a copy).
func (v RTUView) PrivateData() []byte { return v.p[cmData+8:] }

// Decode copies every field into m without allocating.
func (v RTUView) Decode(m *RTU) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *RTU holding v's fields.
func (v RTUView) DecodeMessage() Message { m := new(RTU); v.Decode(m); return m }

// DREQ is a DisconnectRequest (table 112).
type DREQ struct {
	Header
	LocalCommID  uint32
	RemoteCommID uint32
	// RemoteQPNEECN is 24 bits; Linux ignores a DREQ whose value is
	// not its local QPN.
	RemoteQPNEECN uint32
	PrivateData   [DREQPrivateDataSize]byte
}

// AttributeID returns AttrDREQ.
func (m *DREQ) AttributeID() AttributeID { return AttrDREQ }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *DREQ) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrDREQ) }

func (m *DREQ) check() error {
	c := widthChecker{attr: AttrDREQ}
	c.check("RemoteQPNEECN", cmData+8, uint64(m.RemoteQPNEECN), 24)
	return c.err
}

func (m *DREQ) put(p *mad) {
	m.Header.put(p, AttrDREQ, MethodSend)
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	put32(p, cmData+8, m.RemoteQPNEECN<<8)
	copy(p[cmData+12:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *DREQ) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, m.check) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *DREQ) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseDREQ) and decodes it into m.
func (m *DREQ) UnmarshalMAD(b []byte) error {
	v, err := ParseDREQ(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// DREQView reads a validated DREQ in place.
type DREQView struct{ p *mad }

// ParseDREQ validates b as a DREQ and returns a view of it.
func ParseDREQ(b []byte) (DREQView, error) { p, err := parseAs(b, AttrDREQ); return DREQView{p}, err }

func (v DREQView) AttributeID() AttributeID { return AttrDREQ }
func (v DREQView) Header() HeaderView       { return headerOf(v.p) }
func (v DREQView) Bytes() []byte            { return v.p[:] }
func (v DREQView) LocalCommID() uint32      { return get32(v.p, cmData+0) }
func (v DREQView) RemoteCommID() uint32     { return get32(v.p, cmData+4) }
func (v DREQView) RemoteQPNEECN() uint32    { return get24(v.p, cmData+8) }

// PrivateData returns the 220-byte private data field (not a copy).
func (v DREQView) PrivateData() []byte { return v.p[cmData+12:] }

// Decode copies every field into m without allocating.
func (v DREQView) Decode(m *DREQ) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	m.RemoteQPNEECN = v.RemoteQPNEECN()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *DREQ holding v's fields.
func (v DREQView) DecodeMessage() Message { m := new(DREQ); v.Decode(m); return m }

// DREP is a DisconnectReply (table 113).
type DREP struct {
	Header
	LocalCommID  uint32
	RemoteCommID uint32
	PrivateData  [DREPPrivateDataSize]byte
}

// AttributeID returns AttrDREP.
func (m *DREP) AttributeID() AttributeID { return AttrDREP }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *DREP) SetPrivateData(p []byte) error { return setPrivate(m.PrivateData[:], p, AttrDREP) }

func (m *DREP) put(p *mad) {
	m.Header.put(p, AttrDREP, MethodSend)
	put32(p, cmData+0, m.LocalCommID)
	put32(p, cmData+4, m.RemoteCommID)
	copy(p[cmData+8:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *DREP) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, nil) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *DREP) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseDREP) and decodes it into m.
func (m *DREP) UnmarshalMAD(b []byte) error {
	v, err := ParseDREP(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// DREPView reads a validated DREP in place.
type DREPView struct{ p *mad }

// ParseDREP validates b as a DREP and returns a view of it.
func ParseDREP(b []byte) (DREPView, error) { p, err := parseAs(b, AttrDREP); return DREPView{p}, err }

func (v DREPView) AttributeID() AttributeID { return AttrDREP }
func (v DREPView) Header() HeaderView       { return headerOf(v.p) }
func (v DREPView) Bytes() []byte            { return v.p[:] }
func (v DREPView) LocalCommID() uint32      { return get32(v.p, cmData+0) }
func (v DREPView) RemoteCommID() uint32     { return get32(v.p, cmData+4) }

// PrivateData returns the 224-byte private data field (not a copy).
func (v DREPView) PrivateData() []byte { return v.p[cmData+8:] }

// Decode copies every field into m without allocating.
func (v DREPView) Decode(m *DREP) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *DREP holding v's fields.
func (v DREPView) DecodeMessage() Message { m := new(DREP); v.Decode(m); return m }
