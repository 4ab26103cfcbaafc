package rsocket

import (
	"sync"
	"time"
)

// deadline is one direction's deadline: a channel closed when it passes,
// re-made when it moves past a passed one (as net.Pipe's). One timer is
// made on first use and reset after, so moving a deadline allocates
// nothing unless it had passed; waiting on it costs nothing.
type deadline struct {
	mu     sync.Mutex
	at     time.Time // the zero time: none
	timer  *time.Timer
	cancel chan struct{}
}

func (d *deadline) init() { d.cancel = make(chan struct{}) }

// set arms the deadline at t; the zero t clears it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = t
	if d.timer != nil {
		d.timer.Stop() // a fire already under way re-checks at
	}
	passed := isClosed(d.cancel)
	if t.IsZero() {
		if passed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if passed {
			d.cancel = make(chan struct{})
		}
		if d.timer == nil {
			d.timer = time.AfterFunc(dur, d.fire)
		} else {
			d.timer.Reset(dur)
		}
		return
	}
	if !passed {
		close(d.cancel)
	}
}

// fire closes cancel if the deadline now set has passed: a timer armed
// for an earlier deadline that moved finds it has not.
func (d *deadline) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.at.IsZero() && !time.Now().Before(d.at) && !isClosed(d.cancel) {
		close(d.cancel)
	}
}

// wait is closed once the deadline passed.
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

// close stops the timer.
func (d *deadline) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
