package mad

import "github.com/go-rdma/rdmacm/ece"

// SIDRREQ is a ServiceIDResolutionRequest (IBTA 12.11, table 119). It
// carries no ECE.
type SIDRREQ struct {
	Header
	RequestID    uint32
	PartitionKey uint16
	ServiceID    uint64
	PrivateData  [SIDRREQPrivateDataSize]byte
}

// AttributeID returns AttrSIDRREQ.
func (m *SIDRREQ) AttributeID() AttributeID { return AttrSIDRREQ }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *SIDRREQ) SetPrivateData(p []byte) error {
	return setPrivate(m.PrivateData[:], p, AttrSIDRREQ)
}

func (m *SIDRREQ) put(p *mad) {
	m.Header.put(p, AttrSIDRREQ, MethodSend)
	put32(p, cmData+0, m.RequestID)
	put32(p, cmData+4, uint32(m.PartitionKey)<<16)
	put64(p, cmData+8, m.ServiceID)
	copy(p[cmData+16:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *SIDRREQ) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, nil) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *SIDRREQ) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseSIDRREQ) and decodes it into m.
func (m *SIDRREQ) UnmarshalMAD(b []byte) error {
	v, err := ParseSIDRREQ(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// SIDRREQView reads a validated SIDR_REQ in place.
type SIDRREQView struct{ p *mad }

// ParseSIDRREQ validates b as a SIDR_REQ and returns a view of it.
func ParseSIDRREQ(b []byte) (SIDRREQView, error) {
	p, err := parseAs(b, AttrSIDRREQ)
	return SIDRREQView{p}, err
}

func (v SIDRREQView) AttributeID() AttributeID { return AttrSIDRREQ }
func (v SIDRREQView) Header() HeaderView       { return headerOf(v.p) }
func (v SIDRREQView) Bytes() []byte            { return v.p[:] }
func (v SIDRREQView) RequestID() uint32        { return get32(v.p, cmData+0) }
func (v SIDRREQView) PartitionKey() uint16     { return get16(v.p, cmData+4) }
func (v SIDRREQView) ServiceID() uint64        { return get64(v.p, cmData+8) }

// PrivateData returns the 216-byte private data field (not a copy).
func (v SIDRREQView) PrivateData() []byte { return v.p[cmData+16:] }

// Decode copies every field into m without allocating.
func (v SIDRREQView) Decode(m *SIDRREQ) {
	m.Header.get(v.p)
	m.RequestID = v.RequestID()
	m.PartitionKey = v.PartitionKey()
	m.ServiceID = v.ServiceID()
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *SIDRREQ holding v's fields.
func (v SIDRREQView) DecodeMessage() Message { m := new(SIDRREQ); v.Decode(m); return m }

// SIDRREP is a ServiceIDResolutionResponse (table 120).
type SIDRREP struct {
	Header
	RequestID uint32
	Status    SIDRStatus
	// InfoLength is the AdditionalInformationLength as sent; Info()
	// clamps values above 72.
	InfoLength uint8
	// VendorID is the ECE vendor ID. Linux writes only bits 15:0 (data
	// bytes 7 and 11, ece.SplitSIDRREP), so encoding refuses a wider
	// value and decoding ignores data byte 6; the options travel in
	// Header.AttributeModifier.
	VendorID    uint32
	QPN         uint32 // 24 bits
	ServiceID   uint64
	QKey        uint32
	Info        [SIDRREPInfoSize]byte
	PrivateData [SIDRREPPrivateDataSize]byte
}

// ECE returns the ECE the SIDR_REP carries.
func (m *SIDRREP) ECE() ece.ECE { return ece.ECE{VendorID: m.VendorID, Options: m.AttributeModifier} }

// SetECE places e as cm_format_sidr_rep does (Linux does so only for
// status success).
func (m *SIDRREP) SetECE(e ece.ECE) { m.VendorID, m.AttributeModifier = e.VendorID, e.Options }

// AttributeID returns AttrSIDRREP.
func (m *SIDRREP) AttributeID() AttributeID { return AttrSIDRREP }

// SetPrivateData copies p into PrivateData and zeroes the rest.
func (m *SIDRREP) SetPrivateData(p []byte) error {
	return setPrivate(m.PrivateData[:], p, AttrSIDRREP)
}

// SetInfo copies info into Info, zeroes the rest and sets InfoLength.
func (m *SIDRREP) SetInfo(info []byte) error {
	n, err := setInfo(m.Info[:], info, AttrSIDRREP)
	if err == nil {
		m.InfoLength = n
	}
	return err
}

func (m *SIDRREP) check() error {
	c := widthChecker{attr: AttrSIDRREP}
	c.check("VendorID", cmData+6, uint64(m.VendorID), 16)
	c.check("QPN", cmData+8, uint64(m.QPN), 24)
	return c.err
}

func (m *SIDRREP) put(p *mad) {
	m.Header.put(p, AttrSIDRREP, MethodSend)
	hi, lo := ece.SplitSIDRREP(m.VendorID)
	put32(p, cmData+0, m.RequestID)
	p[cmData+4] = byte(m.Status)
	p[cmData+5] = m.InfoLength
	put16(p, cmData+6, hi)
	put24(p, cmData+8, m.QPN)
	p[cmData+11] = lo
	put64(p, cmData+12, m.ServiceID)
	put32(p, cmData+20, m.QKey)
	copy(p[cmData+24:], m.Info[:])
	copy(p[cmData+96:], m.PrivateData[:])
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *SIDRREP) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, m.check) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *SIDRREP) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseSIDRREP) and decodes it into m.
func (m *SIDRREP) UnmarshalMAD(b []byte) error {
	v, err := ParseSIDRREP(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// SIDRREPView reads a validated SIDR_REP in place.
type SIDRREPView struct{ p *mad }

// ParseSIDRREP validates b as a SIDR_REP and returns a view of it.
func ParseSIDRREP(b []byte) (SIDRREPView, error) {
	p, err := parseAs(b, AttrSIDRREP)
	return SIDRREPView{p}, err
}

func (v SIDRREPView) AttributeID() AttributeID { return AttrSIDRREP }
func (v SIDRREPView) Header() HeaderView       { return headerOf(v.p) }
func (v SIDRREPView) Bytes() []byte            { return v.p[:] }
func (v SIDRREPView) RequestID() uint32        { return get32(v.p, cmData+0) }
func (v SIDRREPView) Status() SIDRStatus       { return SIDRStatus(v.p[cmData+4]) }
func (v SIDRREPView) InfoLength() uint8        { return v.p[cmData+5] }

// VendorIDHigh is the raw 16-bit VENDOR_ID_H field (data 6..7).
func (v SIDRREPView) VendorIDHigh() uint16 { return get16(v.p, cmData+6) }

// VendorIDLow is the VENDOR_ID_L byte (data 11).
func (v SIDRREPView) VendorIDLow() uint8 { return v.p[cmData+11] }

// VendorID joins the vendor fields as Linux writes them (bits 15:0;
// ece.JoinSIDRREP). The top byte of VENDOR_ID_H (data 6), which Linux
// never writes, is treated as reserved: see VendorIDHigh for the raw
// field. The kernel does not parse SIDR_REP ECE.
func (v SIDRREPView) VendorID() uint32 {
	return ece.JoinSIDRREP(v.VendorIDHigh()&0xff, v.VendorIDLow())
}

// ECE returns the vendor ID and the AttributeModifier options.
func (v SIDRREPView) ECE() ece.ECE {
	return ece.ECE{VendorID: v.VendorID(), Options: get32(v.p, 20)}
}
func (v SIDRREPView) QPN() uint32       { return get24(v.p, cmData+8) }
func (v SIDRREPView) ServiceID() uint64 { return get64(v.p, cmData+12) }
func (v SIDRREPView) QKey() uint32      { return get32(v.p, cmData+20) }

// Info returns the first InfoLength bytes of the additional information
// field, at most 72.
func (v SIDRREPView) Info() []byte {
	return v.p[cmData+24 : cmData+24+min(int(v.InfoLength()), SIDRREPInfoSize)]
}

// InfoField returns the whole 72-byte additional information field.
func (v SIDRREPView) InfoField() []byte { return v.p[cmData+24 : cmData+24+SIDRREPInfoSize] }

// PrivateData returns the 136-byte private data field (not a copy).
func (v SIDRREPView) PrivateData() []byte { return v.p[cmData+96:] }

// Decode copies every field into m without allocating.
func (v SIDRREPView) Decode(m *SIDRREP) {
	m.Header.get(v.p)
	m.RequestID = v.RequestID()
	m.Status = v.Status()
	m.InfoLength = v.InfoLength()
	m.VendorID = v.VendorID()
	m.QPN = v.QPN()
	m.ServiceID = v.ServiceID()
	m.QKey = v.QKey()
	copy(m.Info[:], v.InfoField())
	copy(m.PrivateData[:], v.PrivateData())
}

// DecodeMessage returns a new *SIDRREP holding v's fields.
func (v SIDRREPView) DecodeMessage() Message { m := new(SIDRREP); v.Decode(m); return m }
