package rdmacm

import (
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// WC is a work completion of one of an endpoint's work requests.
type WC struct {
	// ID is the offset given to the post (the work request ID).
	ID uint64
	// Status is WCSuccess, or why the work request failed (see Err).
	Status WCStatus
	// Opcode is the operation that completed.
	Opcode WCOpcode
	// ByteLen is the length received (receives) or read (RDMA READ).
	ByteLen uint32
	// Imm is the immediate data in host order, valid when HasImm.
	Imm    uint32
	HasImm bool
	// QPNum is the number of the endpoint's QP (Endpoint.QPNum); it names
	// the endpoint of a completion from a shared CQ.
	QPNum uint32
	// VendorErr is the device's own error code of a failed completion.
	VendorErr uint32
}

// Err returns nil for a successful completion and otherwise a *WCError.
// WaitSend, WaitRecv and CQ.Next return it as their error.
func (wc WC) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &WCError{Status: wc.Status, VendorErr: wc.VendorErr, ID: wc.ID}
}

// WCStatus is a work completion's status: package rdma's type, named
// here so that an endpoint's program needs no second import for it.
type WCStatus = rdma.WCStatus

// The statuses (rdma's).
const (
	WCSuccess        = rdma.WCSuccess
	WCLocLenErr      = rdma.WCLocLenErr
	WCLocQPOpErr     = rdma.WCLocQPOpErr
	WCLocProtErr     = rdma.WCLocProtErr
	WCWRFlushErr     = rdma.WCWRFlushErr
	WCBadRespErr     = rdma.WCBadRespErr
	WCLocAccessErr   = rdma.WCLocAccessErr
	WCRemInvReqErr   = rdma.WCRemInvReqErr
	WCRemAccessErr   = rdma.WCRemAccessErr
	WCRemOpErr       = rdma.WCRemOpErr
	WCRetryExcErr    = rdma.WCRetryExcErr
	WCRNRRetryExcErr = rdma.WCRNRRetryExcErr
	WCGeneralErr     = rdma.WCGeneralErr
)

// WCOpcode is the operation a completion reports: package rdma's type.
type WCOpcode = rdma.WCOpcode

// The opcodes of the endpoint's operations (rdma's).
const (
	WCSend            = rdma.WCSend
	WCRDMAWrite       = rdma.WCRDMAWrite
	WCRDMARead        = rdma.WCRDMARead
	WCRecv            = rdma.WCRecv
	WCRecvRDMAWithImm = rdma.WCRecvRDMAWithImm
)

// WCError is a failed work completion. It matches ErrCompletion, an
// equal *WCError, and the sentinel of its status:
//
//   - ErrTimeout: transport or RNR retries exceeded (the peer is gone or
//     posts no receives).
//   - ErrPermission: a local or remote protection or access error (wrong
//     rkey, address outside the remote MR, missing access flags).
//   - ErrInvalidArgument: local length error (a message longer than the
//     receive buffer), invalid request at the remote.
//   - ErrDisconnected: flushed, the QP is in the error state.
type WCError struct {
	Status    WCStatus
	VendorErr uint32
	ID        uint64
}

func (e *WCError) Error() string {
	return fmt.Sprintf("rdmacm: work request %d: %v (vendor error %#x)", e.ID, e.Status, e.VendorErr)
}

// Is matches ErrCompletion, the status's sentinel and a *WCError with the
// same fields (so the error of a wait and its WC.Err match each other).
func (e *WCError) Is(target error) bool {
	if t, ok := target.(*WCError); ok {
		return t != nil && *t == *e
	}
	return target == ErrCompletion || (target != nil && target == wcSentinel(e.Status))
}

func wcSentinel(s WCStatus) error {
	switch s {
	case WCRetryExcErr, WCRNRRetryExcErr:
		return ErrTimeout
	case WCLocProtErr, WCLocAccessErr, WCRemAccessErr:
		return ErrPermission
	case WCLocLenErr, WCRemInvReqErr:
		return ErrInvalidArgument
	case WCWRFlushErr:
		return ErrDisconnected
	}
	return nil
}
