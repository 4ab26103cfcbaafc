package mad

import "github.com/go-rdma/rdmacm/rdma"

// ClassPortInfoSize is the size of the ClassPortInfo attribute (IBTA
// §13.4.8.1; kernel struct ib_class_port_info). The rest of the 232-byte
// data area is reserved.
const ClassPortInfoSize = 72

// ClassPortInfo field offsets from the start of the MAD (IBTA vol. 1
// §13.4.8.1). Shift counts from the least significant
// bit; Bits is the width.
const (
	cpiBaseVersion          = cmData + 0 // 8 bits
	cpiClassVersion         = cmData + 1 // 8 bits
	cpiCapabilityMask       = cmData + 2 // 16 bits
	cpiCapabilityMask2      = cmData + 4 // top 27 bits of the 32-bit word
	cpiCapabilityMask2Shift = 5
	cpiCapabilityMask2Bits  = 27
	cpiRespTimeValue        = cmData + 7
	cpiRespTimeValueShift   = 0
	cpiRespTimeValueBits    = timeoutBits
	cpiRedirectGID          = cmData + 8  // 128 bits
	cpiRedirectTC           = cmData + 24 // 8 bits
	cpiRedirectSL           = cmData + 25
	cpiRedirectSLShift      = 4
	cpiRedirectSLBits       = 4
	cpiRedirectFL           = cmData + 25 // low 20 bits of the 24-bit word
	cpiRedirectLID          = cmData + 28 // 16 bits
	cpiRedirectPKey         = cmData + 30 // 16 bits
	cpiRedirectQP           = cmData + 33 // 24 bits
	cpiRedirectQKey         = cmData + 36 // 32 bits
	cpiTrapGID              = cmData + 40 // 128 bits
	cpiTrapTC               = cmData + 56 // 8 bits
	cpiTrapSL               = cmData + 57
	cpiTrapSLShift          = 4
	cpiTrapSLBits           = 4
	cpiTrapFL               = cmData + 57 // low 20 bits of the 24-bit word
	cpiTrapLID              = cmData + 60 // 16 bits
	cpiTrapPKey             = cmData + 62 // 16 bits
	cpiTrapHL               = cmData + 64 // 8 bits
	cpiTrapQP               = cmData + 65 // 24 bits
	cpiTrapQKey             = cmData + 68 // 32 bits
)

// ClassPortInfo is the generic class attribute 0x0001 (IBTA §13.4.8.1).
// Linux's CM registers no agent for Get/Set; its MAD layer answers them
// with status 0x000C. A REJ with reason 24 carries one in its ARI.
// Field widths and meanings are those of the ClassPortInfoView
// accessors of the same names.
type ClassPortInfo struct {
	Header
	// Method is Get, Set or GetResp.
	Method         Method
	BaseVersion    uint8
	ClassVersion   uint8
	CapabilityMask uint16
	// CapabilityMask2 is 27 bits.
	CapabilityMask2 uint32
	// RespTimeValue is 5 bits: 4.096 µs × 2^n.
	RespTimeValue uint8
	RedirectGID   rdma.GID
	RedirectTC    uint8
	RedirectSL    uint8  // 4 bits
	RedirectFL    uint32 // 20 bits
	RedirectLID   uint16
	RedirectPKey  uint16
	RedirectQP    uint32 // 24 bits
	RedirectQKey  uint32
	TrapGID       rdma.GID
	TrapTC        uint8
	TrapSL        uint8  // 4 bits
	TrapFL        uint32 // 20 bits
	TrapLID       uint16
	TrapPKey      uint16
	TrapHL        uint8
	TrapQP        uint32 // 24 bits
	TrapQKey      uint32
}

// AttributeID returns AttrClassPortInfo.
func (m *ClassPortInfo) AttributeID() AttributeID { return AttrClassPortInfo }

func (m *ClassPortInfo) check() error {
	c := widthChecker{attr: AttrClassPortInfo}
	if m.Method != MethodGet && m.Method != MethodSet && m.Method != MethodGetResp {
		c.fail("Method", hdrMethod, uint64(m.Method), ErrBadMethod)
	}
	c.check("CapabilityMask2", cpiCapabilityMask2, uint64(m.CapabilityMask2), cpiCapabilityMask2Bits)
	c.check("RespTimeValue", cpiRespTimeValue, uint64(m.RespTimeValue), cpiRespTimeValueBits)
	c.check("RedirectSL", cpiRedirectSL, uint64(m.RedirectSL), cpiRedirectSLBits)
	c.check("RedirectFL", cpiRedirectFL, uint64(m.RedirectFL), flowLabelBits)
	c.check("RedirectQP", cpiRedirectQP, uint64(m.RedirectQP), uint24Bits)
	c.check("TrapSL", cpiTrapSL, uint64(m.TrapSL), cpiTrapSLBits)
	c.check("TrapFL", cpiTrapFL, uint64(m.TrapFL), flowLabelBits)
	c.check("TrapQP", cpiTrapQP, uint64(m.TrapQP), uint24Bits)
	return c.err
}

