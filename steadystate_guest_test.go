//go:build linux

package rdmacm_test

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// TestSteadyStateAllocsInGuest: an echo of 64 B between two endpoints in
// guest a, posts and waits as examples/echo makes them (with a context
// that is never cancelled), allocates nothing once warm, on either end:
// the waits that block reuse one registration of the connection's end
// with the completion channel.
func TestSteadyStateAllocsInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := &rdmacm.EndpointOptions{Backend: guestBackend()}
	l, err := rdmacm.Listen(exampleHost+":7417", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const size = 64
	served := make(chan error, 1)
	go func() { served <- serveEcho(ctx, l, size) }()
	ep, err := rdmacm.Dial(ctx, exampleHost+":7417", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	buf, err := ep.RegMsgs(2 * size)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	if err := ep.PostRecv(buf, 0, size); err != nil {
		t.Fatal(err)
	}
	roundTrips := func(n int) {
		for range n {
			wc, err := sendForEcho(ep, buf, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := ep.PostRecv(buf, size-int(wc.ID), size); err != nil {
				t.Fatal(err)
			}
		}
	}
	roundTrips(200)
	const n = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	roundTrips(n)
	runtime.ReadMemStats(&after)
	ep.Disconnect(ctx)
	if err := <-served; err != io.EOF {
		t.Fatal(err)
	}
	allocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations in %d round trips (both ends)", allocs, n)
	// A few stray allocations of the runtime (timers, the GC) are not per
	// round trip.
	if allocs > n/100 {
		t.Fatalf("%.2f allocations per round trip, want 0", float64(allocs)/n)
	}
}

// serveEcho accepts one connection of l and echoes its messages of up to
// size bytes, posting and waiting as examples/echo does (with a context
// that is never cancelled), until WaitRecv fails: io.EOF at the client's
// disconnect.
func serveEcho(ctx context.Context, l *rdmacm.Listener, size int) error {
	bg := context.Background()
	ep, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	defer ep.Close()
	buf, err := ep.RegMsgs(2 * size)
	if err != nil {
		return err
	}
	defer buf.Close()
	if err := ep.PostRecv(buf, 0, size); err != nil {
		return err
	}
	for {
		wc, err := ep.WaitRecv(bg)
		if err != nil {
			return err
		}
		if err := ep.PostRecv(buf, size-int(wc.ID), size); err != nil {
			return err
		}
		if err := ep.PostSend(buf, int(wc.ID), int(wc.ByteLen)); err != nil {
			return err
		}
		if _, err := ep.WaitSend(bg); err != nil {
			return err
		}
	}
}

// sendForEcho sends the size bytes at buf's offset size and waits for the
// send and for the echo, whose completion it returns; the caller reposts
// the receive.
func sendForEcho(ep *rdmacm.Endpoint, buf *rdmacm.MR, size int) (rdmacm.WC, error) {
	bg := context.Background()
	if err := ep.PostSend(buf, size, size); err != nil {
		return rdmacm.WC{}, err
	}
	if _, err := ep.WaitSend(bg); err != nil {
		return rdmacm.WC{}, err
	}
	return ep.WaitRecv(bg)
}
