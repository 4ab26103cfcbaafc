package umad

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
)

// Transport moves CM MADs; *Port is the real one.
type Transport interface {
	Send(to engine.Addr, m []byte) error
	// Recv blocks until a MAD arrives, ctx ends or the transport is
	// closed (ErrClosed).
	Recv(ctx context.Context, buf []byte) (engine.Addr, int, error)
	Close() error
}

// Driver runs an engine on a transport: a receive loop (Run), a timer for
// the engine's deadline, and a lock that serialises every engine call.
type Driver struct {
	// OnEvent receives each event after the engine's lock is released,
	// in order; PrivateData and ARI are copies it may keep.
	OnEvent func(engine.Event)
	// OnQP applies a QP transition (for IDs created with ManageQP). A
	// non-nil error is returned by the Do that caused it.
	OnQP func(engine.QPTransition) error

	mu      sync.Mutex
	e       *engine.Engine
	t       Transport
	timer   *time.Timer
	armed   time.Time // the deadline timer is set for (zero: stopped)
	closed  bool
	pending []engine.Event
	deliver sync.Mutex // keeps OnEvent calls in order

	// SendErrors counts MADs the transport failed to send (the engine's
	// retransmissions cover them).
	SendErrors atomic.Uint64
	// Received counts MADs the transport delivered; Short counts those
	// shorter than 256 bytes, dropped before the engine (which counts
	// the rest in engine.Stats).
	Received, Short atomic.Uint64
}

// Stats returns the engine's counters.
func (d *Driver) Stats() engine.Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.e.Stats()
}

// NewDriver returns a driver for e on t. Call Run to receive.
func NewDriver(e *engine.Engine, t Transport) *Driver { return &Driver{e: e, t: t} }

// Wrap replaces the transport with wrap(transport), to tap or filter it.
// Call it before Run.
func (d *Driver) Wrap(wrap func(Transport) Transport) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.t = wrap(d.t)
}

// Do calls fn with the engine under the driver's lock and the current
// time, then sends what the engine produced, applies its QP transitions,
// re-arms the timer and delivers its events.
func (d *Driver) Do(fn func(e *engine.Engine, now time.Time) error) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errClosed
	}
	err := fn(d.e, time.Now())
	if qerr := d.flush(); err == nil {
		err = qerr
	}
	evs := d.take()
	d.mu.Unlock()
	d.dispatch(evs)
	return err
}

// Run receives MADs and feeds them to the engine until ctx ends or the
// transport is closed.
func (d *Driver) Run(ctx context.Context) error {
	buf := make([]byte, maxRecv)
	for {
		from, n, err := d.t.Recv(ctx, buf)
		var se *SendError
		switch {
		case errors.As(err, &se):
			d.SendErrors.Add(1)
			continue
		case err != nil:
			return err
		}
		d.Received.Add(1)
		if n < mad.MADSize {
			d.Short.Add(1)
			continue
		}
		_ = d.Do(func(e *engine.Engine, now time.Time) error {
			e.Receive(now, from, buf[:n])
			return nil
		})
	}
}

// Close stops the timer and closes the transport; Run returns.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
	return d.t.Close()
}

const maxRecv = 2048

func (d *Driver) flush() error {
	var qerr error
	if d.e.HasReady() {
		r := d.e.Ready()
		for i := range r.Messages {
			if err := d.t.Send(r.Messages[i].To, r.Messages[i].MAD[:]); err != nil {
				d.SendErrors.Add(1)
			}
		}
		for _, q := range r.QPTransitions {
			if d.OnQP == nil {
				qerr = fmt.Errorf("umad: QP transition %v without an OnQP handler", &q)
				continue
			}
			if err := d.OnQP(q); err != nil && qerr == nil {
				qerr = err
			}
		}
		for _, ev := range r.Events {
			ev.PrivateData = append([]byte(nil), ev.PrivateData...)
			ev.ARI = append([]byte(nil), ev.ARI...)
			d.pending = append(d.pending, ev)
		}
		d.e.Advance()
	}
	d.rearm()
	return qerr
}

func (d *Driver) rearm() {
	dl := d.e.Deadline()
	if dl.Equal(d.armed) {
		return // most calls leave the earliest deadline where it was
	}
	d.armed = dl
	if dl.IsZero() {
		if d.timer != nil {
			d.timer.Stop()
		}
		return
	}
	wait := time.Until(dl)
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.tick)
		return
	}
	d.timer.Reset(wait)
}

func (d *Driver) tick() {
	d.mu.Lock()
	d.armed = time.Time{} // fired: the next rearm must set it again
	d.mu.Unlock()
	_ = d.Do(func(e *engine.Engine, now time.Time) error {
		e.Tick(now)
		return nil
	})
}

func (d *Driver) take() []engine.Event {
	evs := d.pending
	d.pending = nil
	if len(evs) > 0 {
		d.deliver.Lock() // taken before the engine lock is released
	}
	return evs
}

func (d *Driver) dispatch(evs []engine.Event) {
	if len(evs) == 0 {
		return
	}
	defer d.deliver.Unlock()
	if d.OnEvent != nil {
		for _, ev := range evs {
			d.OnEvent(ev)
		}
	}
}
