package qp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-rdma/rdmacm/rdma"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrIllegalTransition: the state machine has no such transition.
	ErrIllegalTransition = errors.New("qp: illegal state transition")
	// ErrMissingAttr: the mask lacks an attribute the transition requires.
	ErrMissingAttr = errors.New("qp: missing required attribute")
	// ErrForbiddenAttr: the mask has an attribute the transition does not allow.
	ErrForbiddenAttr = errors.New("qp: attribute not allowed")
	// ErrInvalidArgument: an attribute value is out of its range (package
	// rdma's sentinel; the error is a *ValueError).
	ErrInvalidArgument = rdma.ErrInvalidArgument
	// ErrUnknownType: the QP type is not one this package covers.
	ErrUnknownType = errors.New("qp: unknown QP type")
)

// TransitionError describes a Modify QP request the state table rejects.
// It matches ErrIllegalTransition, ErrMissingAttr or ErrForbiddenAttr
// (both of the last two when both lists are non-empty).
type TransitionError struct {
	Type     QPType
	From, To State
	// Illegal is set when the table has no From→To transition.
	Illegal bool
	// Missing are required attributes absent from the mask.
	Missing Mask
	// Forbidden are mask bits the transition does not allow.
	Forbidden Mask
}

func (e *TransitionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "qp: %v %v→%v: ", e.Type, e.From, e.To)
	if e.Illegal {
		b.WriteString("illegal transition")
		return b.String()
	}
	if e.Missing != 0 {
		b.WriteString("missing ")
		b.WriteString(strings.Join(e.Missing.Names(), ", "))
	}
	if e.Forbidden != 0 {
		if e.Missing != 0 {
			b.WriteString("; ")
		}
		b.WriteString("not allowed ")
		b.WriteString(strings.Join(e.Forbidden.Names(), ", "))
	}
	return b.String()
}

// Is reports whether target is a sentinel this error matches.
func (e *TransitionError) Is(target error) bool {
	switch target {
	case ErrIllegalTransition:
		return e.Illegal
	case ErrMissingAttr:
		return e.Missing != 0
	case ErrForbiddenAttr:
		return e.Forbidden != 0
	}
	return false
}

// ValueError reports an attribute value outside its range. It matches
// ErrInvalidArgument.
type ValueError struct {
	// Field names the attribute: a mask name, or MASK.FIELD for a part
	// of an address vector ("AV.SL", "ALT_PATH.PORT").
	Field    string
	Value    uint64
	Min, Max uint64
}

func (e *ValueError) Error() string {
	if e.Min == e.Max {
		return fmt.Sprintf("qp: %s = %d, want %d", e.Field, e.Value, e.Min)
	}
	return fmt.Sprintf("qp: %s = %d, want %d..%d", e.Field, e.Value, e.Min, e.Max)
}

// Is reports whether target is ErrInvalidArgument.
func (e *ValueError) Is(target error) bool { return target == ErrInvalidArgument }

