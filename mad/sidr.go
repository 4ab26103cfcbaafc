package mad

import "github.com/go-rdma/rdmacm/ece"

// SIDR_REQ field offsets from the start of the MAD (IBTA vol. 1
// §12.11.1, table 119; kernel CM_SIDR_REQ_*).
const (
	sidrReqRequestID    = cmData + 0  // 32 bits
	sidrReqPartitionKey = cmData + 4  // 16 bits
	sidrReqReserved     = cmData + 6  // 16 bits
	sidrReqServiceID    = cmData + 8  // 64 bits
	sidrReqPrivateData  = cmData + 16 // SIDRREQPrivateDataSize bytes
)

// SIDRREQ is a ServiceIDResolutionRequest (IBTA §12.11.1, table 119).
// It carries no ECE.
// Field widths and meanings are those of the SIDRREQView accessors
// of the same names.
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
	put32(p, sidrReqRequestID, m.RequestID)
	put16(p, sidrReqPartitionKey, m.PartitionKey)
	put16(p, sidrReqReserved, 0)
	put64(p, sidrReqServiceID, m.ServiceID)
	copy(p[sidrReqPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrSIDRREQ.
func (v SIDRREQView) AttributeID() AttributeID { return AttrSIDRREQ }

// Header returns a view of the MAD common header.
func (v SIDRREQView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v SIDRREQView) Bytes() []byte { return v.p[:] }

// RequestID is the sender's 32-bit RequestID, echoed in the SIDR_REP.
func (v SIDRREQView) RequestID() uint32 { return get32(v.p, sidrReqRequestID) }

// PartitionKey is the 16-bit P_Key.
func (v SIDRREQView) PartitionKey() uint16 { return get16(v.p, sidrReqPartitionKey) }

// ServiceID is the 64-bit ServiceID to resolve.
func (v SIDRREQView) ServiceID() uint64 { return get64(v.p, sidrReqServiceID) }

// PrivateData returns the 216-byte private data field (not a copy).
func (v SIDRREQView) PrivateData() []byte {
	return v.p[sidrReqPrivateData : sidrReqPrivateData+SIDRREQPrivateDataSize]
}

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

// SIDR_REP field offsets from the start of the MAD (IBTA vol. 1
// §12.11.2, table 120; kernel CM_SIDR_REP_*).
const (
	sidrRepRequestID    = cmData + 0  // 32 bits
	sidrRepStatus       = cmData + 4  // 8 bits
	sidrRepInfoLength   = cmData + 5  // 8 bits
	sidrRepVendorIDHigh = cmData + 6  // 16 bits, VENDOR_ID_H
	sidrRepQPN          = cmData + 8  // 24 bits
	sidrRepVendorIDLow  = cmData + 11 // 8 bits, VENDOR_ID_L
	sidrRepServiceID    = cmData + 12 // 64 bits
	sidrRepQKey         = cmData + 20 // 32 bits
	sidrRepInfo         = cmData + 24 // SIDRREPInfoSize bytes
	sidrRepPrivateData  = cmData + 96 // SIDRREPPrivateDataSize bytes
	// sidrRepVendorIDBits is what Linux carries: vendor bits 15:0.
	sidrRepVendorIDBits = 16
)

// SIDRREP is a ServiceIDResolutionResponse (IBTA §12.11.2, table 120).
// Field widths and meanings are those of the SIDRREPView accessors
// of the same names.
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
	c.check("VendorID", sidrRepVendorIDHigh, uint64(m.VendorID), sidrRepVendorIDBits)
	c.check("QPN", sidrRepQPN, uint64(m.QPN), uint24Bits)
	return c.err
}

func (m *SIDRREP) put(p *mad) {
	m.Header.put(p, AttrSIDRREP, MethodSend)
	hi, lo := ece.SplitSIDRREP(m.VendorID)
	put32(p, sidrRepRequestID, m.RequestID)
	p[sidrRepStatus] = byte(m.Status)
	p[sidrRepInfoLength] = m.InfoLength
	put16(p, sidrRepVendorIDHigh, hi)
	put24(p, sidrRepQPN, m.QPN)
	p[sidrRepVendorIDLow] = lo
	put64(p, sidrRepServiceID, m.ServiceID)
	put32(p, sidrRepQKey, m.QKey)
	copy(p[sidrRepInfo:], m.Info[:])
	copy(p[sidrRepPrivateData:], m.PrivateData[:])
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

// AttributeID returns AttrSIDRREP.
func (v SIDRREPView) AttributeID() AttributeID { return AttrSIDRREP }

// Header returns a view of the MAD common header.
func (v SIDRREPView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v SIDRREPView) Bytes() []byte { return v.p[:] }

// RequestID is the 32-bit RequestID of the SIDR_REQ answered.
func (v SIDRREPView) RequestID() uint32 { return get32(v.p, sidrRepRequestID) }

// Status is the 8-bit SIDR status.
func (v SIDRREPView) Status() SIDRStatus { return SIDRStatus(v.p[sidrRepStatus]) }

// InfoLength is the 8-bit AdditionalInformationLength as sent.
func (v SIDRREPView) InfoLength() uint8 { return v.p[sidrRepInfoLength] }

// VendorIDHigh is the raw 16-bit VENDOR_ID_H field (data 6..7).
func (v SIDRREPView) VendorIDHigh() uint16 { return get16(v.p, sidrRepVendorIDHigh) }

// VendorIDLow is the VENDOR_ID_L byte (data 11).
func (v SIDRREPView) VendorIDLow() uint8 { return v.p[sidrRepVendorIDLow] }

// VendorID joins the vendor fields as Linux writes them (bits 15:0;
// ece.JoinSIDRREP). The top byte of VENDOR_ID_H (data 6), which Linux
// never writes, is treated as reserved: see VendorIDHigh for the raw
// field. The kernel does not parse SIDR_REP ECE.
func (v SIDRREPView) VendorID() uint32 {
	return ece.JoinSIDRREP(v.VendorIDHigh()&0xff, v.VendorIDLow())
}

// ECE returns the vendor ID and the AttributeModifier options.
func (v SIDRREPView) ECE() ece.ECE {
	return ece.ECE{VendorID: v.VendorID(), Options: v.Header().AttributeModifier()}
}

// QPN is the 24-bit QP number of the resolved service.
func (v SIDRREPView) QPN() uint32 { return get24(v.p, sidrRepQPN) }

// ServiceID is the 64-bit ServiceID of the SIDR_REQ answered.
func (v SIDRREPView) ServiceID() uint64 { return get64(v.p, sidrRepServiceID) }

// QKey is the 32-bit Q_Key of the resolved service's QP.
func (v SIDRREPView) QKey() uint32 { return get32(v.p, sidrRepQKey) }

// Info returns the first InfoLength bytes of the additional information
// field, at most 72.
func (v SIDRREPView) Info() []byte {
	return v.p[sidrRepInfo : sidrRepInfo+min(int(v.InfoLength()), SIDRREPInfoSize)]
}

// InfoField returns the whole 72-byte additional information field.
func (v SIDRREPView) InfoField() []byte { return v.p[sidrRepInfo : sidrRepInfo+SIDRREPInfoSize] }

// PrivateData returns the 136-byte private data field (not a copy).
func (v SIDRREPView) PrivateData() []byte {
	return v.p[sidrRepPrivateData : sidrRepPrivateData+SIDRREPPrivateDataSize]
}

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
