package mad

import (
	"fmt"
	"sync"
)

// Message is a CM message struct that can be encoded: *REQ, *REP, ...
type Message interface {
	AttributeID() AttributeID
	// MarshalTo writes the full 256-byte MAD into b (len(b) >= 256),
	// reserved bits zero, and returns 256.
	MarshalTo(b []byte) (int, error)
}

// View is a validated CM MAD read in place: REQView, REPView, ... Use a
// type switch on the value Parse returns.
type View interface {
	AttributeID() AttributeID
	Header() HeaderView
	// Bytes returns the 256 bytes of the MAD (not a copy).
	Bytes() []byte
	// DecodeMessage returns a newly allocated struct holding every
	// field. The views' Decode methods do the same without allocating.
	DecodeMessage() Message
}

// Parse validates the header of the CM MAD in b once and returns a view
// of the message its AttributeID names. b must hold at least 256 bytes;
// bytes beyond 256 are ignored. It checks: BaseVersion 1, class 0x07,
// class version 2, a known attribute, method Send for CM messages
// (Get, Set or GetResp for ClassPortInfo), the REQ transport type and
// MRA's MessageMRAed. Reserved bits are not checked (see CheckReserved).
func Parse(b []byte) (View, error) {
	p, attr, err := validate(b)
	if err != nil {
		return nil, err
	}
	switch attr {
	case AttrClassPortInfo:
		return ClassPortInfoView{p}, nil
	case AttrREQ:
		return REQView{p}, nil
	case AttrMRA:
		return MRAView{p}, nil
	case AttrREJ:
		return REJView{p}, nil
	case AttrREP:
		return REPView{p}, nil
	case AttrRTU:
		return RTUView{p}, nil
	case AttrDREQ:
		return DREQView{p}, nil
	case AttrDREP:
		return DREPView{p}, nil
	case AttrSIDRREQ:
		return SIDRREQView{p}, nil
	case AttrSIDRREP:
		return SIDRREPView{p}, nil
	case AttrLAP:
		return LAPView{p}, nil
	default: // AttrAPR; validate refused everything else
		return APRView{p}, nil
	}
}

// Decode parses b and returns a newly allocated message struct.
func Decode(b []byte) (Message, error) {
	v, err := Parse(b)
	if err != nil {
		return nil, err
	}
	return v.DecodeMessage(), nil
}

func validate(b []byte) (*mad, AttributeID, error) {
	if len(b) < MADSize {
		return nil, 0, fmt.Errorf("CM MAD: %d bytes, need %d: %w", len(b), MADSize, ErrShortBuffer)
	}
	p := (*mad)(b[:MADSize])
	h := headerOf(p)
	attr := h.AttributeID()
	switch {
	case h.BaseVersion() != BaseVersion:
		return nil, 0, fmt.Errorf("CM MAD: base version %d: %w", h.BaseVersion(), ErrBadBaseVersion)
	case h.MgmtClass() != ClassCM:
		return nil, 0, fmt.Errorf("CM MAD: class %#02x: %w", h.MgmtClass(), ErrWrongClass)
	case h.ClassVersion() != CMClassVersion:
		return nil, 0, fmt.Errorf("CM MAD: class version %d: %w", h.ClassVersion(), ErrBadClassVersion)
	case !attr.Known():
		return nil, 0, fmt.Errorf("CM MAD: %v: %w", attr, ErrUnknownAttribute)
	}
	method := h.Method()
	if attr == AttrClassPortInfo {
		if method != MethodGet && method != MethodSet && method != MethodGetResp {
			return nil, 0, fmt.Errorf("CM MAD: ClassPortInfo with %v: %w", method, ErrBadMethod)
		}
		return p, attr, nil
	}
	if method != MethodSend {
		return nil, 0, fmt.Errorf("CM MAD: %v with %v: %w", attr, method, ErrBadMethod)
	}
	switch attr {
	case AttrREQ:
		v := REQView{p}
		if err := checkTransport(v.TransportServiceType(), v.ExtendedTransportType()); err != nil {
			return nil, 0, err
		}
	case AttrMRA:
		if m := (MRAView{p}).MessageMRAed(); m > MRAedOther {
			return nil, 0, &FieldError{Attr: AttrMRA, Field: "MessageMRAed", Offset: mraMessageMRAed, Value: uint64(m), Err: ErrReservedValue}
		}
	}
	return p, attr, nil
}

func parseAs(b []byte, want AttributeID) (*mad, error) {
	p, attr, err := validate(b)
	if err != nil {
		return nil, err
	}
	if attr != want {
		return nil, fmt.Errorf("CM MAD: got %v, want %v: %w", attr, want, ErrWrongAttribute)
	}
	return p, nil
}

func outBuf(b []byte, attr AttributeID) (*mad, error) {
	if len(b) < MADSize {
		return nil, fmt.Errorf("encode %v: buffer %d bytes, need %d: %w", attr, len(b), MADSize, ErrShortBuffer)
	}
	return (*mad)(b[:MADSize]), nil
}

