//go:build linux

package rsocket_test

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/rsocket"
)

// This file sorts after example_test.go on purpose: on our engine a test
// process that has used the CM keeps the umad CM agent registered, and
// the examples run as child processes that must register it themselves
// (one CM agent per port and process).

// TestGuestSteadyStateAllocs: a 64-byte ping-pong between two Conns in
// guest a, with deadlines set, allocates nothing per Read or Write once
// warm (the whole process's mallocs are counted: both ends, their driver
// goroutines and the completion-channel waits).
func TestGuestSteadyStateAllocs(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := rsocket.Listen(localAddr+":7495", &rsocket.Options{Backend: guestBackend()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		c, err := l.AcceptConn(ctx)
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				served <- nil
				return
			}
			if _, err := c.Write(buf); err != nil {
				served <- err
				return
			}
		}
	}()
	c, err := rsocket.Dial(ctx, localAddr+":7495", &rsocket.Options{Backend: guestBackend()})
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Hour))
	buf := make([]byte, 64)
	roundTrip := func() {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 1000; i++ { // past the first credit updates and pool fills
		roundTrip()
	}
	const rounds = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < rounds; i++ {
		roundTrip()
	}
	runtime.ReadMemStats(&after)
	c.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	mallocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations in %d round trips", mallocs, rounds)
	// A few are the runtime's own (timers, the test's goroutines); one
	// per round trip would be 2000.
	if mallocs > rounds/100 {
		t.Errorf("%d allocations in %d round trips, want none per Read or Write", mallocs, rounds)
	}
}
