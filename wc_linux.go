package rdmacm

import (
	"fmt"

	"github.com/go-rdma/rdmacm/uverbs"
)

// WC is a work completion. ID is the offset given to the post (the work
// request ID); Err tells whether it failed.
type WC struct {
	uverbs.WC
}

// Err returns nil for a successful completion and otherwise a *WCError.
func (wc WC) Err() error {
	if wc.Status == uverbs.WCSuccess {
		return nil
	}
	return &WCError{Status: wc.Status, VendorErr: wc.VendorErr, ID: wc.ID}
}

// WCError is a failed work completion. It matches ErrCompletion and the
// sentinel of its status:
//
//   - ErrTimeout: transport or RNR retries exceeded (the peer is gone or
//     posts no receives).
//   - ErrPermission: a local or remote protection or access error (wrong
//     rkey, address outside the remote MR, missing access flags).
//   - ErrInvalidArgument: local length error (a message longer than the
//     receive buffer), invalid request at the remote.
//   - ErrDisconnected: flushed, the QP is in the error state (the
//     connection ended).
type WCError struct {
	Status    uverbs.WCStatus
	VendorErr uint32
	ID        uint64
}

func (e *WCError) Error() string {
	return fmt.Sprintf("rdmacm: work request %d: %v (vendor error %#x)", e.ID, e.Status, e.VendorErr)
}

// Is matches ErrCompletion and the status's sentinel.
func (e *WCError) Is(target error) bool {
	return target == ErrCompletion || (target != nil && target == wcSentinel(e.Status))
}

func wcSentinel(s uverbs.WCStatus) error {
	switch s {
	case uverbs.WCRetryExcErr, uverbs.WCRNRRetryExcErr:
		return ErrTimeout
	case uverbs.WCLocProtErr, uverbs.WCLocAccessErr, uverbs.WCRemAccessErr:
		return ErrPermission
	case uverbs.WCLocLenErr, uverbs.WCRemInvReqErr:
		return ErrInvalidArgument
	case uverbs.WCWRFlushErr:
		return ErrDisconnected
	}
	return nil
}
