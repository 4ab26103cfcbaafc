package uverbs

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// eventFile is a kernel event fd (completion channel or async events) in
// the Go netpoller: non-blocking, registered through os.NewFile, read
// through its RawConn so that a read that would block parks the goroutine
// until epoll reports the fd readable. Readiness is edge-triggered, so
// readers drain until EAGAIN (readAll) instead of trusting one read per
// wake-up.
//
// The fd joins the netpoller on the first wait, not at creation: making
// it non-blocking and registering it costs four syscalls (two fcntl in
// SetNonblock, os.NewFile's F_GETFL, epoll_ctl ADD) and one more on close
// (epoll_ctl DEL). librdmacm's rdma_create_qp makes two completion
// channels per QP that most programs never read (cmtime among them);
// ibv_create_comp_channel makes no syscall beyond the command.
type eventFile struct {
	name string

	reg sync.Mutex // guards raw, f and rc
	raw int        // the fd until it joins the netpoller, -1 after
	f   *os.File
	rc  syscall.RawConn

	closed atomic.Bool
	mu     sync.Mutex // serialises deadline changes
	gen    uint64     // bumps per wait so a late cancel cannot hit the next one
}

func newEventFile(fd int, name string) (*eventFile, error) {
	if fd < 0 {
		return nil, unix.EBADF
	}
	return &eventFile{name: name, raw: fd}, nil
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
// commands; valid while the file is open.
func (e *eventFile) fd() int32 {
	e.reg.Lock()
	defer e.reg.Unlock()
	if e.rc == nil {
		return int32(e.raw)
	}
	var n int32 = -1
	e.rc.Control(func(fd uintptr) { n = int32(fd) })
	return n
}

func (e *eventFile) close() error {
	e.closed.Store(true)
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

// tryRead reads one event without blocking; ok is false on EAGAIN.
func (e *eventFile) tryRead(buf []byte) (n int, ok bool, err error) {
	rc, err := e.poller()
	if err != nil {
		return 0, false, e.closedErr(err)
	}
	var rerr error
	cerr := rc.Control(func(fd uintptr) { n, rerr = abi.ReadShort(int(fd), buf) })
	if cerr != nil {
		return 0, false, e.closedErr(cerr)
	}
	if rerr == unix.EAGAIN {
		return 0, false, nil
	}
	if rerr != nil {
		return 0, false, rerr
	}
	return n, true, nil
}

// wait blocks until one event is read into buf or ctx ends. Closing the
// file interrupts it with ErrClosed.
func (e *eventFile) wait(ctx context.Context, buf []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	rc, err := e.poller()
	if err != nil {
		return 0, e.closedErr(err)
	}
	e.mu.Lock()
	e.gen++
	gen := e.gen
	e.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		e.mu.Lock()
		if e.gen == gen {
			e.f.SetReadDeadline(time.Unix(1, 0)) // wakes the parked Read
		}
		e.mu.Unlock()
	})
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, rerr = abi.ReadShort(int(fd), buf)
		return rerr != unix.EAGAIN
	})
	stop()
	e.mu.Lock()
	e.gen++
	e.f.SetReadDeadline(time.Time{})
	e.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, e.closedErr(err)
	}
	if rerr != nil {
		return 0, rerr
	}
	return n, nil
}

// closedErr maps the poller's error after Close (os.ErrClosed, or
// internal/poll's "use of closed file") to ErrClosed.
func (e *eventFile) closedErr(err error) error {
	if e.closed.Load() || errors.Is(err, os.ErrClosed) {
		return opError("read events", "", ErrClosed)
	}
	return err
}

// readAll waits for the first event, then drains the fd until EAGAIN,
// calling fn for each event of size bytes.
func (e *eventFile) readAll(ctx context.Context, size int, fn func([]byte)) error {
	buf := make([]byte, size)
	n, err := e.wait(ctx, buf)
	if err != nil {
		return err
	}
	for {
		if n == size {
			fn(buf)
		}
		var ok bool
		n, ok, err = e.tryRead(buf)
		if err != nil || !ok {
			return err
		}
	}
}
