package uverbs

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/barrier"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// CompChannel is a completion event channel: an fd in the netpoller on
// which armed CQs report their next completion, or, made by
// CreateCompChannelBlocking, one read with a blocking read(2).
type CompChannel struct {
	ctx      *Context
	ev       *eventFile
	once     sync.Once
	err      error
	blocking bool // WaitBlocking only: the fd never joins the netpoller
	pass     schedPass
}

// CreateCompChannel creates a completion channel (CREATE_COMP_CHANNEL).
func (x *Context) CreateCompChannel() (*CompChannel, error) { return x.createCompChannel(false) }

func (x *Context) createCompChannel(blocking bool) (*CompChannel, error) {
	if err := x.lockOpen("create completion channel"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	var req abi.UverbsGetContext
	var resp abi.UverbsCreateCompChannelResp
	if err := x.exec(&cmd{num: abi.UverbsCmdCreateCompChannel, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp)}); err != nil {
		return nil, opErr("create completion channel", x.dev.Name, err)
	}
	ev, err := newEventFile(int(resp.FD), x.dev.Name+" completion channel")
	if err != nil {
		return nil, opErr("completion channel fd", x.dev.Name, err)
	}
	ev.blocking = blocking
	ch := &CompChannel{ctx: x, ev: ev, blocking: blocking}
	x.channels[ch] = struct{}{}
	return ch, nil
}

// Wait blocks until an armed CQ of this channel has a completion and
// returns it (ibv_get_cq_event, acknowledged). It reads one event: when
// several CQs reported, the next Wait returns the next one at once, with
// no read that finds the channel empty. Re-arm the CQ with RequestNotify
// and poll it again to close the race with completions that arrived
// meanwhile.
func (ch *CompChannel) Wait(ctx context.Context) ([]*CQ, error) {
	return ch.WaitInto(ctx, nil)
}

// WaitInto is Wait appending the CQs to dst[:0]: with room in dst it
// allocates nothing once warm, when ctx is the same on every call (a
// driver goroutine's) or cannot be cancelled.
func (ch *CompChannel) WaitInto(ctx context.Context, dst []*CQ) ([]*CQ, error) {
	if ch.blocking {
		return dst[:0], ch.blockingErr("wait on completion channel")
	}
	out := dst[:0]
	err := ch.ev.readOne(ctx, 8, func(b []byte) { out = ch.event(b, out) })
	if len(out) == 0 {
		return dst[:0], err
	}
	return out, nil
}

// event handles one event read from the channel: it appends the CQ it
// names to out, unless out has it or the CQ is gone.
func (ch *CompChannel) event(b []byte, out []*CQ) []*CQ {
	x := ch.ctx
	h := abi.Decode[abi.UverbsCompEventDesc](b).CQHandle
	x.mu.Lock()
	cq := x.cqs[h]
	x.mu.Unlock()
	if cq == nil {
		return out
	}
	if cq.eventer != nil {
		cq.mu.Lock()
		cq.eventer.event() // once per event read, as ibv_get_cq_event
		cq.mu.Unlock()
	}
	for _, seen := range out {
		if seen == cq {
			return out
		}
	}
	return append(out, cq)
}

// Close closes the channel fd, interrupting Wait, and WaitBlocking under
// a context that can end (see CreateCompChannelBlocking).
func (ch *CompChannel) Close() error {
	ch.once.Do(func() {
		ch.err = ch.ev.close()
		x := ch.ctx
		x.mu.Lock()
		delete(x.channels, ch)
		x.mu.Unlock()
	})
	return ch.err
}

// CQ is a completion queue.
type CQ struct {
	ctx     *Context
	handle  uint32
	uhandle uint64
	cqe     int
	channel *CompChannel
	ops     cqOps
	eventer cqEventer           // ops as a cqEventer, or nil: asserted once, not per event
	armer   cqArmer             // ops as a cqArmer, or nil: asserted once, not per arm
	notify  [2]*kcall.IoctlCall // prebuilt REQ_NOTIFY_CQ (INVOKE_WRITE), per solicitedOnly
	drv     any                 // provider state between cqData and newCQ
	// mu guards the ring, as libmlx5's cq->lock (a pthread spinlock
	// taken in mlx5_poll_cq): one locked instruction per Poll, where
	// sync.Mutex's Unlock is a second (LOCK XADD). Only short calls run
	// under it (Close's munmap, the REQ_NOTIFY_CQ ioctl); a waiter yields
	// its P after a few spins.
	mu     barrier.SpinLock
	closed bool // the ring is gone (guarded by mu)
	once   sync.Once
	err    error
}

