package rdma

import "fmt"

// WCStatus is a work completion's status (IBTA vol. 1 §11.6.2; the values
// of enum ibv_wc_status).
type WCStatus uint32

// The statuses a completion can carry.
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

var wcStatusNames = [...]string{
	"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "work request flushed", "memory management operation error",
	"bad response error", "local access error", "remote invalid request error",
	"remote access error", "remote operation error", "transport retry counter exceeded",
	"RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
	"operation aborted", "invalid EE context number", "invalid EE context state",
	"fatal error", "response timeout error", "general error",
}

func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("WCStatus(%d)", uint32(s))
}

// WCOpcode is the operation a completion reports (enum ibv_wc_opcode).
type WCOpcode uint32

// The opcodes: the requester's, then the responder's (bit 7 set).
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCRecv            WCOpcode = 128 // a receive of a send
	WCRecvRDMAWithImm WCOpcode = 129 // a receive of an RDMA write's immediate data
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "send"
	case WCRDMAWrite:
		return "RDMA write"
	case WCRDMARead:
		return "RDMA read"
	case WCCompSwap:
		return "compare and swap"
	case WCFetchAdd:
		return "fetch and add"
	case WCRecv:
		return "receive"
	case WCRecvRDMAWithImm:
		return "receive of RDMA write with immediate"
	}
	return fmt.Sprintf("WCOpcode(%d)", uint32(o))
}
