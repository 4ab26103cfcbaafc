package rdmacm

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-rdma/rdmacm/uverbs"
)

// DefaultCQEntries is the size of a NewCQ(0).
const DefaultCQEntries = 256

// CQ is a completion queue with its own completion channel that several
// endpoints share: give it as EndpointOptions.SendCQ and/or RecvCQ, and
// their completions of that queue come from CQ.Next instead of the
// endpoint's WaitSend/WaitRecv (which then fail with ErrInvalidArgument).
//
// The device CQ is made when the first endpoint is set up (the device is
// known only then); every later endpoint must be on the same device
// and use the same EndpointOptions.Backend value, else Dial or Accept fails with
// ErrInvalidArgument. Size it for the work requests of all its endpoints
// together: an overrun CQ is a fatal device error.
//
// A WC names its endpoint by QPNum: it equals the endpoint's QPNum().
// After an endpoint's connection is gone, its flushed work requests still
// arrive here, one by one (status WCWRFlushErr, an error matching
// ErrDisconnected).
type CQ struct {
	entries int
	sem     chan struct{} // held by Next and by Close
	done    context.Context
	stop    context.CancelFunc

	mu     sync.Mutex // the fields below
	c      *channel
	x      *uverbs.Context
	comp   *uverbs.CompChannel
	cq     *uverbs.CQ
	users  int
	closed bool
	armed  bool
	q      []uverbs.WC
	buf    [16]uverbs.WC
}

// NewCQ returns a shared CQ of entries entries (0: DefaultCQEntries).
// Close it after every endpoint that uses it.
func NewCQ(entries int) (*CQ, error) {
	if entries == 0 {
		entries = DefaultCQEntries
	}
	if entries < 0 || entries > 1<<22 {
		return nil, fmt.Errorf("rdmacm: NewCQ: %d entries: %w", entries, ErrInvalidArgument)
	}
	cq := &CQ{entries: entries, sem: make(chan struct{}, 1)}
	cq.done, cq.stop = context.WithCancel(context.Background())
	return cq, nil
}

// Entries is the size NewCQ was given (its default applied).
func (cq *CQ) Entries() int { return cq.entries }

// bind makes the device CQ on x (first use) or checks that x is its
// device, and counts the endpoint as a user.
func (cq *CQ) bind(c *channel, x *uverbs.Context) (*uverbs.CQ, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	switch {
	case cq.closed:
		return nil, fmt.Errorf("rdmacm: shared CQ: %w", ErrClosed)
	case cq.x != nil && (cq.x != x || cq.c != c):
		return nil, fmt.Errorf("rdmacm: shared CQ is on another device or backend: %w", ErrInvalidArgument)
	case cq.x == nil:
		comp, err := x.CreateCompChannel()
		if err != nil {
			return nil, err
		}
		q, err := x.CreateCQ(cq.entries, comp, 0)
		if err != nil {
			comp.Close()
			return nil, err
		}
		c.acquire() // the device context lives as long as the CQ
		cq.c, cq.x, cq.comp, cq.cq = c, x, comp, q
	}
	cq.users++
	return cq.cq, nil
}

// unbind is an endpoint's Close.
func (cq *CQ) unbind() {
	cq.mu.Lock()
	cq.users--
	cq.mu.Unlock()
}

// Next returns the next completion of any endpoint on the CQ: it polls,
// arms the CQ, polls again, then waits on the CQ's completion channel
// (in the netpoller). Calls may be concurrent; they are served one at a
// time. Its error is non-nil exactly when the completion failed (and is
// then its WC.Err; errors.Is matches both ways) or none came. Before any
// endpoint uses the CQ it fails with ErrInvalidArgument, after Close with
// ErrClosed.
func (cq *CQ) Next(ctx context.Context) (WC, error) {
	select {
	case cq.sem <- struct{}{}:
	case <-ctx.Done():
		return WC{}, ctxErr(ctx)
	case <-cq.done.Done():
		return WC{}, fmt.Errorf("rdmacm: shared CQ: %w", ErrClosed)
	}
	defer func() { <-cq.sem }()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(cq.done, cancel)()
	for {
		cq.mu.Lock()
		if len(cq.q) > 0 {
			wc := wcOf(cq.q[0])
			cq.q = cq.q[1:]
			cq.mu.Unlock()
			return wc, wc.Err()
		}
		if cq.closed {
			cq.mu.Unlock()
			return WC{}, fmt.Errorf("rdmacm: shared CQ: %w", ErrClosed)
		}
		if cq.cq == nil {
			cq.mu.Unlock()
			return WC{}, fmt.Errorf("rdmacm: shared CQ: no endpoint uses it yet: %w", ErrInvalidArgument)
		}
		n, err := cq.cq.Poll(cq.buf[:])
		if err == nil && n > 0 {
			cq.q = append(cq.q, cq.buf[:n]...)
			cq.mu.Unlock()
			continue
		}
		if err == nil && !cq.armed {
			if err = cq.cq.RequestNotify(false); err == nil {
				cq.armed = true
				cq.mu.Unlock()
				continue // poll again: a completion may have come before the arm
			}
		}
		comp := cq.comp
		cq.mu.Unlock()
		if err != nil {
			return WC{}, err
		}
		if _, err := comp.Wait(wctx); err != nil {
			if cq.done.Err() != nil {
				return WC{}, fmt.Errorf("rdmacm: shared CQ: %w", ErrClosed)
			}
			if ctx.Err() != nil {
				return WC{}, ctxErr(ctx)
			}
			return WC{}, err
		}
		cq.mu.Lock()
		cq.armed = false
		cq.mu.Unlock()
	}
}

// Close destroys the CQ and its completion channel. It fails with
// ErrBusy while an endpoint still uses the CQ (close the endpoints first);
// a blocked Next returns ErrClosed.
func (cq *CQ) Close() error {
	cq.mu.Lock()
	if cq.users > 0 {
		n := cq.users
		cq.mu.Unlock()
		return fmt.Errorf("rdmacm: shared CQ: %d endpoints still use it: %w", n, ErrBusy)
	}
	if cq.closed {
		cq.mu.Unlock()
		return nil
	}
	cq.closed = true
	cq.mu.Unlock()
	cq.stop()
	cq.sem <- struct{}{} // wait for a Next to leave
	defer func() { <-cq.sem }()
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.cq == nil {
		return nil
	}
	err := cq.cq.Close()
	if e := cq.comp.Close(); err == nil {
		err = e
	}
	cq.c.release()
	cq.cq, cq.comp = nil, nil
	return err
}