// Handle is the user handle the kernel reports in events about this CQ.
func (cq *CQ) Handle() uint64 { return cq.uhandle }

// Size is the number of entries the kernel gave the CQ.
func (cq *CQ) Size() int { return cq.cqe }

// CreateCQ creates a CQ with at least cqe entries, reporting completion
// events on ch (nil for none) with the given completion vector (CQ/CREATE,
// or CREATE_CQ), and maps its ring when the provider shares one.
func (x *Context) CreateCQ(cqe int, ch *CompChannel, vector int) (*CQ, error) {
	if cqe < 1 {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "create CQ", Device: x.dev.Name, Err: fmt.Errorf("%w: %d entries", ErrInvalidArgument, cqe)}
	}
	if err := x.lockOpen("create CQ"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	cq := &CQ{ctx: x, uhandle: x.handle(), channel: ch}
	drvIn, drvOut, cmdCQE, err := x.prov.cqData(cq, cqe)
	if err != nil {
		return nil, err
	}
	chFD := int32(-1)
	if ch != nil {
		chFD = ch.ev.fd()
	}
	err = unix.ENOTTY
	if x.nativeIoctl {
		var respCQE [4]byte
		call := kcall.NewIoctl(abi.UverbsObjectCQ, abi.UverbsMethodCQCreate, x.driverID)
		h := call.IDR(abi.UverbsAttrCreateCQHandle, 0)
		call.Out(abi.UverbsAttrCreateCQRespCQE, respCQE[:])
		call.U32(abi.UverbsAttrCreateCQCQE, uint32(cmdCQE))
		call.U64(abi.UverbsAttrCreateCQUserHandle, cq.uhandle)
		if ch != nil {
			call.FD(abi.UverbsAttrCreateCQCompChannel, chFD)
		}
		call.U32(abi.UverbsAttrCreateCQCompVector, uint32(vector))
		if x.async != nil {
			call.Optional(call.FD(abi.UverbsAttrCreateCQEventFD, x.async.fd()))
		}
		if len(drvIn) > 0 {
			call.In(abi.UverbsAttrUHWIn, drvIn)
		}
		if len(drvOut) > 0 {
			call.Out(abi.UverbsAttrUHWOut, drvOut)
		}
		if err = x.do(call); err == nil {
			cq.handle = uint32(call.Data(h))
			cq.cqe = int(abi.Native.Uint32(respCQE[:]))
		}
	}
	if noMethod(err) {
		req := abi.UverbsCreateCQ{UserHandle: cq.uhandle, CQE: uint32(cmdCQE), CompVector: uint32(vector), CompChannel: chFD}
		var resp abi.UverbsCreateCQResp
		err = x.exec(&cmd{num: abi.UverbsCmdCreateCQ, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp), drvIn: drvIn, drvOut: drvOut})
		cq.handle, cq.cqe = resp.CQHandle, int(resp.CQE)
	}
	if err != nil {
		x.prov.cqAbort(cq)
		return nil, opErr("create CQ", x.dev.Name, err)
	}
	ops, err := x.prov.newCQ(cq, drvOut)
	if err != nil {
		x.destroyCQ(cq)
		return nil, err
	}
	cq.ops = ops
	cq.eventer, _ = ops.(cqEventer)
	cq.armer, _ = ops.(cqArmer)
	x.cqs[cq.uhandle] = cq
	return cq, nil
}

func (x *Context) destroyCQ(cq *CQ) error {
	var resp abi.UverbsDestroyCQResp
	return x.destroy(abi.UverbsObjectCQ, abi.UverbsMethodCQDestroy, abi.UverbsAttrDestroyCQHandle, cq.handle, abi.Bytes(&resp), func() error {
		req := abi.UverbsDestroyCQ{CQHandle: cq.handle}
		return x.exec(&cmd{num: abi.UverbsCmdDestroyCQ, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp)})
	})
}

// Close destroys the CQ and unmaps its ring. Destroy the QPs using it
// first (the kernel refuses with EBUSY).
func (cq *CQ) Close() error {
	cq.once.Do(func() {
		x := cq.ctx
		err := x.destroyCQ(cq)
		if err == nil && cq.ops != nil {
			// Under mu, so that no Poll or RequestNotify reads the ring
			// while it is unmapped; later ones find closed.
			cq.mu.Lock()
			cq.closed = true
			err = cq.ops.close()
			cq.mu.Unlock()
		}
		cq.err = opErr("destroy CQ", x.dev.Name, err)
		x.mu.Lock()
		delete(x.cqs, cq.uhandle)
		x.mu.Unlock()
	})
	return cq.err
}