func (m *ClassPortInfo) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrClassPortInfo, m.Method)
	p[cpiBaseVersion] = m.BaseVersion
	p[cpiClassVersion] = m.ClassVersion
	put16(p, cpiCapabilityMask, m.CapabilityMask)
	put32(p, cpiCapabilityMask2, (m.CapabilityMask2&(1<<cpiCapabilityMask2Bits-1))<<cpiCapabilityMask2Shift)
	p[cpiRespTimeValue] |= setBits(m.RespTimeValue, cpiRespTimeValueShift, cpiRespTimeValueBits)
	copy(p[cpiRedirectGID:cpiRedirectGID+16], m.RedirectGID[:])
	p[cpiRedirectTC] = m.RedirectTC
	put24(p, cpiRedirectFL, m.RedirectFL&(1<<flowLabelBits-1))
	p[cpiRedirectSL] |= setBits(m.RedirectSL, cpiRedirectSLShift, cpiRedirectSLBits)
	put16(p, cpiRedirectLID, m.RedirectLID)
	put16(p, cpiRedirectPKey, m.RedirectPKey)
	put24(p, cpiRedirectQP, m.RedirectQP)
	put32(p, cpiRedirectQKey, m.RedirectQKey)
	copy(p[cpiTrapGID:cpiTrapGID+16], m.TrapGID[:])
	p[cpiTrapTC] = m.TrapTC
	put24(p, cpiTrapFL, m.TrapFL&(1<<flowLabelBits-1))
	p[cpiTrapSL] |= setBits(m.TrapSL, cpiTrapSLShift, cpiTrapSLBits)
	put16(p, cpiTrapLID, m.TrapLID)
	put16(p, cpiTrapPKey, m.TrapPKey)
	p[cpiTrapHL] = m.TrapHL
	put24(p, cpiTrapQP, m.TrapQP)
	put32(p, cpiTrapQKey, m.TrapQKey)
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (m *ClassPortInfo) MarshalTo(b []byte) (int, error) { return marshalTo(b, m, m.check) }

// Marshal returns the encoded MAD in a new 256-byte slice.
func (m *ClassPortInfo) Marshal() ([]byte, error) { return marshal(m) }

// UnmarshalMAD parses b (see ParseClassPortInfo) and decodes it into m.
func (m *ClassPortInfo) UnmarshalMAD(b []byte) error {
	v, err := ParseClassPortInfo(b)
	if err == nil {
		v.Decode(m)
	}
	return err
}

// ClassPortInfoView reads a validated ClassPortInfo MAD in place.
type ClassPortInfoView struct{ p *mad }

// ParseClassPortInfo validates b as a CM-class ClassPortInfo MAD.
func ParseClassPortInfo(b []byte) (ClassPortInfoView, error) {
	p, err := parseAs(b, AttrClassPortInfo)
	return ClassPortInfoView{p}, err
}

// AttributeID returns AttrClassPortInfo.
func (v ClassPortInfoView) AttributeID() AttributeID { return AttrClassPortInfo }

// Header returns a view of the MAD common header.
func (v ClassPortInfoView) Header() HeaderView { return headerOf(v.p) }

// Bytes returns the 256 bytes of the MAD (not a copy).
func (v ClassPortInfoView) Bytes() []byte { return v.p[:] }

// Method is the MAD header method: Get, Set or GetResp.
func (v ClassPortInfoView) Method() Method { return v.Header().Method() }

// BaseVersion is the 8-bit highest MAD base version the port supports.
func (v ClassPortInfoView) BaseVersion() uint8 { return v.p[cpiBaseVersion] }

// ClassVersion is the 8-bit highest class version the port supports.
func (v ClassPortInfoView) ClassVersion() uint8 { return v.p[cpiClassVersion] }

// CapabilityMask is the 16-bit class capability mask.
func (v ClassPortInfoView) CapabilityMask() uint16 { return get16(v.p, cpiCapabilityMask) }

// CapabilityMask2 is the 27-bit second capability mask.
func (v ClassPortInfoView) CapabilityMask2() uint32 {
	return get32(v.p, cpiCapabilityMask2) >> cpiCapabilityMask2Shift
}

// RespTimeValue is the 5-bit response time: 4.096 µs × 2^n.
func (v ClassPortInfoView) RespTimeValue() uint8 {
	return getBits(v.p[cpiRespTimeValue], cpiRespTimeValueShift, cpiRespTimeValueBits)
}

