package mad

// This file holds the short connection messages: MRA, REJ, RTU, DREQ
// and DREP (IBTA §12.6.6, §12.6.7, §12.6.9, §12.6.10, §12.6.11).

// MRA field offsets from the start of the MAD (IBTA vol. 1 §12.6.6,
// table 107; kernel CM_MRA_*). Shift counts from the least significant
// bit of the byte; Bits is the width.
const (
	mraLocalCommID         = cmData + 0 // 32 bits
	mraRemoteCommID        = cmData + 4 // 32 bits
	mraMessageMRAed        = cmData + 8
	mraMessageMRAedShift   = 6
	mraMessageMRAedBits    = 2
	mraServiceTimeout      = cmData + 9
	mraServiceTimeoutShift = 3
	mraServiceTimeoutBits  = timeoutBits
	mraPrivateData         = cmData + 10 // MRAPrivateDataSize bytes
)

// MRA is a MessageReceiptAcknowledgement (IBTA §12.6.6, table 107).
// Field widths and meanings are those of the MRAView accessors
// of the same names.
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
		c.fail("MessageMRAed", mraMessageMRAed, uint64(m.MessageMRAed), ErrReservedValue)
	}
	c.check("ServiceTimeout", mraServiceTimeout, uint64(m.ServiceTimeout), mraServiceTimeoutBits)
	return c.err
}