// Validate checks a Modify QP mask for a QP of type t moving from one state
// to the other, as the kernel's ib_modify_qp_is_ok does, before any syscall.
// Without MaskState the QP stays where it is, so from must equal to.
func Validate(t QPType, from, to State, mask Mask) error {
	if !t.Known() {
		return fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	if !from.Valid() {
		return &ValueError{Field: "CUR_STATE", Value: uint64(from), Max: uint64(Err)}
	}
	if !to.Valid() {
		return &ValueError{Field: "STATE", Value: uint64(to), Max: uint64(Err)}
	}
	if from != to && mask&MaskState == 0 {
		return &TransitionError{Type: t, From: from, To: to, Missing: MaskState}
	}
	if !legal[from][to] {
		return &TransitionError{Type: t, From: from, To: to, Illegal: true}
	}
	set := rules[from][to][t]
	missing := set.required &^ mask
	forbidden := mask &^ (set.required | set.optional | MaskState)
	if missing != 0 || forbidden != 0 {
		return &TransitionError{Type: t, From: from, To: to, Missing: missing, Forbidden: forbidden}
	}
	return nil
}

// Check validates a whole Modify QP request on a QP of type t believed to
// be in state cur: the transition and mask (Validate), then the ranges of
// the values the mask selects. Like the kernel, it takes the current state
// from a.CurState when the mask has MaskCurState, and the next state from
// a.State when the mask has MaskState (otherwise the state is unchanged).
// A nil a is read as the zero Attr.
func Check(t QPType, cur State, a *Attr, mask Mask) error {
	if a == nil {
		a = &Attr{}
	}
	from := cur
	if mask&MaskCurState != 0 {
		from = a.CurState
	}
	to := from
	if mask&MaskState != 0 {
		to = a.State
	}
	if err := Validate(t, from, to, mask); err != nil {
		return err
	}
	return checkValues(a, mask)
}

// Field widths from IBTA vol. 1: PSN and QPN 24 bits (§9.2 BTH), SL 4 bits,
// flow label 20 bits (§8.3 GRH), local ACK timeout and RNR timer 5 bits,
// retry counts 3 bits (chapter 12 CM REQ fields).
const (
	maxPSN       = 1<<24 - 1
	maxQPN       = 1<<24 - 1
	maxSL        = 15
	maxFlowLabel = 1<<20 - 1
	maxTimer     = 31
	maxRetry     = 7
)

// outOfRange returns a ValueError for prefix+field when v is outside
// lo..hi; the name is only built on failure.
func outOfRange(prefix, field string, v, lo, hi uint64) error {
	if v < lo || v > hi {
		return &ValueError{Field: prefix + field, Value: v, Min: lo, Max: hi}
	}
	return nil
}

func checkAH(prefix string, ah *AH) error {
	if err := outOfRange(prefix, ".PORT", uint64(ah.PortNum), 1, 255); err != nil {
		return err
	}
	if err := outOfRange(prefix, ".SL", uint64(ah.SL), 0, maxSL); err != nil {
		return err
	}
	return outOfRange(prefix, ".FLOW_LABEL", uint64(ah.GRH.FlowLabel), 0, maxFlowLabel)
}

// valueChecks are the ranges of the plain fields checkValues checks, in
// mask order; attrValue reads each one.
var valueChecks = [...]struct {
	bit    Mask
	name   string
	lo, hi uint64
}{
	// The kernel rejects port 0 (rdma_is_port_valid in uverbs modify_qp).
	{MaskPort, "PORT", 1, 255},
	{MaskPathMTU, "PATH_MTU", uint64(rdma.MTU256), uint64(rdma.MTU4096)},
	{MaskTimeout, "TIMEOUT", 0, maxTimer},
	{MaskRetryCnt, "RETRY_CNT", 0, maxRetry},
	{MaskRNRRetry, "RNR_RETRY", 0, maxRetry},
	{MaskRQPSN, "RQ_PSN", 0, maxPSN},
	{MaskMinRNRTimer, "MIN_RNR_TIMER", 0, maxTimer},
	{MaskSQPSN, "SQ_PSN", 0, maxPSN},
	{MaskPathMigState, "PATH_MIG_STATE", uint64(Migrated), uint64(Armed)},
	{MaskDestQPN, "DEST_QPN", 0, maxQPN},
}

// valueCheckMask is every bit of valueChecks.
var valueCheckMask = func() (m Mask) {
	for _, c := range valueChecks {
		m |= c.bit
	}
	return m
}()

// attrValue is the field of a that bit selects, for valueChecks.
func attrValue(a *Attr, bit Mask) uint64 {
	switch bit {
	case MaskPort:
		return uint64(a.Port)
	case MaskPathMTU:
		return uint64(a.PathMTU)
	case MaskTimeout:
		return uint64(a.Timeout)
	case MaskRetryCnt:
		return uint64(a.RetryCnt)
	case MaskRNRRetry:
		return uint64(a.RNRRetry)
	case MaskRQPSN:
		return uint64(a.RQPSN)
	case MaskMinRNRTimer:
		return uint64(a.MinRNRTimer)
	case MaskSQPSN:
		return uint64(a.SQPSN)
	case MaskPathMigState:
		return uint64(a.PathMigState)
	case MaskDestQPN:
		return uint64(a.DestQPN)
	}
	return 0
}

// checkValues checks the ranges of the fields selected by mask. Only the
// selected fields are read: a transition to ERR or RESET (mask STATE
// alone) checks nothing here: building every field's check on every
// Modify was a tenth of a QP's user-space instructions.
func checkValues(a *Attr, mask Mask) error {
	if mask&valueCheckMask != 0 {
		for i := range valueChecks {
			c := &valueChecks[i]
			if mask&c.bit == 0 {
				continue
			}
			if err := outOfRange("", c.name, attrValue(a, c.bit), c.lo, c.hi); err != nil {
				return err
			}
		}
	}
	if mask&MaskAV != 0 {
		if err := checkAH("AV", &a.AH); err != nil {
			return err
		}
	}
	if mask&MaskAltPath != 0 {
		alt := &a.AltPath
		if err := checkAH("ALT_PATH.AV", &alt.AH); err != nil {
			return err
		}
		// uverbs modify_qp wants alt_port_num == alt_dest.port_num.
		p := uint64(alt.AH.PortNum)
		if err := outOfRange("ALT_PATH", ".PORT", uint64(alt.PortNum), p, p); err != nil {
			return err
		}
		if err := outOfRange("ALT_PATH", ".TIMEOUT", uint64(alt.Timeout), 0, maxTimer); err != nil {
			return err
		}
	}
	return nil
}
