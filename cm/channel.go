package cm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/errfmt"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// Backend selects the CM implementation behind a Channel; it is
// rdma.Backend, named here too so that cm's callers need not import rdma.
type Backend = rdma.Backend

// The backends (rdma's). The zero value means BackendAuto.
const (
	BackendAuto   = rdma.BackendAuto   // kernel where rdma_ucm is loaded, else user, else kernel
	BackendKernel = rdma.BackendKernel // the kernel rdma_cm through /dev/infiniband/rdma_cm
	BackendUser   = rdma.BackendUser   // the user-space CM engine (cm/engine) over umad
)

// Options configure Open.
type Options struct {
	// Backend is BackendKernel, BackendUser or BackendAuto ("" means
	// auto).
	Backend Backend
	// Trace, when set, receives every CM MAD the user backend sends or
	// receives as a pcap file (Ethernet RoCEv2 frames: IPv4, UDP 4791,
	// BTH, DETH, MAD, ICRC), readable by tshark and cmdump. The kernel
	// backend's MADs are built in the kernel: Open fails there (capture
	// the wire with tcpdump instead).
	Trace io.Writer
	// UMADSends makes the user backend send its MADs through ib_umad's
	// write, as it receives them. By default it sends them from a UD QP
	// of its own (umad.UDSend), which on RoCE resolves each destination's
	// MAC once instead of once per MAD, and falls back to umad where that
	// QP cannot be made (no uverbs data path, no CAP_NET_RAW).
	UMADSends bool
	// MaxHalfOpen bounds each listener's half-open connections on the
	// user backend (REQ received, not yet ESTABLISHED), as TCP's SYN
	// backlog does: 0 means the engine's default (4096), a negative value
	// no bound. Past it a new REQ evicts the oldest accepted request still
	// waiting for its RTU (which ends with EventUnreachable), or is
	// dropped if every held request awaits Accept or Reject.
	// engine.Config.MaxHalfOpen and docs/reliability.md say more. The
	// kernel backend ignores it: the kernel bounds only the requests not
	// yet read (Listen's backlog).
	MaxHalfOpen int
}

// Channel is an event channel (struct rdma_event_channel): a connection
// manager instance whose IDs report their events through it. Events of
// asynchronous IDs are read with GetEvent; events of synchronous IDs are
// consumed by their blocking calls and ID.GetEvent.
//
// The kernel backend's fd is non-blocking and lives in Go's netpoller;
// every wake-up drains it until EAGAIN. Close interrupts every waiter.
type Channel struct {
	b backend

	mu       sync.Mutex
	ids      map[uint64]*ID
	mcs      map[uint64]*Multicast
	nextUID  uint64
	async    []*Event      // undelivered events of asynchronous IDs
	notify   chan struct{} // closed (and replaced) when events arrive or the reader leaves
	unacked  int
	isClosed bool

	devices deviceCache // verbs contexts and PDs of library QPs

	readTok chan struct{} // held by the one goroutine reading the backend
	closed  chan struct{}
	once    sync.Once
}

// Open opens an event channel on the selected backend.
func Open(opts *Options) (*Channel, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var b backend
	var err error
	switch o.Backend {
	case BackendKernel:
		b, err = openKernelBackend(&o)
	case BackendUser:
		b, err = openUserBackend(&o)
	case BackendAuto, "":
		b, err = openAuto(&o)
	default:
		return nil, fmt.Errorf("cm: unknown backend %q: %w", o.Backend, ErrInvalidArgument)
	}
	if err != nil {
		return nil, err
	}
	c := newChannel(b)
	c.devices.discover()
	return c, nil
}

