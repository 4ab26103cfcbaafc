package uverbs

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// CreateCompChannelBlocking creates a completion channel that is read
// with a blocking read(2), as ibv_get_cq_event reads it: the fd stays
// blocking and never joins the netpoller, so a wait is one syscall (the
// read), where the netpoller's wait is a read that finds nothing, an
// epoll_pwait and the handoffs between the threads that make them.
//
// Wait it with WaitBlocking only (Wait and WaitInto refuse). A wait under
// a context that never ends is that one read, which only an event ends:
// the caller ends it by making one arrive, that is a completion on a CQ
// of the channel armed with RequestNotify (moving a QP to ERR flushes its
// posted work requests into completions; posting a send makes one). A
// wait under a context that can end sleeps in ppoll(2) on the channel and
// an eventfd instead, two syscalls per wait, and the context's end or
// Close ends it; so does a wait that begins 5 ms or more after the one
// before it began, whatever its context, when GOMAXPROCS is over 1 (the
// runtime takes the P of a thread 10 ms in one syscall even with Ps
// idle: a wait that may be long sleeps 5 ms at a time). Close never
// closes the fd under a read in progress: the last wait closes it on its
// way out.
func (x *Context) CreateCompChannelBlocking() (*CompChannel, error) {
	return x.createCompChannel(true)
}

// WaitBlocking blocks until an armed CQ of this channel has a completion,
// and returns it appended to dst[:0] (ibv_get_cq_event, acknowledged), or
// until ctx ends. It reads one event, so a second armed CQ's event is
// left for the next call; waits take turns. With a ctx that never ends
// (Done is nil) the wait is one blocking read(2), which neither Close nor
// anything but an event ends (see CreateCompChannelBlocking); with one
// that can end, or 5 ms or more after the last wait began with
// GOMAXPROCS over 1, ppoll(2) (in slices of 5 ms with GOMAXPROCS over 1)
// that ctx's end and Close interrupt, then the read. Either runs on the
// runtime's syscall path: the goroutine's thread blocks in the kernel
// and the runtime gives its P to another thread meanwhile. Every few
// milliseconds a wait first passes through the scheduler
// (runtime.Gosched), so that the runtime does not take the P at every
// wait of a loop that never yields (schedPass). It allocates nothing
// once warm when dst has room and ctx is the same on every call or never
// ends. Re-arm the CQ with RequestNotify and poll it again after, as
// with Wait.
func (ch *CompChannel) WaitBlocking(ctx context.Context, dst []*CQ) ([]*CQ, error) {
	if !ch.blocking {
		return dst[:0], ch.blockingErr("wait blocking on completion channel")
	}
	if err := ctx.Err(); err != nil {
		return dst[:0], err
	}
	now := int64(time.Since(epoch)) // the wait's one clock reading
	ch.pass.maybeAt(now)
	e := ch.ev
	if err := e.hold(ctx); err != nil {
		return dst[:0], err
	}
	e.long = e.lastStart != 0 && now-e.lastStart >= int64(pollSlice)
	e.lastStart = now
	r := e.getRead()
	// With one P the runtime takes it at every syscall it sees (no P is
	// idle), so slices would only take it more often.
	var err error
	if ctx.Done() == nil && (!e.long || runtime.GOMAXPROCS(0) == 1) {
		err = e.readBlocking(r)
	} else {
		err = e.pollRead(ctx, r)
	}
	out := dst[:0]
	if err == nil && r.n == 8 {
		out = ch.event(r.buf[:8], out)
	}
	e.spare.Store(r)
	e.release()
	if err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, opErr("wait on completion channel", ch.ctx.dev.Name, err)
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

// hold takes the blocking file's turn, then counts the wait as one that
// holds its fds (release undoes both).
func (e *eventFile) hold(ctx context.Context) error {
	if err := e.takeTurn(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		e.giveTurn()
		return ErrClosed
	}
	e.holders++
	return nil
}

// release ends a wait that hold began; the last one after Close closes
// the fds.
func (e *eventFile) release() {
	e.mu.Lock()
	e.holders--
	last := e.holders == 0 && e.closed.Load()
	e.mu.Unlock()
	e.giveTurn()
	if last {
		e.closeFDs()
	}
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

// pollSlice bounds each ppoll(2) of a wait: the runtime takes the P of
// a thread in one syscall for 10 ms (sysmon), idle Ps or not, and then
// polls at its shortest period for a while; a wait in slices under that,
// passing through the scheduler between them, keeps its P.
const pollSlice = schedPassPeriod

// pollRead waits in ppoll(2) until the blocking file has an event, then
// reads it; ctx's end and Close write the kick eventfd, which ends the
// ppoll. With more than one P it sleeps pollSlice at a time. A kick left
// over from an earlier wait only makes this one poll again.
func (e *eventFile) pollRead(ctx context.Context, r *eventRead) error {
	e.mu.Lock()
	if e.kick < 0 {
		k, err := kcall.Eventfd()
		if err != nil {
			e.mu.Unlock()
			return err
		}
		e.kick = k
	}
	kick := e.kick
	e.mu.Unlock()
	if ctx.Done() != nil {
		e.watch(ctx)
		defer func() {
			e.mu.Lock()
			e.waiting = false
			e.mu.Unlock()
		}()
	}
	fd := e.fd()
	for fd >= 0 && ctx.Err() == nil {
		r.fds = [2]kcall.PollFD{{FD: fd, Events: kcall.PollIn}, {FD: int32(kick), Events: kcall.PollIn}}
		slice := int64(pollSlice)
		if runtime.GOMAXPROCS(0) == 1 {
			slice = -1
		}
		n, err := kcall.Ppoll(r.fds[:], slice)
		switch {
		case err != nil && err != unix.EINTR:
			return err
		case n == 0 && err == nil:
			runtime.Gosched() // a slice ended: the pass that keeps the P
		}
		if r.fds[1].Revents != 0 {
			kcall.Read(kick, r.buf[:8]) // reset the count
		}
		if r.fds[0].Revents != 0 {
			return e.readBlocking(r) // ready (or failed): the read does not block
		}
		fd = e.fd()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return ErrClosed
}

// kickLocked ends a cancellable wait's ppoll (e.mu held).
func (e *eventFile) kickLocked() {
	if e.kick >= 0 {
		kcall.Write(e.kick, kickCount[:])
	}
}

// kickCount is what a kick adds to the eventfd's count: any count but 0
// wakes.
var kickCount = [8]byte{1}