func marshal(m Message) ([]byte, error) {
	b := make([]byte, MADSize)
	if _, err := m.MarshalTo(b); err != nil {
		return nil, err
	}
	return b, nil
}

func headerOf(p *mad) HeaderView { return HeaderView{(*[HeaderSize]byte)(p[:HeaderSize])} }

func setPrivate(dst, src []byte, attr AttributeID) error {
	if len(src) > len(dst) {
		return fmt.Errorf("%v private data: %d bytes, max %d: %w", attr, len(src), len(dst), ErrPrivateDataTooLong)
	}
	clear(dst[copy(dst, src):])
	return nil
}

func setInfo(dst, src []byte, attr AttributeID) (uint8, error) {
	if len(src) > len(dst) {
		return 0, fmt.Errorf("%v additional information: %d bytes, max %d: %w", attr, len(src), len(dst), ErrInfoTooLong)
	}
	clear(dst[copy(dst, src):])
	return uint8(len(src)), nil
}

// putter is the unchecked encoder every message has; masks are built
// from it.
type putter interface{ put(p *mad) }

// definedBits returns, per attribute, a 256-byte mask of the bits the
// codec reads and writes: decoding an all-ones MAD and encoding it back
// without range checks sets exactly the defined bits.
var definedBits = sync.OnceValue(func() map[AttributeID]*mad {
	var ones mad
	for i := range ones {
		ones[i] = 0xff
	}
	masks := make(map[AttributeID]*mad)
	for attr := AttrClassPortInfo; attr <= AttrAPR; attr++ {
		if !attr.Known() {
			continue
		}
		var m putter
		switch attr {
		case AttrClassPortInfo:
			x := new(ClassPortInfo)
			ClassPortInfoView{&ones}.Decode(x)
			m = x
		case AttrREQ:
			x := new(REQ)
			REQView{&ones}.Decode(x)
			m = x
		case AttrMRA:
			x := new(MRA)
			MRAView{&ones}.Decode(x)
			m = x
		case AttrREJ:
			x := new(REJ)
			REJView{&ones}.Decode(x)
			m = x
		case AttrREP:
			x := new(REP)
			REPView{&ones}.Decode(x)
			m = x
		case AttrRTU:
			x := new(RTU)
			RTUView{&ones}.Decode(x)
			m = x
		case AttrDREQ:
			x := new(DREQ)
			DREQView{&ones}.Decode(x)
			m = x
		case AttrDREP:
			x := new(DREP)
			DREPView{&ones}.Decode(x)
			m = x
		case AttrSIDRREQ:
			x := new(SIDRREQ)
			SIDRREQView{&ones}.Decode(x)
			m = x
		case AttrSIDRREP:
			x := new(SIDRREP)
			SIDRREPView{&ones}.Decode(x)
			m = x
		case AttrLAP:
			x := new(LAP)
			LAPView{&ones}.Decode(x)
			m = x
		case AttrAPR:
			x := new(APR)
			APRView{&ones}.Decode(x)
			m = x
		}
		mask := new(mad)
		m.put(mask)
		// Header bytes 0..3 and 16..17 are fixed values, not fields:
		// they are checked by Parse, so count them as defined.
		mask[hdrBaseVersion], mask[hdrMgmtClass], mask[hdrClassVersion], mask[hdrMethod] = 0xff, 0xff, 0xff, 0xff
		mask[hdrAttributeID], mask[hdrAttributeID+1] = 0xff, 0xff
		masks[attr] = mask
	}
	return masks
})

// CheckReserved parses b and reports the first reserved bit that is set,
// as a *FieldError wrapping ErrReservedNonZero with its byte offset. For
// a MAD that passes, decoding and re-encoding gives b[:256] back exactly.
// Besides the IBTA reserved fields it counts as reserved the SIDR_REP
// byte Linux never writes (data 6, the top byte of VENDOR_ID_H).
func CheckReserved(b []byte) error {
	v, err := Parse(b)
	if err != nil {
		return err
	}
	attr := v.AttributeID()
	mask := definedBits()[attr]
	for i, x := range v.Bytes() {
		if x&^mask[i] != 0 {
			return &FieldError{Attr: attr, Field: "reserved", Offset: i, Value: uint64(x &^ mask[i]), Err: ErrReservedNonZero}
		}
	}
	return nil
}

// marshalTo is the shared MarshalTo: range check, buffer check, put.
func marshalTo(b []byte, m interface {
	putter
	AttributeID() AttributeID
}, check func() error) (int, error) {
	if check != nil {
		if err := check(); err != nil {
			return 0, err
		}
	}
	p, err := outBuf(b, m.AttributeID())
	if err != nil {
		return 0, err
	}
	m.put(p)
	return MADSize, nil
}
