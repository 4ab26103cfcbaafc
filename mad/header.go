package mad

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// Sizes of a CM MAD (IBTA vol. 1 §13.4.2: 24-byte common header and
// 232 bytes of class data; a CM MAD is always 256 bytes).
const (
	MADSize    = 256                  // whole MAD
	HeaderSize = 24                   // MAD common header
	DataSize   = MADSize - HeaderSize // CM class data
)

// Fixed MAD header values for the CM class.
const (
	BaseVersion    = 1    // IB_MGMT_BASE_VERSION
	ClassCM        = 0x07 // IB_MGMT_CLASS_CM
	CMClassVersion = 2    // IB_CM_CLASS_VERSION
)

// MAD common header field offsets (IBTA vol. 1 §13.4.3, MAD base header).
const (
	hdrBaseVersion       = 0  // 8 bits
	hdrMgmtClass         = 1  // 8 bits
	hdrClassVersion      = 2  // 8 bits
	hdrMethod            = 3  // 8 bits
	hdrStatus            = 4  // 16 bits
	hdrClassSpecific     = 6  // 16 bits
	hdrTransactionID     = 8  // 64 bits
	hdrAttributeID       = 16 // 16 bits
	hdrReserved          = 18 // 16 bits
	hdrAttributeModifier = 20 // 32 bits
)

// Method is the MAD header Method byte.
type Method uint8

// Methods (IBTA §13.4.5). CM messages use Send only.
const (
	MethodGet     Method = 0x01 // read an attribute (ClassPortInfo)
	MethodSet     Method = 0x02 // write an attribute (ClassPortInfo)
	MethodSend    Method = 0x03 // every CM message
	MethodGetResp Method = 0x81 // answer to Get or Set
)

// String returns the method name, e.g. "Send", or "Method(0xNN)".
func (m Method) String() string {
	switch m {
	case MethodGet:
		return "Get"
	case MethodSet:
		return "Set"
	case MethodSend:
		return "Send"
	case MethodGetResp:
		return "GetResp"
	}
	return fmt.Sprintf("Method(%#02x)", uint8(m))
}

// AttributeID identifies the CM message (kernel CM_*_ATTR_ID).
type AttributeID uint16

// CM attribute IDs (IBTA §12.6, table 102; ClassPortInfo is the generic
// §13.4.8.1 attribute).
const (
	AttrClassPortInfo AttributeID = 0x0001 // ClassPortInfo
	AttrREQ           AttributeID = 0x0010 // ConnectRequest
	AttrMRA           AttributeID = 0x0011 // MessageReceiptAcknowledgement
	AttrREJ           AttributeID = 0x0012 // ConnectReject
	AttrREP           AttributeID = 0x0013 // ConnectReply
	AttrRTU           AttributeID = 0x0014 // ReadyToUse
	AttrDREQ          AttributeID = 0x0015 // DisconnectRequest
	AttrDREP          AttributeID = 0x0016 // DisconnectReply
	AttrSIDRREQ       AttributeID = 0x0017 // ServiceIDResolutionRequest
	AttrSIDRREP       AttributeID = 0x0018 // ServiceIDResolutionResponse
	AttrLAP           AttributeID = 0x0019 // LoadAlternatePath
	AttrAPR           AttributeID = 0x001A // AlternatePathResponse
)

// attrNames is indexed by AttributeID - AttrREQ.
var attrNames = [...]string{"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP", "SIDR_REQ", "SIDR_REP", "LAP", "APR"}

// Known reports whether a is one of the CM attributes above.
func (a AttributeID) Known() bool {
	return a == AttrClassPortInfo || (a >= AttrREQ && a <= AttrAPR)
}

// String returns the message name as the kernel spells it ("REQ",
// "SIDR_REP", "ClassPortInfo"), or "Attribute(0xNNNN)".
func (a AttributeID) String() string {
	if a == AttrClassPortInfo {
		return "ClassPortInfo"
	}
	if a >= AttrREQ && a <= AttrAPR {
		return attrNames[a-AttrREQ]
	}
	return fmt.Sprintf("Attribute(%#04x)", uint16(a))
}

// Header holds the MAD common header fields a CM message may vary. The
// encoders write BaseVersion 1, class 0x07, class version 2, the
// message's method and AttributeID themselves, and zero the reserved
// bytes 18..19.
type Header struct {
	Status        uint16 // 0 for CM messages
	ClassSpecific uint16 // 0 for CM messages
	// TransactionID is the 64-bit TID; a reply reuses its request's.
	TransactionID uint64
	// AttributeModifier carries the ECE options in REQ, REP and
	// SIDR_REP (kernel cm_format_mad_ece_hdr); elsewhere Linux sends 0.
	AttributeModifier uint32
}

func (h *Header) put(p *mad, attr AttributeID, m Method) {
	p[hdrBaseVersion] = BaseVersion
	p[hdrMgmtClass] = ClassCM
	p[hdrClassVersion] = CMClassVersion
	p[hdrMethod] = byte(m)
	put16(p, hdrStatus, h.Status)
	put16(p, hdrClassSpecific, h.ClassSpecific)
	put64(p, hdrTransactionID, h.TransactionID)
	put16(p, hdrAttributeID, uint16(attr))
	put16(p, hdrReserved, 0)
	put32(p, hdrAttributeModifier, h.AttributeModifier)
}