// RedirectGID is the 128-bit GID to redirect class requests to.
func (v ClassPortInfoView) RedirectGID() rdma.GID { return getGID(v.p, cpiRedirectGID) }

// RedirectTC is the 8-bit traffic class for redirected requests.
func (v ClassPortInfoView) RedirectTC() uint8 { return v.p[cpiRedirectTC] }

// RedirectSL is the 4-bit service level for redirected requests.
func (v ClassPortInfoView) RedirectSL() uint8 {
	return getBits(v.p[cpiRedirectSL], cpiRedirectSLShift, cpiRedirectSLBits)
}

// RedirectFL is the 20-bit flow label for redirected requests.
func (v ClassPortInfoView) RedirectFL() uint32 {
	return get24(v.p, cpiRedirectFL) & (1<<flowLabelBits - 1)
}

// RedirectLID is the 16-bit LID to redirect to.
func (v ClassPortInfoView) RedirectLID() uint16 { return get16(v.p, cpiRedirectLID) }

// RedirectPKey is the 16-bit P_Key for redirected requests.
func (v ClassPortInfoView) RedirectPKey() uint16 { return get16(v.p, cpiRedirectPKey) }

// RedirectQP is the 24-bit QP to redirect to.
func (v ClassPortInfoView) RedirectQP() uint32 { return get24(v.p, cpiRedirectQP) }

// RedirectQKey is the 32-bit Q_Key of the redirect QP.
func (v ClassPortInfoView) RedirectQKey() uint32 { return get32(v.p, cpiRedirectQKey) }

// TrapGID is the 128-bit GID traps are sent to.
func (v ClassPortInfoView) TrapGID() rdma.GID { return getGID(v.p, cpiTrapGID) }

// TrapTC is the 8-bit traffic class for traps.
func (v ClassPortInfoView) TrapTC() uint8 { return v.p[cpiTrapTC] }

// TrapSL is the 4-bit service level for traps.
func (v ClassPortInfoView) TrapSL() uint8 {
	return getBits(v.p[cpiTrapSL], cpiTrapSLShift, cpiTrapSLBits)
}

// TrapFL is the 20-bit flow label for traps.
func (v ClassPortInfoView) TrapFL() uint32 { return get24(v.p, cpiTrapFL) & (1<<flowLabelBits - 1) }

// TrapLID is the 16-bit LID traps are sent to.
func (v ClassPortInfoView) TrapLID() uint16 { return get16(v.p, cpiTrapLID) }

// TrapPKey is the 16-bit P_Key for traps.
func (v ClassPortInfoView) TrapPKey() uint16 { return get16(v.p, cpiTrapPKey) }

// TrapHL is the 8-bit hop limit for traps.
func (v ClassPortInfoView) TrapHL() uint8 { return v.p[cpiTrapHL] }

// TrapQP is the 24-bit QP traps are sent to.
func (v ClassPortInfoView) TrapQP() uint32 { return get24(v.p, cpiTrapQP) }

// TrapQKey is the 32-bit Q_Key of the trap QP.
func (v ClassPortInfoView) TrapQKey() uint32 { return get32(v.p, cpiTrapQKey) }

// Decode copies every field into m without allocating.
func (v ClassPortInfoView) Decode(m *ClassPortInfo) {
	m.Header.get(v.p)
	m.Method = v.Method()
	m.BaseVersion = v.BaseVersion()
	m.ClassVersion = v.ClassVersion()
	m.CapabilityMask = v.CapabilityMask()
	m.CapabilityMask2 = v.CapabilityMask2()
	m.RespTimeValue = v.RespTimeValue()
	m.RedirectGID = v.RedirectGID()
	m.RedirectTC = v.RedirectTC()
	m.RedirectSL = v.RedirectSL()
	m.RedirectFL = v.RedirectFL()
	m.RedirectLID = v.RedirectLID()
	m.RedirectPKey = v.RedirectPKey()
	m.RedirectQP = v.RedirectQP()
	m.RedirectQKey = v.RedirectQKey()
	m.TrapGID = v.TrapGID()
	m.TrapTC = v.TrapTC()
	m.TrapSL = v.TrapSL()
	m.TrapFL = v.TrapFL()
	m.TrapLID = v.TrapLID()
	m.TrapPKey = v.TrapPKey()
	m.TrapHL = v.TrapHL()
	m.TrapQP = v.TrapQP()
	m.TrapQKey = v.TrapQKey()
}

// DecodeMessage returns a new *ClassPortInfo holding v's fields.
func (v ClassPortInfoView) DecodeMessage() Message {
	m := new(ClassPortInfo)
	v.Decode(m)
	return m
}
