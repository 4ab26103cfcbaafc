package rsocket

import (
	"sync"
	"time"
)

// deadline is one direction's deadline: a channel closed when it passes,
// re-made when it moves (as net.Pipe's). Setting it costs a timer;
// waiting on it costs nothing.
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{}
}

func (d *deadline) init() { d.cancel = make(chan struct{}) }

// set arms the deadline at t; the zero t clears it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: wait for it to close cancel
	}
	d.timer = nil
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
		cancel := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(cancel) })
		return
	}
	if !passed {
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
