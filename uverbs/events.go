package uverbs

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// eventFile is a kernel event fd (completion channel or async events) in
// the Go netpoller: non-blocking, registered through os.NewFile, read
// through its RawConn so that a read that would block parks the goroutine
// until epoll reports the fd readable. Readiness is edge-triggered, but
// the poller reads before it parks, so an event left unread is found by
// the next wait at once: a completion channel is read one event per wait
// (readOne), as ibv_get_cq_event does, and only the rare async events are
// drained until EAGAIN (readAll).
//
// The fd joins the netpoller on the first wait, not at creation: making
// it non-blocking and registering it costs four syscalls (two fcntl in
// SetNonblock, os.NewFile's F_GETFL, epoll_ctl ADD) and one more on close
// (epoll_ctl DEL). librdmacm's rdma_create_qp makes two completion
// channels per QP that most programs never read (cmtime among them);
// ibv_create_comp_channel makes no syscall beyond the command.
type eventFile struct {
	name string
	// blocking: read only with readBlocking, so the fd stays blocking
	// and never joins the netpoller.
	blocking bool
	// kick is a blocking file's eventfd, made by its first cancellable
	// wait (-1 before): a write to it ends that wait's ppoll. holders
	// counts the waits in progress (under mu): close leaves the fds to
	// the last of them, so that no fd number is reused under a read.
	kick    int
	holders int
	// long: a blocking file's wait in progress (or last) began a
	// pollSlice or more after the one before it, at lastStart (ns since
	// epoch), so it sleeps in slices even under a context that never
	// ends: the time since the last start stands for the last wait's
	// length, with one clock reading per wait (only the wait holding the
	// turn touches them).
	long      bool
	lastStart int64

	reg sync.Mutex // guards raw, f and rc
	raw int        // the fd until it joins the netpoller, -1 after
	num int32      // the fd's number, which joining the netpoller keeps
	f   *os.File
	rc  syscall.RawConn

	closed atomic.Bool
	mu     sync.Mutex // guards the fields below and deadline changes
	// The context whose cancellation interrupts a wait stays registered
	// (context.AfterFunc) across waits, so a waiter that passes the same
	// context every time (a driver goroutine) allocates nothing per wait.
	cancelCtx  context.Context
	stopCancel func() bool
	waiting    bool // a cancellable wait is in progress
	deadline   bool // a cancellation set the read deadline in the past

	// One wait at a time: busy is the turn, taken by a compare-and-swap;
	// a wait that finds it taken counts itself in queued and sleeps on
	// wake (one slot), which giveTurn fills when someone is queued. The
	// uncontended turn is two atomics, where a channel's send and receive
	// each take the runtime's channel lock.
	busy   atomic.Bool
	queued atomic.Int32
	wake   chan struct{}

	// spare is an eventRead kept for the next wait: one slot, not a
	// sync.Pool, whose per-P cache misses when a syscall moves the
	// goroutine to another P.
	spare atomic.Pointer[eventRead]
}

// eventRead is one wait's read state, reused through eventFile.spare: its read
// method value is made once, so a wait allocates no closure.
type eventRead struct {
	buf [32]byte // the largest event: ib_uverbs_async_event_desc, 16 bytes
	n   int
	err error
	fds [2]kcall.PollFD // a blocking file's ppoll: the file, its kick
	// read and control are readFD as the poller's Read and Control want
	// it, made once per eventRead.
	read    func(fd uintptr) bool
	control func(fd uintptr)
}

func (r *eventRead) readFD(fd uintptr) bool {
	r.n, r.err = kcall.Read(int(fd), r.buf[:])
	return r.err != unix.EAGAIN
}

func (e *eventFile) getRead() *eventRead {
	if r := e.spare.Swap(nil); r != nil {
		return r
	}
	r := new(eventRead)
	r.read = r.readFD
	r.control = func(fd uintptr) { r.readFD(fd) }
	return r
}

func newEventFile(fd int, name string) (*eventFile, error) {
	if fd < 0 {
		return nil, unix.EBADF
	}
	return &eventFile{name: name, raw: fd, num: int32(fd), kick: -1, wake: make(chan struct{}, 1)}, nil
}

// poller registers the fd with the netpoller once and returns its RawConn.
func (e *eventFile) poller() (syscall.RawConn, error) {
	e.reg.Lock()
	defer e.reg.Unlock()
	if e.rc != nil {
		return e.rc, nil
	}
	if e.raw < 0 {
		return nil, os.ErrClosed
	}
	if e.blocking {
		return nil, unix.EINVAL
	}
	if err := unix.SetNonblock(e.raw, true); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(e.raw), e.name)
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	e.raw, e.f, e.rc = -1, f, rc
	return rc, nil
}

// fd is the descriptor number, for ioctl FD attributes and create
// commands; valid while the file is open. os.NewFile keeps the number, so
// it is read without the lock and the poller, which ran on every CQ and QP
// create. -1 once closed.
func (e *eventFile) fd() int32 {
	if e.closed.Load() {
		return -1
	}
	return e.num
}

func (e *eventFile) close() error {
	e.mu.Lock()
	e.closed.Store(true) // under mu, which release reads it under
	if e.stopCancel != nil {
		e.stopCancel()
		e.stopCancel, e.cancelCtx = nil, nil
	}
	if e.blocking && e.holders > 0 {
		e.kickLocked() // a cancellable wait leaves its ppoll
		e.mu.Unlock()
		return nil // the last wait closes the fds (release)
	}
	e.mu.Unlock()
	return e.closeFDs()
}

