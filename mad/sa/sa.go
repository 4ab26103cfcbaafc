// Package sa encodes and decodes the Subnet Administration MADs a CM
// needs to find an InfiniBand path: PathRecord queries (SubnAdmGet and
// SubnAdmGetTable) and their responses (IBTA vol. 1 §15.2.5.16), and runs
// such a query as a sans-I/O state machine (Resolver) that a driver feeds
// with the clock and the MADs it receives from the SM's LID on QP1.
//
// Layout: the 24-byte MAD common header, the 12-byte RMPP header, the
// 20-byte SA header (SM_Key, AttributeOffset, reserved, ComponentMask)
// and 200 bytes of data; a PathRecord is 64 bytes. Bit positions follow
// the Linux kernel's sa_query.c path_rec_table (offset_bits count from
// the most significant bit of each big-endian 32-bit word).
//
// As in package mad, views over []byte parse (ParseQuery, ParseResponse:
// the header is validated once), structs build (Query, Response: every
// reserved bit is written as zero and a field wider than its wire field
// is refused), and no input makes a parser panic.
package sa

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// Wire constants.
const (
	// MgmtClass is the Subnet Administration class.
	MgmtClass = 0x03
	// ClassVersion is the SA class version Linux and IBTA 1.2+ speak.
	ClassVersion = 2
	// AttrPathRecord is the PathRecord attribute ID.
	AttrPathRecord = 0x0035
	// MADSize is the size of one SA MAD.
	MADSize = 256
	// HeaderSize is the MAD, RMPP and SA headers together; data follows.
	HeaderSize = 56
	// DataSize is the data area of one MAD.
	DataSize = MADSize - HeaderSize
	// PathRecordSize is the size of a PathRecord on the wire.
	PathRecordSize = 64
	// GSIQKey is the Q_Key of QP1, which SA MADs are sent to.
	GSIQKey = 0x80010000
	// saHeaderSize is the part of the headers RMPP's payload length
	// counts (the SA header) before the records.
	saHeaderSize = 20
)

// Method is a SubnAdm method.
type Method uint8

// The methods of a PathRecord query and its answers.
const (
	MethodGet          Method = 0x01
	MethodGetResp      Method = 0x81
	MethodGetTable     Method = 0x12
	MethodGetTableResp Method = 0x92
)

func (m Method) String() string {
	switch m {
	case MethodGet:
		return "SubnAdmGet"
	case MethodGetResp:
		return "SubnAdmGetResp"
	case MethodGetTable:
		return "SubnAdmGetTable"
	case MethodGetTableResp:
		return "SubnAdmGetTableResp"
	}
	return fmt.Sprintf("method 0x%02x", uint8(m))
}

// CompMask says which fields of a query's record the SA must match.
type CompMask uint64

// PathRecord component mask bits (kernel IB_SA_PATH_REC_*).
const (
	CompServiceID              CompMask = 3 << 0
	CompDGID                   CompMask = 1 << 2
	CompSGID                   CompMask = 1 << 3
	CompDLID                   CompMask = 1 << 4
	CompSLID                   CompMask = 1 << 5
	CompRawTraffic             CompMask = 1 << 6
	CompFlowLabel              CompMask = 1 << 8
	CompHopLimit               CompMask = 1 << 9
	CompTrafficClass           CompMask = 1 << 10
	CompReversible             CompMask = 1 << 11
	CompNumbPath               CompMask = 1 << 12
	CompPKey                   CompMask = 1 << 13
	CompQoSClass               CompMask = 1 << 14
	CompSL                     CompMask = 1 << 15
	CompMTUSelector            CompMask = 1 << 16
	CompMTU                    CompMask = 1 << 17
	CompRateSelector           CompMask = 1 << 18
	CompRate                   CompMask = 1 << 19
	CompPacketLifeTimeSelector CompMask = 1 << 20
	CompPacketLifeTime         CompMask = 1 << 21
	CompPreference             CompMask = 1 << 22
)

// CMCompMask is the mask the rdma_cm's route query sends
// (cma_query_ib_route): both GIDs, the P_Key, one reversible path, and
// the service ID.
const CMCompMask = CompDGID | CompSGID | CompPKey | CompNumbPath | CompReversible | CompServiceID

// Selector qualifies MTU, Rate and PacketLifeTime in a query.
type Selector uint8

// Selectors (IBTA table 205).
const (
	GreaterThan Selector = 0
	LessThan    Selector = 1
	Exactly     Selector = 2
	Largest     Selector = 3
)

// SA status codes: MAD status bits 8-14 (IBTA table 197).
const (
	StatusNoResources            = 1
	StatusReqInvalid             = 2
	StatusNoRecords              = 3
	StatusTooManyRecords         = 4
	StatusInvalidGID             = 5
	StatusInsufficientComponents = 6
	StatusDenied                 = 7
)

