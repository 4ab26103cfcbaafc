package rdmacm

import "github.com/go-rdma/rdmacm/uverbs"

// SetupFunc sets up one connection (EndpointOptions.Setup). It runs once
// the connection's device is known, before its QP exists: when dialing,
// before the REQ is built; when accepting, on the peer's REQ, whose
// private data is ep.PrivateData(). ep's RegMsgs, RegRead and RegWrite
// work (memory whose RemoteBuf goes in ConnSetup.PrivateData, say), and
// ep.PD() is the device's protection domain for the caller's QP; nothing
// else of ep works yet. An error ends the dial, or rejects the request
// and is Accept's error.
type SetupFunc func(ep *Endpoint) (ConnSetup, error)

// ConnSetup is what a SetupFunc returns; every field is optional.
type ConnSetup struct {
	// QP is the caller's QP, used in place of the endpoint's own: an RC QP
	// of ep.PD(), in RESET. The endpoint moves it through INIT, RTR and RTS
	// with the CM's attributes; its completions go to the caller's CQs,
	// so WaitSend and WaitRecv fail with ErrInvalidArgument (the Post
	// methods work), and EndpointOptions' SendCQ, RecvCQ and work queue
	// sizes do not apply. Close never destroys it; it moves it to ERR
	// only with EndpointOptions.ErrorQPOnClose.
	QP *uverbs.QP
	// PrivateData goes in this connection's REQ (at most 56 bytes) or REP
	// (at most 196) in place of EndpointOptions.PrivateData.
	PrivateData []byte
	// AtInit runs once the QP is in INIT, before the REQ or the REP leaves
	// and so before the peer can send: the time to post receives
	// (librdmacm's rdma_get_request, rdma_post_recv, rdma_accept order).
	// ep is the endpoint being set up, the one Setup saw; its Post methods
	// work, its waits do not yet. An error fails the connection.
	AtInit func(ep *Endpoint) error
	// Abort runs when the connection fails after the SetupFunc returned:
	// the time to release what it made, the QP included.
	Abort func()
}
