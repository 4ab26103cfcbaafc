package mad

// ClassPortInfoSize is the size of the ClassPortInfo attribute (IBTA
// 13.4.8.1; kernel struct ib_class_port_info). The rest of the 232-byte
// data area is reserved.
const ClassPortInfoSize = 72

// ClassPortInfo is the generic class attribute 0x0001 (IBTA 13.4.8.1).
// Linux's CM registers no agent for Get/Set; its MAD layer answers them
// with status 0x000C. A REJ with reason 24 carries one in its ARI.
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
	RedirectGID   GID
	RedirectTC    uint8
	RedirectSL    uint8  // 4 bits
	RedirectFL    uint32 // 20 bits
	RedirectLID   uint16
	RedirectPKey  uint16
	RedirectQP    uint32 // 24 bits
	RedirectQKey  uint32
	TrapGID       GID
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
		c.fail("Method", 3, uint64(m.Method), ErrBadMethod)
	}
	c.check("CapabilityMask2", cmData+4, uint64(m.CapabilityMask2), 27)
	c.check("RespTimeValue", cmData+7, uint64(m.RespTimeValue), 5)
	c.check("RedirectSL", cmData+24, uint64(m.RedirectSL), 4)
	c.check("RedirectFL", cmData+25, uint64(m.RedirectFL), 20)
	c.check("RedirectQP", cmData+33, uint64(m.RedirectQP), 24)
	c.check("TrapSL", cmData+56, uint64(m.TrapSL), 4)
	c.check("TrapFL", cmData+57, uint64(m.TrapFL), 20)
	c.check("TrapQP", cmData+65, uint64(m.TrapQP), 24)
	return c.err
}

func (m *ClassPortInfo) put(p *mad) {
	clear(p[HeaderSize:])
	m.Header.put(p, AttrClassPortInfo, m.Method)
	p[cmData+0] = m.BaseVersion
	p[cmData+1] = m.ClassVersion
	put16(p, cmData+2, m.CapabilityMask)
	put32(p, cmData+4, (m.CapabilityMask2&(1<<27-1))<<5|uint32(m.RespTimeValue&0x1f))
	copy(p[cmData+8:cmData+24], m.RedirectGID[:])
	put32(p, cmData+24, uint32(m.RedirectTC)<<24|uint32(m.RedirectSL&0xf)<<20|m.RedirectFL&0xfffff)
	put16(p, cmData+28, m.RedirectLID)
	put16(p, cmData+30, m.RedirectPKey)
	put32(p, cmData+32, m.RedirectQP&0xffffff)
	put32(p, cmData+36, m.RedirectQKey)
	copy(p[cmData+40:cmData+56], m.TrapGID[:])
	put32(p, cmData+56, uint32(m.TrapTC)<<24|uint32(m.TrapSL&0xf)<<20|m.TrapFL&0xfffff)
	put16(p, cmData+60, m.TrapLID)
	put16(p, cmData+62, m.TrapPKey)
	put32(p, cmData+64, uint32(m.TrapHL)<<24|m.TrapQP&0xffffff)
	put32(p, cmData+68, m.TrapQKey)
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

func (v ClassPortInfoView) AttributeID() AttributeID { return AttrClassPortInfo }
func (v ClassPortInfoView) Header() HeaderView       { return headerOf(v.p) }
func (v ClassPortInfoView) Bytes() []byte            { return v.p[:] }
func (v ClassPortInfoView) Method() Method           { return Method(v.p[3]) }
func (v ClassPortInfoView) BaseVersion() uint8       { return v.p[cmData+0] }
func (v ClassPortInfoView) ClassVersion() uint8      { return v.p[cmData+1] }
func (v ClassPortInfoView) CapabilityMask() uint16   { return get16(v.p, cmData+2) }
func (v ClassPortInfoView) CapabilityMask2() uint32  { return get32(v.p, cmData+4) >> 5 }
func (v ClassPortInfoView) RespTimeValue() uint8     { return v.p[cmData+7] & 0x1f }
func (v ClassPortInfoView) RedirectGID() GID         { return getGID(v.p, cmData+8) }
func (v ClassPortInfoView) RedirectTC() uint8        { return v.p[cmData+24] }
func (v ClassPortInfoView) RedirectSL() uint8        { return v.p[cmData+25] >> 4 }
func (v ClassPortInfoView) RedirectFL() uint32       { return get32(v.p, cmData+24) & 0xfffff }
func (v ClassPortInfoView) RedirectLID() uint16      { return get16(v.p, cmData+28) }
func (v ClassPortInfoView) RedirectPKey() uint16     { return get16(v.p, cmData+30) }
func (v ClassPortInfoView) RedirectQP() uint32       { return get24(v.p, cmData+33) }
func (v ClassPortInfoView) RedirectQKey() uint32     { return get32(v.p, cmData+36) }
func (v ClassPortInfoView) TrapGID() GID             { return getGID(v.p, cmData+40) }
func (v ClassPortInfoView) TrapTC() uint8            { return v.p[cmData+56] }
func (v ClassPortInfoView) TrapSL() uint8            { return v.p[cmData+57] >> 4 }
func (v ClassPortInfoView) TrapFL() uint32           { return get32(v.p, cmData+56) & 0xfffff }
func (v ClassPortInfoView) TrapLID() uint16          { return get16(v.p, cmData+60) }
func (v ClassPortInfoView) TrapPKey() uint16         { return get16(v.p, cmData+62) }
func (v ClassPortInfoView) TrapHL() uint8            { return v.p[cmData+64] }
func (v ClassPortInfoView) TrapQP() uint32           { return get24(v.p, cmData+65) }
func (v ClassPortInfoView) TrapQKey() uint32         { return get32(v.p, cmData+68) }

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