func (m *MRA) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrMRA, MethodSend)
	put32(p, mraLocalCommID, m.LocalCommID)
	put32(p, mraRemoteCommID, m.RemoteCommID)
	p[mraMessageMRAed] = setBits(byte(m.MessageMRAed), mraMessageMRAedShift, mraMessageMRAedBits)
	p[mraServiceTimeout] = setBits(m.ServiceTimeout, mraServiceTimeoutShift, mraServiceTimeoutBits)
	copy(p[mraPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrMRA.
func (v MRAView) AttributeID() AttributeID { return AttrMRA }

// Header returns a view of the MAD common header.
func (v MRAView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v MRAView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v MRAView) LocalCommID() uint32 { return get32(v.p, mraLocalCommID) }

// RemoteCommID is the peer's 32-bit Local Communication ID.
func (v MRAView) RemoteCommID() uint32 { return get32(v.p, mraRemoteCommID) }

// MessageMRAed is the 2-bit kind of message acknowledged: REQ, REP or
// other (LAP).
func (v MRAView) MessageMRAed() MRAedMessage {
	return MRAedMessage(getBits(v.p[mraMessageMRAed], mraMessageMRAedShift, mraMessageMRAedBits))
}

// ServiceTimeout is the 5-bit time the sender needs before it replies:
// 4.096 µs × 2^n.
func (v MRAView) ServiceTimeout() uint8 {
	return getBits(v.p[mraServiceTimeout], mraServiceTimeoutShift, mraServiceTimeoutBits)
}

// PrivateData returns the 222-byte private data field (not a copy).
func (v MRAView) PrivateData() []byte { return v.p[mraPrivateData : mraPrivateData+MRAPrivateDataSize] }

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

// REJ field offsets from the start of the MAD (IBTA vol. 1 §12.6.7,
// table 108; kernel CM_REJ_*). Shift counts from the least significant
// bit of the byte; Bits is the width.
const (
	rejLocalCommID          = cmData + 0 // 32 bits
	rejRemoteCommID         = cmData + 4 // 32 bits
	rejMessageRejected      = cmData + 8
	rejMessageRejectedShift = 6
	rejMessageRejectedBits  = 2
	rejARILength            = cmData + 9 // RejectedInfoLength
	rejARILengthShift       = 1
	rejARILengthBits        = 7
	rejReason               = cmData + 10 // 16 bits
	rejARI                  = cmData + 12 // REJARISize bytes
	rejPrivateData          = cmData + 84 // REJPrivateDataSize bytes
)

// REJ is a ConnectReject (IBTA §12.6.7, table 108). It carries no ECE;
// reason 35 (RejectVendorOptionNotSupported) reports an ECE mismatch.
// Field widths and meanings are those of the REJView accessors of the
// same names.
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
	c.check("MessageRejected", rejMessageRejected, uint64(m.MessageRejected), rejMessageRejectedBits)
	c.check("ARILength", rejARILength, uint64(m.ARILength), rejARILengthBits)
	return c.err
}

func (m *REJ) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrREJ, MethodSend)
	put32(p, rejLocalCommID, m.LocalCommID)
	put32(p, rejRemoteCommID, m.RemoteCommID)
	p[rejMessageRejected] = setBits(byte(m.MessageRejected), rejMessageRejectedShift, rejMessageRejectedBits)
	p[rejARILength] = setBits(m.ARILength, rejARILengthShift, rejARILengthBits)
	put16(p, rejReason, uint16(m.Reason))
	copy(p[rejARI:], m.ARI[:])
	copy(p[rejPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrREJ.
func (v REJView) AttributeID() AttributeID { return AttrREJ }

// Header returns a view of the MAD common header.
func (v REJView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v REJView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID; 0 when
// Linux rejects a REQ it has not answered yet.
func (v REJView) LocalCommID() uint32 { return get32(v.p, rejLocalCommID) }

// RemoteCommID is the 32-bit Local Communication ID of the rejected
// message's sender.
func (v REJView) RemoteCommID() uint32 { return get32(v.p, rejRemoteCommID) }

// MessageRejected is the 2-bit kind of message rejected: REQ, REP or
// other.
func (v REJView) MessageRejected() RejectedMessage {
	return RejectedMessage(getBits(v.p[rejMessageRejected], rejMessageRejectedShift, rejMessageRejectedBits))
}

// ARILength is the 7-bit RejectedInfoLength as sent.
func (v REJView) ARILength() uint8 {
	return getBits(v.p[rejARILength], rejARILengthShift, rejARILengthBits)
}

// Reason is the 16-bit reject reason (IBTA §12.6.7.2, table 103).
func (v REJView) Reason() RejectReason { return RejectReason(get16(v.p, rejReason)) }

// ARI returns the first ARILength bytes of the ARI field, at most 72.
func (v REJView) ARI() []byte {
	return v.p[rejARI : rejARI+min(int(v.ARILength()), REJARISize)]
}

// ARIField returns the whole 72-byte ARI field.
func (v REJView) ARIField() []byte { return v.p[rejARI : rejARI+REJARISize] }

// PrivateData returns the 148-byte private data field (not a copy).
func (v REJView) PrivateData() []byte { return v.p[rejPrivateData : rejPrivateData+REJPrivateDataSize] }

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

// RTU field offsets from the start of the MAD (IBTA vol. 1 §12.6.9,
// table 111; kernel CM_RTU_*).
const (
	rtuLocalCommID  = cmData + 0 // 32 bits
	rtuRemoteCommID = cmData + 4 // 32 bits
	rtuPrivateData  = cmData + 8 // RTUPrivateDataSize bytes
)

// RTU is a ReadyToUse (IBTA §12.6.9, table 111).
// Field widths and meanings are those of the RTUView accessors
// of the same names.
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
	put32(p, rtuLocalCommID, m.LocalCommID)
	put32(p, rtuRemoteCommID, m.RemoteCommID)
	copy(p[rtuPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrRTU.
func (v RTUView) AttributeID() AttributeID { return AttrRTU }

// Header returns a view of the MAD common header.
func (v RTUView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v RTUView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v RTUView) LocalCommID() uint32 { return get32(v.p, rtuLocalCommID) }

// RemoteCommID is the peer's 32-bit Local Communication ID.
func (v RTUView) RemoteCommID() uint32 { return get32(v.p, rtuRemoteCommID) }

// PrivateData returns the 224-byte private data field (not a copy).
func (v RTUView) PrivateData() []byte { return v.p[rtuPrivateData : rtuPrivateData+RTUPrivateDataSize] }

// Decode copies every field into m without allocating.
func (v RTUView) Decode(m *RTU) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *RTU holding v's fields.
func (v RTUView) DecodeMessage() Message { m := new(RTU); v.Decode(m); return m }

// DREQ field offsets from the start of the MAD (IBTA vol. 1 §12.6.10,
// table 112; kernel CM_DREQ_*).
const (
	dreqLocalCommID   = cmData + 0  // 32 bits
	dreqRemoteCommID  = cmData + 4  // 32 bits
	dreqRemoteQPNEECN = cmData + 8  // 24 bits
	dreqReserved      = cmData + 11 // 8 bits
	dreqPrivateData   = cmData + 12 // DREQPrivateDataSize bytes
)

// DREQ is a DisconnectRequest (IBTA §12.6.10, table 112).
// Field widths and meanings are those of the DREQView accessors
// of the same names.
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
	c.check("RemoteQPNEECN", dreqRemoteQPNEECN, uint64(m.RemoteQPNEECN), uint24Bits)
	return c.err
}

func (m *DREQ) put(p *mad) {
	m.Header.put(p, AttrDREQ, MethodSend)
	put32(p, dreqLocalCommID, m.LocalCommID)
	put32(p, dreqRemoteCommID, m.RemoteCommID)
	put24(p, dreqRemoteQPNEECN, m.RemoteQPNEECN)
	p[dreqReserved] = 0
	copy(p[dreqPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrDREQ.
func (v DREQView) AttributeID() AttributeID { return AttrDREQ }

// Header returns a view of the MAD common header.
func (v DREQView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v DREQView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v DREQView) LocalCommID() uint32 { return get32(v.p, dreqLocalCommID) }

// RemoteCommID is the peer's 32-bit Local Communication ID.
func (v DREQView) RemoteCommID() uint32 { return get32(v.p, dreqRemoteCommID) }

// RemoteQPNEECN is the peer's 24-bit QPN (or EECN for RD); Linux
// ignores a DREQ whose value is not its local QPN.
func (v DREQView) RemoteQPNEECN() uint32 { return get24(v.p, dreqRemoteQPNEECN) }

// PrivateData returns the 220-byte private data field (not a copy).
func (v DREQView) PrivateData() []byte {
	return v.p[dreqPrivateData : dreqPrivateData+DREQPrivateDataSize]
}

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

// DREP field offsets from the start of the MAD (IBTA vol. 1 §12.6.11,
// table 113; kernel CM_DREP_*).
const (
	drepLocalCommID  = cmData + 0 // 32 bits
	drepRemoteCommID = cmData + 4 // 32 bits
	drepPrivateData  = cmData + 8 // DREPPrivateDataSize bytes
)

// DREP is a DisconnectReply (IBTA §12.6.11, table 113).
// Field widths and meanings are those of the DREPView accessors
// of the same names.
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
	put32(p, drepLocalCommID, m.LocalCommID)
	put32(p, drepRemoteCommID, m.RemoteCommID)
	copy(p[drepPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrDREP.
func (v DREPView) AttributeID() AttributeID { return AttrDREP }

// Header returns a view of the MAD common header.
func (v DREPView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v DREPView) Bytes() []byte { return v.p[:] }

// LocalCommID is the sender's 32-bit Local Communication ID.
func (v DREPView) LocalCommID() uint32 { return get32(v.p, drepLocalCommID) }

// RemoteCommID is the peer's 32-bit Local Communication ID.
func (v DREPView) RemoteCommID() uint32 { return get32(v.p, drepRemoteCommID) }

// PrivateData returns the 224-byte private data field (not a copy).
func (v DREPView) PrivateData() []byte {
	return v.p[drepPrivateData : drepPrivateData+DREPPrivateDataSize]
}

// Decode copies every field into m without allocating.
func (v DREPView) Decode(m *DREP) {
	m.Header.get(v.p)
	m.LocalCommID = v.LocalCommID()
	m.RemoteCommID = v.RemoteCommID()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *DREP holding v's fields.
func (v DREPView) DecodeMessage() Message { m := new(DREP); v.Decode(m); return m }