// Poll copies up to len(wc) completions into wc and returns how many. It
// makes no syscall on providers with a shared ring (rxe).
func (cq *CQ) Poll(wc []WC) (int, error) {
	if cq.ops == nil {
		return 0, cq.pollErr(nil)
	}
	cq.mu.Lock()
	if cq.closed {
		cq.mu.Unlock()
		return 0, cq.pollErr(ErrClosed)
	}
	n := cq.ops.poll(wc)
	cq.mu.Unlock()
	if n < 0 {
		return 0, cq.pollErr(ErrInvalidArgument)
	}
	return n, nil
}

// pollErr is Poll's error for kind: ErrNotSupported (nil), ErrClosed,
// or ErrInvalidArgument (a CQE Poll could not parse). Out of line: built
// in Poll, the errors gave it a large frame and spills on every call.
//
//go:noinline
func (cq *CQ) pollErr(kind error) error {
	switch kind {
	case nil:
		return notSupported("poll CQ", cq.ctx.dev.Name, "no data path for provider "+cq.ctx.prov.name())
	case ErrInvalidArgument:
		return opErr("poll CQ", cq.ctx.dev.Name, fmt.Errorf("%w: completion for an unknown QP or of an unknown kind", ErrInvalidArgument))
	}
	return opErr("poll CQ", cq.ctx.dev.Name, kind)
}

// RequestNotify arms the CQ: the next completion (only solicited ones if
// solicitedOnly) queues one event on its channel (REQ_NOTIFY_CQ).
func (cq *CQ) RequestNotify(solicitedOnly bool) error {
	x := cq.ctx
	if a := cq.armer; a != nil {
		// mlx5: doorbell record and UAR write, no command.
		cq.mu.Lock()
		if cq.closed {
			cq.mu.Unlock()
			return opErr("arm CQ", cq.ctx.dev.Name, ErrClosed)
		}
		err := a.arm(solicitedOnly)
		cq.mu.Unlock()
		return err
	}
	solicited := uint32(0)
	if solicitedOnly {
		solicited = 1
	}
	// The request is built in the branches: a request that escapes to
	// the legacy path's heap would cost the prebuilt path an allocation
	// per arm.
	var err error
	if x.invokeWrite {
		// Re-armed on every event wait: a prebuilt INVOKE_WRITE whose
		// 8-byte request travels inline, so the call can be run again.
		cq.mu.Lock()
		call := cq.notify[solicited]
		if call == nil {
			req := abi.UverbsReqNotifyCQ{CQHandle: cq.handle, SolicitedOnly: solicited}
			call = kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodInvokeWrite, x.driverID)
			call.Const(abi.UverbsAttrWriteCmd, uint64(abi.UverbsCmdReqNotifyCQ))
			call.In(abi.UverbsAttrCoreIn, abi.Bytes(&req))
			cq.notify[solicited] = call
		}
		x.stats.ioctls.Add(1)
		err = call.Do(x.fd)
		cq.mu.Unlock()
	} else {
		req := abi.UverbsReqNotifyCQ{CQHandle: cq.handle, SolicitedOnly: solicited}
		err = x.exec(&cmd{num: abi.UverbsCmdReqNotifyCQ, in: abi.Bytes(&req)})
	}
	if err != nil {
		return opErr("request CQ notification", x.dev.Name, err)
	}
	return nil
}

// WCFlags are work completion flags (enum ib_uverbs_wc_flags).
type WCFlags uint32

// Completion flags.
const (
	WCWithGRH WCFlags = 1 << 0
	WCWithImm WCFlags = 1 << 1
	WCWithInv WCFlags = 1 << 3
)

// WC is a work completion (struct ib_uverbs_wc).
type WC struct {
	ID        uint64
	Status    rdma.WCStatus
	Opcode    rdma.WCOpcode
	VendorErr uint32
	ByteLen   uint32
	// Imm is the immediate data in host order (valid with WCWithImm).
	Imm          uint32
	QPNum        uint32
	SrcQP        uint32
	Flags        WCFlags
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	PortNum      uint8
}