// openAuto picks the backend for BackendAuto. Where rdma_ucm is loaded
// (/dev/infiniband/rdma_cm exists), ib_cm is loaded too and owns the CM
// class on every port, so the kernel backend is the only choice; elsewhere
// the user-space engine is tried first and the kernel backend second.
// Without the user backend (outside Linux) it is the kernel backend.
func openAuto(o *Options) (backend, error) {
	if !haveUserBackend {
		return openKernelBackend(o)
	}
	if _, err := os.Stat(abi.UcmaDevicePath); err == nil {
		return openKernelBackend(o)
	}
	u, uerr := openUserBackend(o)
	if uerr == nil {
		return u, nil
	}
	k, kerr := openKernelBackend(o)
	if kerr == nil {
		return k, nil
	}
	return nil, fmt.Errorf("cm: no backend: %w; %w", errfmt.Wrap("", "user", uerr), errfmt.Wrap("", "kernel", kerr))
}

func openKernelBackend(o *Options) (backend, error) {
	// Off Linux, openKernel's "not supported on GOOS" says more.
	if o.Trace != nil && unix.IsLinux {
		return nil, errKernelTrace
	}
	k, err := openKernel()
	if err != nil {
		return nil, err
	}
	return k, nil
}

func newChannel(b backend) *Channel {
	return &Channel{
		b:       b,
		ids:     make(map[uint64]*ID),
		mcs:     make(map[uint64]*Multicast),
		notify:  make(chan struct{}),
		readTok: make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}
}

// Backend returns the backend in use, BackendKernel or BackendUser.
func (c *Channel) Backend() Backend { return c.b.name() }

// Close destroys every ID of the channel and interrupts all waiters.
// Events not yet acknowledged stay readable as values but their IDs are
// destroyed.
func (c *Channel) Close() error {
	var err error
	c.once.Do(func() {
		c.mu.Lock()
		c.isClosed = true
		ids := make([]*ID, 0, len(c.ids))
		for _, id := range c.ids {
			ids = append(ids, id)
		}
		c.async = nil
		c.mu.Unlock()
		close(c.closed)
		for _, id := range ids {
			id.closeLocal()
		}
		err = errors.Join(c.b.close(), c.devices.close())
		c.broadcast()
	})
	return err
}

// Unacked returns the number of events handed out and not yet acked.
func (c *Channel) Unacked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unacked
}

// GetEvent returns the next event of an asynchronous ID, waiting until one
// arrives, ctx ends or the channel is closed. The caller owns the event
// until it calls Ack.
func (c *Channel) GetEvent(ctx context.Context) (*Event, error) {
	return c.wait(ctx, func() (*Event, error) {
		if len(c.async) == 0 {
			return nil, nil
		}
		ev := c.async[0]
		c.async[0] = nil
		c.async = c.async[1:]
		c.unacked++
		return ev, nil
	})
}

// Ack acknowledges the event (rdma_ack_cm_event): the event and its
// private data must not be used afterwards. Acking twice fails with
// ErrInvalidState.
func (e *Event) Ack() error {
	c := e.ch
	if c == nil {
		return fmt.Errorf("cm: Ack of an event that was not delivered by a channel: %w", ErrInvalidArgument)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.acked {
		return fmt.Errorf("cm: event acked twice: %w", ErrInvalidState)
	}
	e.acked = true
	c.unacked--
	e.Conn.PrivateData = nil
	e.UD.PrivateData = nil
	return nil
}

func (c *Channel) broadcast() {
	c.mu.Lock()
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
}

// wait returns the first event take yields (take runs with c.mu held),
// reading the backend when no event is pending. One goroutine at a time
// reads; the others wait for its news.
func (c *Channel) wait(ctx context.Context, take func() (*Event, error)) (*Event, error) {
	for {
		c.mu.Lock()
		if c.isClosed {
			c.mu.Unlock()
			return nil, fmt.Errorf("cm: %w", ErrClosed)
		}
		ev, err := take()
		notify := c.notify
		c.mu.Unlock()
		if ev != nil || err != nil {
			return ev, err
		}
		select {
		case c.readTok <- struct{}{}:
			// The previous reader may have queued our event after take
			// ran: look again before blocking in the backend.
			c.mu.Lock()
			ev, err := take()
			c.mu.Unlock()
			if ev != nil || err != nil {
				<-c.readTok
				c.broadcast()
				return ev, err
			}
			err = c.b.readEvents(ctx, c.dispatch)
			<-c.readTok
			c.broadcast()
			if err != nil {
				select {
				case <-c.closed:
					return nil, fmt.Errorf("cm: %w", ErrClosed)
				default:
				}
				if ctxErr := ctx.Err(); ctxErr != nil {
					return nil, ctxError(ctxErr)
				}
				if errors.Is(err, os.ErrDeadlineExceeded) {
					// The fd deadline (ctx's deadline) fired before ctx's
					// own timer.
					return nil, ctxError(context.DeadlineExceeded)
				}
				return nil, errnoError("get event", err)
			}
		case <-notify:
		case <-ctx.Done():
			return nil, ctxError(ctx.Err())
		case <-c.closed:
			return nil, fmt.Errorf("cm: %w", ErrClosed)
		}
	}
}

// ctxError wraps a context error; a deadline also matches ErrTimeout.
func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cm: %w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("cm: %w", err)
}