// Sentinel errors of the codec; a status error is a *StatusError.
var (
	// ErrShortBuffer: fewer bytes than a MAD, or than the records a
	// response announces.
	ErrShortBuffer = errors.New("sa: buffer too short")
	// ErrNotSA: base version not 1, class not 0x03 or class version not 2.
	ErrNotSA = errors.New("sa: not a Subnet Administration MAD of class version 2")
	// ErrBadMethod: a query that is not Get or GetTable, or a response
	// that is not GetResp or GetTableResp.
	ErrBadMethod = errors.New("sa: unexpected method")
	// ErrWrongAttribute: not a PathRecord.
	ErrWrongAttribute = errors.New("sa: not a PathRecord")
	// ErrBadRMPP: a table response whose RMPP header is not one active
	// DATA transfer, or whose attribute offset or payload length do not
	// hold whole records.
	ErrBadRMPP = errors.New("sa: bad RMPP or attribute offset")
	// ErrFieldRange: a builder field does not fit its wire width.
	ErrFieldRange = errors.New("sa: field value out of range")
)

// StatusError is a response with a nonzero MAD status. It matches
// rdma.ErrNoRoute for no records, rdma.ErrBusy for busy or no resources,
// rdma.ErrInvalidArgument for an invalid request and rdma.ErrPermission
// for a denied one.
type StatusError struct {
	Status uint16
}

func (e *StatusError) Error() string {
	s := "sa: the SA answered status " + fmt.Sprintf("0x%04x", e.Status)
	if w := statusText(e.Status); w != "" {
		s += " (" + w + ")"
	}
	return s
}

func statusText(st uint16) string {
	switch st >> 8 & 0x7f {
	case StatusNoResources:
		return "no resources"
	case StatusReqInvalid:
		return "invalid request"
	case StatusNoRecords:
		return "no records"
	case StatusTooManyRecords:
		return "too many records"
	case StatusInvalidGID:
		return "invalid GID"
	case StatusInsufficientComponents:
		return "insufficient components"
	case StatusDenied:
		return "request denied"
	}
	switch {
	case st&1 != 0:
		return "busy"
	case st>>2&7 != 0:
		return "bad method or attribute"
	}
	return ""
}

// Is maps the status to the rdma sentinel that fits it.
func (e *StatusError) Is(target error) bool {
	switch code := e.Status >> 8 & 0x7f; {
	case target == rdma.ErrNoRoute:
		return code == StatusNoRecords
	case target == rdma.ErrBusy:
		return code == StatusNoResources || e.Status&1 != 0
	case target == rdma.ErrInvalidArgument:
		return code == StatusReqInvalid || code == StatusInvalidGID || code == StatusInsufficientComponents || e.Status>>2&7 != 0
	case target == rdma.ErrPermission:
		return code == StatusDenied
	}
	return false
}

// MAD offsets.
const (
	offBaseVersion  = 0
	offClass        = 1
	offClassVersion = 2
	offMethod       = 3
	offStatus       = 4
	offTID          = 8
	offAttrID       = 16
	offRMPPVersion  = 24
	offRMPPType     = 25
	offRMPPFlags    = 26
	offRMPPStatus   = 27
	offRMPPSegment  = 28
	offRMPPPayload  = 32
	// rmppSegPayload is one RMPP segment's payload: the MAD after the
	// RMPP header (SA header and data).
	rmppSegPayload = MADSize - 36
	offSMKey       = 36
	offAttrOffset  = 44
	offCompMask    = 48
)

// RMPP values of a one-segment table response.
const (
	rmppVersion = 1
	rmppData    = 1
	// rmppActive, rmppFirst and rmppLast are the low bits of the flags
	// byte; its top five bits are the response time.
	rmppActive = 1
	rmppFirst  = 2
	rmppLast   = 4
)

func be16(b []byte, o int) uint16 { return binary.BigEndian.Uint16(b[o:]) }
func be32(b []byte, o int) uint32 { return binary.BigEndian.Uint32(b[o:]) }
func be64(b []byte, o int) uint64 { return binary.BigEndian.Uint64(b[o:]) }

// checkHeader validates what every SA MAD shares.
func checkHeader(b []byte) error {
	switch {
	case len(b) < MADSize:
		return fmt.Errorf("%w: %d bytes, need %d", ErrShortBuffer, len(b), MADSize)
	case b[offBaseVersion] != 1 || b[offClass] != MgmtClass || b[offClassVersion] != ClassVersion:
		return fmt.Errorf("%w: base version %d, class 0x%02x, class version %d", ErrNotSA,
			b[offBaseVersion], b[offClass], b[offClassVersion])
	case be16(b, offAttrID) != AttrPathRecord:
		return fmt.Errorf("%w: attribute 0x%04x", ErrWrongAttribute, be16(b, offAttrID))
	}
	return nil
}

// putHeader writes the MAD, RMPP and SA headers, all else zero.
func putHeader(b []byte, m Method, status uint16, tid, smKey uint64, mask CompMask) {
	clear(b[:MADSize])
	b[offBaseVersion], b[offClass], b[offClassVersion], b[offMethod] = 1, MgmtClass, ClassVersion, byte(m)
	binary.BigEndian.PutUint16(b[offStatus:], status)
	binary.BigEndian.PutUint64(b[offTID:], tid)
	binary.BigEndian.PutUint16(b[offAttrID:], AttrPathRecord)
	binary.BigEndian.PutUint64(b[offSMKey:], smKey)
	binary.BigEndian.PutUint64(b[offCompMask:], uint64(mask))
}
