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
	// onPass runs (without mu) when the deadline passes: it interrupts a
	// wait on the completion channel, which no Go channel can.
	onPass func()
	mu     sync.Mutex
	at     time.Time // the zero time: none
	timer  *time.Timer
	cancel chan struct{}
}

func (d *deadline) init() { d.cancel = make(chan struct{}) }

// set arms the deadline at t; the zero t clears it.
func (d *deadline) set(t time.Time) {
	if d.setLocked(t) && d.onPass != nil {
		d.onPass()
	}
}

// setLocked is set; it reports whether the deadline passed just now.
func (d *deadline) setLocked(t time.Time) bool {
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
		return false
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
		return false
	}
	if !passed {
		close(d.cancel)
		return true
	}
	return false
}

// fire closes cancel if the deadline now set has passed: a timer armed
// for an earlier deadline that moved finds it has not.
func (d *deadline) fire() {
	d.mu.Lock()
	pass := !d.at.IsZero() && !time.Now().Before(d.at) && !isClosed(d.cancel)
	if pass {
		close(d.cancel)
	}
	d.mu.Unlock()
	if pass && d.onPass != nil {
		d.onPass()
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
