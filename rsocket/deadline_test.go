package rsocket

import (
	"testing"
	"time"
)

func TestDeadlineFiresAndMoves(t *testing.T) {
	var d deadline
	d.init()
	d.set(time.Now().Add(20 * time.Millisecond))
	select {
	case <-d.wait():
	case <-time.After(5 * time.Second):
		t.Fatal("deadline 20ms away did not pass in 5s")
	}
	// Moving a passed deadline into the future makes a new, open channel.
	d.set(time.Now().Add(time.Hour))
	if isClosed(d.wait()) {
		t.Fatal("deadline an hour away has passed")
	}
	// Moved later while armed: the earlier timer must not close it.
	d.set(time.Now().Add(10 * time.Millisecond))
	d.set(time.Now().Add(time.Hour))
	time.Sleep(50 * time.Millisecond)
	if isClosed(d.wait()) {
		t.Fatal("an earlier deadline's timer closed a later one")
	}
	// Moved earlier, then cleared.
	d.set(time.Now().Add(-time.Second))
	if !isClosed(d.wait()) {
		t.Fatal("a deadline in the past has not passed")
	}
	d.set(time.Time{})
	if isClosed(d.wait()) {
		t.Fatal("a cleared deadline has passed")
	}
	d.close()
}

func TestDeadlineSetAllocatesNothing(t *testing.T) {
	var d deadline
	d.init()
	d.set(time.Now().Add(time.Hour)) // makes the timer
	allocs := testing.AllocsPerRun(100, func() {
		d.set(time.Now().Add(time.Hour))
		d.set(time.Time{})
	})
	if allocs != 0 {
		t.Errorf("moving an open deadline: %v allocations, want 0", allocs)
	}
	d.close()
}