// dispatch turns a backend event into an Event, updates the ID's state
// and queues the event for its reader. It runs on the reading goroutine.
func (c *Channel) dispatch(r *rawEvent) {
	switch r.typ {
	case EventMulticastJoin, EventMulticastError:
		c.dispatchMulticast(r)
		return
	case EventConnectRequest:
		c.dispatchRequest(r)
		return
	}
	c.mu.Lock()
	id := c.ids[r.uid]
	c.mu.Unlock()
	if id == nil {
		return // destroyed meanwhile
	}
	ev := &Event{Type: r.typ, Status: r.status, ID: id, ch: c}
	id.fillParams(ev, r)
	if !id.onEvent(ev) {
		return
	}
	c.queue(id, ev)
}

func (c *Channel) dispatchRequest(r *rawEvent) {
	c.mu.Lock()
	listener := c.ids[r.uid]
	c.mu.Unlock()
	if listener == nil {
		// The listener is gone: release the kernel's new ID.
		_, _ = c.b.destroyID(r.handle)
		return
	}
	id, err := c.adoptID(listener, r)
	if err != nil {
		_, _ = c.b.destroyID(r.handle)
		return
	}
	ev := &Event{Type: r.typ, Status: r.status, ID: id, Listener: listener, ch: c, ECE: r.ece}
	id.fillParams(ev, r)
	id.mu.Lock()
	id.reqConn = ev.Conn
	id.mu.Unlock()
	c.queue(listener, ev)
}

func (c *Channel) dispatchMulticast(r *rawEvent) {
	c.mu.Lock()
	mc := c.mcs[r.uid]
	c.mu.Unlock()
	if mc == nil {
		return
	}
	ev := &Event{Type: r.typ, Status: r.status, ID: mc.id, Multicast: mc, ch: c}
	ev.UD = r.ud
	mc.onEvent(ev)
	c.queue(mc.id, ev)
}

// queue hands ev to the ID's synchronous waiter or to GetEvent.
func (c *Channel) queue(id *ID, ev *Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed {
		return
	}
	if id.sync {
		id.pending = append(id.pending, ev)
	} else {
		c.async = append(c.async, ev)
	}
}

// register adds an ID under a fresh uid.
func (c *Channel) register(id *ID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed {
		return fmt.Errorf("cm: %w", ErrClosed)
	}
	c.nextUID++
	id.uid = c.nextUID
	c.ids[id.uid] = id
	return nil
}

// forget removes an ID and drops its undelivered events. New IDs of
// undelivered CONNECT_REQUESTs of a listener are destroyed.
func (c *Channel) forget(id *ID) []*ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ids, id.uid)
	c.forgetMulticastLocked(id)
	var orphans []*ID
	kept := c.async[:0]
	for _, ev := range c.async {
		switch {
		case ev.Listener == id:
			orphans = append(orphans, ev.ID)
		case ev.ID == id:
		default:
			kept = append(kept, ev)
		}
	}
	clear(c.async[len(kept):])
	c.async = kept
	for _, ev := range id.pending {
		if ev.Listener == id {
			orphans = append(orphans, ev.ID)
		}
	}
	id.pending = nil
	return orphans
}
