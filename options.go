package rdmacm

import (
	"fmt"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
)

// Defaults of the zero EndpointOptions fields.
const (
	DefaultRetryCount    = 7  // librdmacm's retry count
	DefaultRNRRetryCount = 7  // librdmacm's RNR retry count: retry forever
	DefaultMaxWR         = 16 // work requests per queue
)

// EndpointOptions configure Dial, Listen and the endpoints they make. A
// nil *EndpointOptions and every zero field mean the default; a negative
// value sets a count to zero. (The CM counts map onto cm.ConnParam, whose
// zero fields also mean librdmacm's defaults: a negative value here
// becomes cm.RetryNone or cm.ResourcesNone there.)
type EndpointOptions struct {
	// Backend is the CM: "" (rdma.BackendAuto), rdma.BackendKernel or
	// rdma.BackendUser.
	Backend rdma.Backend

	// MaxSendWR and MaxRecvWR size the work queues (0: DefaultMaxWR).
	MaxSendWR, MaxRecvWR int
	// MaxInline is the largest send the QP copies into the work request
	// (IBV_SEND_INLINE); PostSend and PostSendImm of at most this many
	// bytes go inline. 0: none.
	MaxInline int

	// RetryCount and RNRRetryCount are the transport and RNR retry counts,
	// 0..7 (0: 7, librdmacm's default; negative: 0). RNR 7 means retry
	// forever. They travel in the REQ or REP, as librdmacm's: RNRRetryCount
	// is how often the peer's QP resends a message this side had no
	// receive posted for.
	RetryCount, RNRRetryCount int
	// ResponderResources and InitiatorDepth are the RDMA READs (and
	// atomics) the QP serves and issues at once, 1..254 (0: the device's
	// maximum, librdmacm's default; negative: 0).
	ResponderResources, InitiatorDepth int

	// PrivateData goes in the REQ (Dial, at most 56 bytes) or the REP
	// (Accept, at most 196 bytes). Setup can choose it per connection.
	PrivateData []byte

	// Setup, if set, runs for each connection once its device is known:
	// it sees the peer's REQ private data (Accept), may register memory
	// on the connection's device, and may give the connection its own
	// private data, the caller's QP and a hook that posts receives before
	// the REQ or REP leaves. See SetupFunc and ConnSetup.
	Setup SetupFunc

	// RecvSlots and RecvSlotSize, when RecvSlots > 0, make every endpoint
	// register RecvSlots*RecvSlotSize bytes for receives (Endpoint.RecvMR)
	// and post one receive per slot while its QP is in INIT, before the
	// REQ or the REP leaves, so that a peer that sends at once finds them
	// (a client with RNR retry count 0 included). A receive posted after
	// Dial or Accept returns can come after the peer's first message, which
	// then waits out an RNR NAK: 655 ms with the CM's min_rnr_timer of 0.
	// A slot's completion has its offset as ID; repost it with
	// PostRecv(ep.RecvMR(), int(wc.ID), RecvSlotSize). RecvSlotSize 0
	// posts zero-length receives, for immediate data only (RecvMR is then
	// nil).
	RecvSlots, RecvSlotSize int

	// ECE asks for Enhanced Connection Establishment (rdma_set_local_ece):
	// what Dial offers in the REQ, and the local value the Accept side
	// answers with. With the endpoint's own QP it is given to the QP
	// (ibv_set_ece) and Dial or Accept fails with ErrNotSupported on a
	// device whose provider has no ECE (rxe; Listen on such a device, with
	// no Setup, fails at once): a value the device does not apply is never
	// sent. With the caller's QP (ConnSetup.QP) it is sent
	// as given, as librdmacm does; what the QP applied is its QueryECE.
	// nil: the QP's own ECE where its provider has one (mlx5), else none.
	ECE *ece.ECE
	// ECEReply computes the REP's ECE from the REQ's offer and the local
	// ECE (nil: ece.LibrdmacmReply) where the QP reports none itself. A
	// reply with vendor 0 declines the offer. The endpoint's own QP on a
	// device without ECE declines every offer.
	ECEReply ece.ReplyPolicy

	// Spin is the number of extra polls a completion wait makes before it
	// arms the CQ and sleeps (0: none).
	Spin int

	// ThreadWait makes WaitSend and WaitRecv sleep in the kernel, as a C
	// program's ibv_get_cq_event does, instead of in the netpoller: one
	// blocking read(2) of the completion channel when the wait's context
	// never ends and the queue waited on has work requests posted (which
	// complete, or are flushed when the connection ends), else a ppoll(2)
	// that the context's end interrupts, then the read. The netpoller's
	// wait costs a read that finds nothing, epoll_pwait and handoffs
	// between threads. A sleeping wait holds an OS thread, so ThreadWait
	// suits a program with few busy connections, not thousands of idle
	// ones, and short waits: with more than one P the runtime takes the
	// P of a thread 10 ms in one syscall, so a wait that begins 5 ms or
	// more after the last one began sleeps in ppoll slices of 5 ms, which
	// still costs about twice the netpoller's syscalls on a wait of 20
	// ms. It applies to the endpoint's own CQs, not to shared ones
	// (SendCQ, RecvCQ).
	ThreadWait bool

	// SendCQ and RecvCQ, when set, are shared CQs (NewCQ) the endpoint's
	// send or receive queue completes on, in place of its own; its
	// completions of that queue then come from the CQ's Next, named by
	// WC.QPNum (the endpoint's QPNum()). A CQ may serve both queues
	// and any number of endpoints on one device. Listen's options give
	// them to every accepted endpoint.
	SendCQ, RecvCQ *CQ

	// SRQ, when set, is a shared receive queue (NewSRQ) that every
	// endpoint's QP receives from in place of a receive queue of its own:
	// a fan-in server whose receive memory does not grow with the number
	// of connections. RecvCQ must be set too, and hold the SRQ's slots:
	// the receives of all endpoints complete there (CQ.Next), WC.QPNum
	// naming the endpoint, WC.ID the slot (SRQ.Data, SRQ.PostRecv).
	// MaxRecvWR and RecvSlots do not apply and must be 0, and
	// Endpoint.PostRecv fails with ErrInvalidArgument. Listen's options
	// give it to every accepted endpoint; Dial's work the same.
	SRQ *SRQ

	// ErrorQPOnClose makes an endpoint with the caller's QP (ConnSetup.QP)
	// move it to ERR, flushing its work requests, when the
	// connection ends (Close, Disconnect, the peer's disconnect); the QP
	// is never destroyed. Without it the endpoint leaves the QP's state
	// alone once connected. Endpoints with their own QP always do this.
	ErrorQPOnClose bool
}

