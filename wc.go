package rdmacm

import "fmt"

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

// WCStatus is a work completion status (IBTA vol. 1 §11.6.2; the values
// of enum ibv_wc_status).
type WCStatus uint32

// The statuses.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1  // a message longer than the receive
	WCLocQPOpErr     WCStatus = 2  // a work request the QP cannot run
	WCLocProtErr     WCStatus = 4  // a local address outside its MR
	WCWRFlushErr     WCStatus = 5  // flushed: the QP is in the error state
	WCBadRespErr     WCStatus = 7  // an unexpected response from the peer
	WCLocAccessErr   WCStatus = 8  // local access flags
	WCRemInvReqErr   WCStatus = 9  // the peer found the request invalid
	WCRemAccessErr   WCStatus = 10 // a wrong rkey, range or remote access
	WCRemOpErr       WCStatus = 11 // the peer could not complete it
	WCRetryExcErr    WCStatus = 12 // transport retries exceeded
	WCRNRRetryExcErr WCStatus = 13 // the peer had no receive posted, RNR retries exceeded
	WCGeneralErr     WCStatus = 21
)

var wcStatusNames = map[WCStatus]string{
	0: "success", 1: "local length error", 2: "local QP operation error", 3: "local EE context operation error",
	4: "local protection error", 5: "work request flushed", 6: "memory management operation error",
	7: "bad response error", 8: "local access error", 9: "remote invalid request error",
	10: "remote access error", 11: "remote operation error", 12: "transport retry counter exceeded",
	13: "RNR retry counter exceeded", 14: "local RDD violation error", 15: "remote invalid RD request",
	16: "operation aborted", 17: "invalid EE context number", 18: "invalid EE context state",
	19: "fatal error", 20: "response timeout error", 21: "general error",
}

func (s WCStatus) String() string {
	if n, ok := wcStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("WCStatus(%d)", uint32(s))
}

// WCOpcode is the operation a completion reports (enum ibv_wc_opcode).
type WCOpcode uint32

// The opcodes of the endpoint's operations.
const (
	WCSend            WCOpcode = 0   // PostSend, PostSendImm
	WCRDMAWrite       WCOpcode = 1   // PostWrite, PostWriteImm
	WCRDMARead        WCOpcode = 2   // PostRead
	WCRecv            WCOpcode = 128 // a receive of a send
	WCRecvRDMAWithImm WCOpcode = 129 // a receive of a PostWriteImm's immediate data
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "send"
	case WCRDMAWrite:
		return "RDMA write"
	case WCRDMARead:
		return "RDMA read"
	case WCRecv:
		return "receive"
	case WCRecvRDMAWithImm:
		return "receive of RDMA write with immediate"
	}
	return fmt.Sprintf("WCOpcode(%d)", uint32(o))
}

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