func (h *Header) get(p *mad) {
	v := headerOf(p)
	h.Status = v.Status()
	h.ClassSpecific = v.ClassSpecific()
	h.TransactionID = v.TransactionID()
	h.AttributeModifier = v.AttributeModifier()
}

// HeaderView reads the 24-byte MAD common header of any class.
type HeaderView struct{ p *[HeaderSize]byte }

// ParseHeader views the first 24 bytes of b. It checks only the length.
func ParseHeader(b []byte) (HeaderView, error) {
	if len(b) < HeaderSize {
		return HeaderView{}, fmt.Errorf("mad header: %d bytes, need %d: %w", len(b), HeaderSize, ErrShortBuffer)
	}
	return HeaderView{(*[HeaderSize]byte)(b[:HeaderSize])}, nil
}

// BaseVersion is the 8-bit MAD format version; 1 for CM.
func (h HeaderView) BaseVersion() uint8 { return h.p[hdrBaseVersion] }

// MgmtClass is the 8-bit management class; ClassCM (0x07) for CM.
func (h HeaderView) MgmtClass() uint8 { return h.p[hdrMgmtClass] }

// ClassVersion is the 8-bit class version; 2 for CM.
func (h HeaderView) ClassVersion() uint8 { return h.p[hdrClassVersion] }

// Method is the 8-bit method (§13.4.5); Send for CM messages.
func (h HeaderView) Method() Method { return Method(h.p[hdrMethod]) }

// Status is the 16-bit MAD status; 0 in CM messages.
func (h HeaderView) Status() uint16 { return binary.BigEndian.Uint16(h.p[hdrStatus:]) }

// ClassSpecific is the 16-bit class-specific field; 0 in CM messages.
func (h HeaderView) ClassSpecific() uint16 {
	return binary.BigEndian.Uint16(h.p[hdrClassSpecific:])
}

// TransactionID is the 64-bit TID.
func (h HeaderView) TransactionID() uint64 {
	return binary.BigEndian.Uint64(h.p[hdrTransactionID:])
}

// AttributeID is the 16-bit attribute: which CM message this is.
func (h HeaderView) AttributeID() AttributeID {
	return AttributeID(binary.BigEndian.Uint16(h.p[hdrAttributeID:]))
}

// Reserved returns header bytes 18..19, which encoders write as zero.
func (h HeaderView) Reserved() uint16 { return binary.BigEndian.Uint16(h.p[hdrReserved:]) }

// AttributeModifier is the 32-bit attribute modifier: the ECE options
// in REQ, REP and SIDR_REP, else 0.
func (h HeaderView) AttributeModifier() uint32 {
	return binary.BigEndian.Uint32(h.p[hdrAttributeModifier:])
}

// Header returns the variable header fields.
func (h HeaderView) Header() Header {
	return Header{
		Status:            h.Status(),
		ClassSpecific:     h.ClassSpecific(),
		TransactionID:     h.TransactionID(),
		AttributeModifier: h.AttributeModifier(),
	}
}

// mad is the fixed-size form every view and encoder works on.
type mad = [MADSize]byte

func get16(p *mad, o int) uint16 { return binary.BigEndian.Uint16(p[o : o+2]) }
func get24(p *mad, o int) uint32 {
	return uint32(p[o])<<16 | uint32(p[o+1])<<8 | uint32(p[o+2])
}
func get32(p *mad, o int) uint32 { return binary.BigEndian.Uint32(p[o : o+4]) }
func get64(p *mad, o int) uint64 { return binary.BigEndian.Uint64(p[o : o+8]) }

func put16(p *mad, o int, v uint16) { binary.BigEndian.PutUint16(p[o:o+2], v) }
func put24(p *mad, o int, v uint32) {
	p[o], p[o+1], p[o+2] = byte(v>>16), byte(v>>8), byte(v)
}
func put32(p *mad, o int, v uint32) { binary.BigEndian.PutUint32(p[o:o+4], v) }
func put64(p *mad, o int, v uint64) { binary.BigEndian.PutUint64(p[o:o+8], v) }

func getGID(p *mad, o int) (g rdma.GID) { copy(g[:], p[o:o+16]); return }

func bit(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// getBits returns the width-bit field whose least significant bit is
// shift bits above bit 0 of b.
func getBits(b byte, shift, width uint) byte { return b >> shift & (1<<width - 1) }

// setBits returns the low width bits of v moved up by shift, to be ORed
// into the byte that holds them.
func setBits(v byte, shift, width uint) byte { return v & (1<<width - 1) << shift }

// getFlag returns the bit at shift in b.
func getFlag(b byte, shift uint) bool { return b>>shift&1 != 0 }

// setFlag returns f as a bit at shift.
func setFlag(f bool, shift uint) byte { return bit(f) << shift }

// cmData is the offset of the CM data area from the start of the MAD:
// the message offset constants are cmData + the IBTA table byte number
// (the kernel's CM_FIELD offsets).
const cmData = HeaderSize

// Widths of the multi-byte sub-word fields (QPN, EECN, PSN, vendor ID:
// 24 bits; flow label: 20 bits).
const (
	uint24Bits    = 24
	flowLabelBits = 20
)
