package uverbs

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// CreateCompChannelBlocking creates a completion channel that is read
// with a blocking read(2), as ibv_get_cq_event reads it: the fd stays
// blocking and never joins the netpoller, so a wait is one syscall (the
// read), where the netpoller's wait is a read that finds nothing, an
// epoll_pwait and the handoffs between the threads that make them.
//
// Wait it with WaitBlocking only (Wait and WaitInto refuse). A wait on
// such a channel takes no context and cannot be interrupted: the caller
// ends it by making an event arrive, that is a completion on a CQ of the
// channel armed with RequestNotify (moving a QP to ERR flushes its posted
// work requests into completions; posting a send makes one). Nor may
// Close run while a WaitBlocking is in progress: Linux keeps the file
// open until the read returns, so Close would not end the wait, and the
// fd's number could be given to another file meanwhile. A caller that
// closes the channel must first know that no wait is in progress, by
// construction (a lock every waiter holds, say).
func (x *Context) CreateCompChannelBlocking() (*CompChannel, error) {
	return x.createCompChannel(true)
}

// WaitBlocking blocks in read(2) until an armed CQ of this channel has a
// completion, and returns it appended to dst[:0] (ibv_get_cq_event,
// acknowledged). It reads one event, so a second armed CQ's event is
// left for the next call. The read runs on the runtime's syscall path:
// the goroutine's thread blocks in the kernel and the runtime gives its P
// to another thread meanwhile. Every few milliseconds it first passes
// through the scheduler (runtime.Gosched), so that the runtime does not
// take the P at every wait of a loop that never yields (schedPass). It
// allocates nothing once warm when dst has room. See CreateCompChannelBlocking for how a wait ends; re-arm the
// CQ with RequestNotify and poll it again after, as with Wait.
func (ch *CompChannel) WaitBlocking(dst []*CQ) ([]*CQ, error) {
	if !ch.blocking {
		return dst[:0], ch.blockingErr("wait blocking on completion channel")
	}
	ch.pass.maybe()
	e := ch.ev
	r := e.getRead()
	defer e.spare.Store(r)
	if err := e.readBlocking(r); err != nil {
		return dst[:0], opErr("wait on completion channel", ch.ctx.dev.Name, err)
	}
	out := dst[:0]
	if r.n == 8 {
		out = ch.event(r.buf[:8], out)
	}
	return out, nil
}

// blockingErr is the error of a wait of the wrong kind for the channel.
func (ch *CompChannel) blockingErr(op string) error {
	kind := "made by CreateCompChannel: use Wait"
	if ch.blocking {
		kind = "made by CreateCompChannelBlocking: use WaitBlocking"
	}
	return opErr(op, ch.ctx.dev.Name, fmt.Errorf("%w: the channel is %s", ErrInvalidArgument, kind))
}

// readBlocking reads one event from a blocking file into r. A signal
// may end the read with EINTR when its handler lacks SA_RESTART (the
// runtime's have it; a C library's may not): then it reads again.
func (e *eventFile) readBlocking(r *eventRead) error {
	fd := e.fd()
	if fd < 0 {
		return ErrClosed
	}
	for {
		r.n, r.err = kcall.Read(int(fd), r.buf[:])
		if r.err != unix.EINTR {
			return r.err
		}
	}
}