// closeFDs closes the fd, and the kick eventfd if any.
func (e *eventFile) closeFDs() error {
	e.mu.Lock()
	if e.kick >= 0 {
		kcall.Close(e.kick)
		e.kick = -1
	}
	e.mu.Unlock()
	e.reg.Lock()
	defer e.reg.Unlock()
	if e.f != nil {
		return e.f.Close()
	}
	if e.raw < 0 {
		return os.ErrClosed
	}
	fd := e.raw
	e.raw = -1
	return unix.Close(fd)
}

// tryRead reads one event into r without blocking; ok is false on EAGAIN.
func (e *eventFile) tryRead(r *eventRead) (ok bool, err error) {
	rc, err := e.poller()
	if err != nil {
		return false, e.closedErr(err)
	}
	if cerr := rc.Control(r.control); cerr != nil {
		return false, e.closedErr(cerr)
	}
	if r.err == unix.EAGAIN {
		return false, nil
	}
	if r.err != nil {
		return false, r.err
	}
	return true, nil
}

// takeTurn waits for the file's turn or ctx's end.
func (e *eventFile) takeTurn(ctx context.Context) error {
	if e.busy.CompareAndSwap(false, true) {
		return nil
	}
	// queued is counted before the second try, and giveTurn clears busy
	// before it reads queued: one of the two sees the other (sync/atomic
	// is sequentially consistent), so no release goes unnoticed.
	e.queued.Add(1)
	defer e.queued.Add(-1)
	for !e.busy.CompareAndSwap(false, true) {
		select {
		case <-e.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// giveTurn ends the turn that takeTurn took and wakes a queued wait. A
// wake that finds the turn taken again leaves that wait queued; the
// taker's giveTurn wakes it.
func (e *eventFile) giveTurn() {
	e.busy.Store(false)
	if e.queued.Load() > 0 {
		select {
		case e.wake <- struct{}{}:
		default: // a wake is pending already
		}
	}
}

// wait blocks until one event is read into r or ctx ends. Closing the
// file interrupts it with ErrClosed. Waits take turns (the poller
// serialises reads of one file anyway), so the read deadline that a
// cancellation sets concerns only the wait in progress.
func (e *eventFile) wait(ctx context.Context, r *eventRead) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rc, err := e.poller()
	if err != nil {
		return e.closedErr(err)
	}
	if err := e.takeTurn(ctx); err != nil {
		return err
	}
	defer e.giveTurn()
	cancellable := ctx.Done() != nil
	if cancellable {
		e.watch(ctx)
	}
	err = rc.Read(r.read)
	if cancellable {
		e.mu.Lock()
		e.waiting = false
		if e.deadline {
			e.deadline = false
			e.f.SetReadDeadline(time.Time{})
		}
		e.mu.Unlock()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return e.closedErr(err)
	}
	return r.err
}

// watch makes ctx's cancellation interrupt the wait in progress: it wakes
// the parked read by setting the read deadline in the past. The
// registration stays for the next wait on the same context, so a driver
// goroutine that always passes one context allocates nothing per wait.
func (e *eventFile) watch(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waiting = true
	if e.cancelCtx != ctx {
		if e.stopCancel != nil {
			e.stopCancel()
		}
		e.cancelCtx = ctx
		e.stopCancel = context.AfterFunc(ctx, func() {
			e.mu.Lock()
			if e.cancelCtx == ctx && e.waiting {
				e.interruptLocked()
			}
			e.mu.Unlock()
		})
	}
	// A cancellation between the caller's check and waiting = true found
	// no wait in progress.
	if ctx.Err() != nil {
		e.interruptLocked()
	}
}

// interruptLocked wakes the parked read, or a blocking file's ppoll
// (e.mu held).
func (e *eventFile) interruptLocked() {
	if e.blocking {
		e.kickLocked()
		return
	}
	e.deadline = true
	e.f.SetReadDeadline(time.Unix(1, 0))
}

// closedErr maps the poller's error after Close (os.ErrClosed, or
// internal/poll's "use of closed file") to ErrClosed.
func (e *eventFile) closedErr(err error) error {
	if e.closed.Load() || errors.Is(err, os.ErrClosed) {
		return opError("read events", "", ErrClosed)
	}
	return err
}

// readOne waits for one event and calls fn with it when it is size bytes
// (at most 32). It allocates nothing once warm when fn does not escape.
func (e *eventFile) readOne(ctx context.Context, size int, fn func([]byte)) error {
	r := e.getRead()
	defer e.spare.Store(r)
	if err := e.wait(ctx, r); err != nil {
		return err
	}
	if r.n == size {
		fn(r.buf[:size])
	}
	return nil
}

// readAll waits for the first event, then drains the fd until EAGAIN,
// calling fn for each event of size bytes (at most 32). It allocates
// nothing once warm when fn does not escape.
func (e *eventFile) readAll(ctx context.Context, size int, fn func([]byte)) error {
	r := e.getRead()
	defer e.spare.Store(r)
	if err := e.wait(ctx, r); err != nil {
		return err
	}
	for {
		if r.n == size {
			fn(r.buf[:size])
		}
		ok, err := e.tryRead(r)
		if err != nil || !ok {
			return err
		}
	}
}