// config is EndpointOptions with the defaults applied and the ranges
// checked.
type config struct {
	backend        rdma.Backend
	sendWR, recvWR uint32
	inline         uint32
	retry, rnr     uint8
	resp, init     uint8 // 0xff: the device's maximum (cm.MaxResources)
	privateData    []byte
	ece            *ece.ECE
	reply          ece.ReplyPolicy
	spin           int
	threadWait     bool
	sendCQ, recvCQ *CQ
	srq            *SRQ
	errQPOnClose   bool
	setup          SetupFunc
	recvSlots      int
	recvSlotSize   int
}

const maxResources = 0xff // cm.MaxResources

func count(name string, v, def, max int) (int, error) {
	switch {
	case v == 0:
		return def, nil
	case v < 0:
		return 0, nil
	case v > max:
		return 0, fmt.Errorf("rdmacm: %s %d out of range 0..%d: %w", name, v, max, ErrInvalidArgument)
	}
	return v, nil
}

func (o *EndpointOptions) config() (config, error) {
	if o == nil {
		o = &EndpointOptions{}
	}
	c := config{backend: o.Backend, privateData: o.PrivateData, ece: o.ECE, reply: o.ECEReply, spin: max(o.Spin, 0), threadWait: o.ThreadWait,
		sendCQ: o.SendCQ, recvCQ: o.RecvCQ, srq: o.SRQ, errQPOnClose: o.ErrorQPOnClose, setup: o.Setup}
	if c.backend == "" {
		c.backend = rdma.BackendAuto
	}
	if c.reply == nil {
		c.reply = ece.LibrdmacmReply
	}
	if c.ece != nil {
		if err := c.ece.Validate(); err != nil {
			return config{}, wrapErr("EndpointOptions.ECE", err)
		}
	}
	var err error
	get := func(name string, v, def, max int) uint32 {
		n, e := count(name, v, def, max)
		if err == nil {
			err = e
		}
		return uint32(n)
	}
	c.sendWR = get("MaxSendWR", o.MaxSendWR, DefaultMaxWR, 1<<20)
	c.recvWR = get("MaxRecvWR", o.MaxRecvWR, DefaultMaxWR, 1<<20)
	c.inline = get("MaxInline", o.MaxInline, 0, 1<<16)
	c.retry = uint8(get("RetryCount", o.RetryCount, DefaultRetryCount, 7))
	c.rnr = uint8(get("RNRRetryCount", o.RNRRetryCount, DefaultRNRRetryCount, 7))
	c.resp = uint8(get("ResponderResources", o.ResponderResources, maxResources, 254))
	c.init = uint8(get("InitiatorDepth", o.InitiatorDepth, maxResources, 254))
	if o.RecvSlots < 0 || o.RecvSlotSize < 0 || o.RecvSlots > 1<<20 || o.RecvSlotSize > 1<<30 {
		return config{}, fmt.Errorf("rdmacm: RecvSlots %d of %d bytes out of range: %w", o.RecvSlots, o.RecvSlotSize, ErrInvalidArgument)
	}
	c.recvSlots, c.recvSlotSize = o.RecvSlots, o.RecvSlotSize
	if err != nil {
		return config{}, err
	}
	if err := o.checkSRQ(); err != nil {
		return config{}, err
	}
	if c.recvSlots > int(c.recvWR) {
		if o.MaxRecvWR != 0 {
			return config{}, fmt.Errorf("rdmacm: RecvSlots %d over MaxRecvWR %d: %w", c.recvSlots, c.recvWR, ErrInvalidArgument)
		}
		c.recvWR = uint32(c.recvSlots)
	}
	if c.sendWR == 0 || c.recvWR == 0 {
		return config{}, fmt.Errorf("rdmacm: a work queue of 0 entries: %w", ErrInvalidArgument)
	}
	return c, nil
}

// checkSRQ checks what goes with EndpointOptions.SRQ.
func (o *EndpointOptions) checkSRQ() error {
	s := o.SRQ
	switch {
	case s == nil:
		return nil
	case o.RecvCQ == nil:
		return fmt.Errorf("rdmacm: EndpointOptions.SRQ without RecvCQ: the shared receive queue's receives complete on one shared CQ (NewCQ): %w", ErrInvalidArgument)
	case o.MaxRecvWR != 0 || o.RecvSlots != 0:
		return fmt.Errorf("rdmacm: EndpointOptions.SRQ with MaxRecvWR %d and RecvSlots %d: an endpoint on a shared receive queue has no receive queue of its own; size the SRQ (NewSRQ): %w",
			o.MaxRecvWR, o.RecvSlots, ErrInvalidArgument)
	case s.Slots() > o.RecvCQ.Entries():
		// An overrun CQ is a fatal device error: every slot may complete
		// before the application polls.
		return fmt.Errorf("rdmacm: EndpointOptions.SRQ of %d slots on a RecvCQ of %d entries: the CQ must hold every slot's completion: %w",
			s.Slots(), o.RecvCQ.Entries(), ErrInvalidArgument)
	}
	return nil
}
