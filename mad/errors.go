package mad

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps one of them;
// match with errors.Is. Field-level errors are *FieldError values that
// wrap the sentinel and name the field and its byte offset.
var (
	// ErrShortBuffer: the input or output buffer is shorter than needed
	// (256 bytes for a MAD, 36 for the IP private-data header).
	ErrShortBuffer = errors.New("mad: buffer too short")
	// ErrBadBaseVersion: MAD BaseVersion is not 1.
	ErrBadBaseVersion = errors.New("mad: base version is not 1")
	// ErrWrongClass: MgmtClass is not the CM class 0x07.
	ErrWrongClass = errors.New("mad: management class is not CM (0x07)")
	// ErrBadClassVersion: ClassVersion is not 2, the version Linux and
	// IBTA 1.2+ CMs speak.
	ErrBadClassVersion = errors.New("mad: CM class version is not 2")
	// ErrBadMethod: a CM message not sent with Send, or ClassPortInfo
	// with a method other than Get, Set or GetResp.
	ErrBadMethod = errors.New("mad: method not allowed for attribute")
	// ErrUnknownAttribute: AttributeID is not a CM attribute.
	ErrUnknownAttribute = errors.New("mad: unknown CM attribute")
	// ErrWrongAttribute: a typed parser (ParseREQ, ...) got another
	// message.
	ErrWrongAttribute = errors.New("mad: unexpected attribute")
	// ErrReservedTransport: REQ TransportServiceType 3 without the XRC
	// extended transport type; IBTA defines TST 3 only together with an
	// extended transport type, and Linux maps any other to no QP type.
	ErrReservedTransport = errors.New("mad: reserved transport service type")
	// ErrReservedValue: an enumerated field holds a value the kernel
	// refuses (MRA MessageMRAed 3: cm_acquire_mraed_id drops the MAD).
	ErrReservedValue = errors.New("mad: reserved enumeration value")
	// ErrFieldRange: a builder field does not fit its wire width.
	ErrFieldRange = errors.New("mad: field value out of range")
	// ErrPrivateDataTooLong: private data longer than the message's field.
	ErrPrivateDataTooLong = errors.New("mad: private data too long")
	// ErrInfoTooLong: REJ ARI, APR or SIDR_REP additional information
	// longer than its 72-byte field.
	ErrInfoTooLong = errors.New("mad: additional information too long")
	// ErrReservedNonZero: CheckReserved found a reserved bit set.
	ErrReservedNonZero = errors.New("mad: reserved bits not zero")
	// ErrBadCMAVersion: rdma_cm IP private-data header version is not 0
	// (the kernel's cma_ib_req_handler refuses it with EINVAL).
	ErrBadCMAVersion = errors.New("mad: rdma_cm header version is not 0")
	// ErrBadIPVersion: rdma_cm IP header IP version is not 4 or 6 (the
	// kernel then treats the private data as AF_IB, without a header).
	ErrBadIPVersion = errors.New("mad: rdma_cm header IP version is not 4 or 6")
)

// FieldError reports a problem with one field. Offset is the byte
// offset from the start of the MAD (or of the IP header for IPHeader).
type FieldError struct {
	Attr   AttributeID // message; 0 for IPHeader
	Field  string      // struct field name, e.g. "Primary.FlowLabel"
	Offset int         // byte offset of the field
	Value  uint64      // offending value
	Err    error       // sentinel wrapped
}

// Error returns the sentinel's text followed by the message, field,
// offset and value.
func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s %s (offset %d, value %#x)", e.Err, e.Attr, e.Field, e.Offset, e.Value)
}

// Unwrap returns the sentinel, for errors.Is.
func (e *FieldError) Unwrap() error { return e.Err }

// widthChecker collects the first field that does not fit its width.
type widthChecker struct {
	attr AttributeID
	err  error
}

func (c *widthChecker) check(field string, off int, v uint64, bits uint) {
	if c.err == nil && v>>bits != 0 {
		c.fail(field, off, v, ErrFieldRange)
	}
}

func (c *widthChecker) fail(field string, off int, v uint64, err error) {
	if c.err == nil {
		c.err = &FieldError{Attr: c.attr, Field: field, Offset: off, Value: v, Err: err}
	}
}
