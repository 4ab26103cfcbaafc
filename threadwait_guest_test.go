//go:build linux

package rdmacm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// TestThreadWaitInGuest: with EndpointOptions.ThreadWait, an echo of 64 B
// in guest a, with a few waits of 30 ms among them, allocates nothing
// once warm; a wait that is one read(2) ends by the peer's disconnect
// (io.EOF) and by Close (ErrClosed), and a wait under a deadline or on a
// queue with nothing posted, a ppoll(2), ends by the deadline or by
// Close; at GOMAXPROCS 1 and 2.
func TestThreadWaitInGuest(t *testing.T) {
	guest.Require(t)
	// With 2 Ps a wait after a long one sleeps in ppoll slices
	// (uverbs.CompChannel.WaitBlocking); with the guest's one it reads.
	for i, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			threadWait(t, fmt.Sprintf("%s:%d", exampleHost, 7418+i))
		})
	}
}

func threadWait(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := &rdmacm.EndpointOptions{Backend: guestBackend(), ThreadWait: true}
	l, err := rdmacm.Listen(addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const size = 64
	bg := context.Background()
	served := make(chan error, 1)
	serve := func() { served <- serveEcho(ctx, l, size) }
	dial := func() (*rdmacm.Endpoint, *rdmacm.MR) {
		ep, err := rdmacm.Dial(ctx, addr, opts)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := ep.RegMsgs(2 * size)
		if err != nil {
			t.Fatal(err)
		}
		if err := ep.PostRecv(buf, 0, size); err != nil {
			t.Fatal(err)
		}
		return ep, buf
	}

	go serve()
	ep, buf := dial()
	defer ep.Close()
	defer buf.Close()
	roundTrips := func(n int, pause time.Duration) {
		for i := range n {
			time.Sleep(pause) // the server's wait is long
			b := buf.Bytes()
			b[size], b[size+size-1] = byte(i), byte(i>>8)
			wc, err := sendForEcho(ep, buf, size)
			if err != nil {
				t.Fatal(err)
			}
			if got := buf.Bytes()[wc.ID:]; wc.ByteLen != size || got[0] != byte(i) || got[size-1] != byte(i>>8) {
				t.Fatalf("round trip %d: %d bytes, %d %d", i, wc.ByteLen, got[0], got[size-1])
			}
			if err := ep.PostRecv(buf, size-int(wc.ID), size); err != nil {
				t.Fatal(err)
			}
		}
	}
	roundTrips(100, 0)
	roundTrips(5, 30*time.Millisecond)
	const n = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	roundTrips(n, 0)
	runtime.ReadMemStats(&after)
	if allocs := after.Mallocs - before.Mallocs; allocs > n/100 {
		t.Errorf("%.2f allocations per round trip, want 0", float64(allocs)/n)
	}

	// A deadline ends a wait whose receive is posted (ppoll), and the
	// connection still works after it.
	dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	t0 := time.Now()
	_, err = ep.WaitRecv(dctx)
	dcancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 10*time.Second {
		t.Fatalf("WaitRecv under a 300 ms deadline: %v after %v", err, time.Since(t0))
	}
	roundTrips(10, 0)

	// The client's disconnect ends the server's read(2) with io.EOF.
	if err := ep.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if err != io.EOF {
			t.Fatalf("server's WaitRecv at the disconnect: %v, want io.EOF", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server's WaitRecv still blocked 30 s after the disconnect")
	}

	// Close ends a read(2) (WaitRecv, a receive posted) and a ppoll(2)
	// (WaitSend with no send posted), whichever waits on the channel, and
	// the ppoll of a WaitSend alone (no CQ armed with anything posted, so
	// a read would never end), and returns.
	for _, c := range []struct{ recvFirst, sendAlone bool }{{true, false}, {false, false}, {false, true}} {
		recvFirst := c.recvFirst
		go func() {
			ep, err := l.Accept(ctx)
			if err == nil {
				<-ep.Done()
				ep.Close()
			}
		}()
		// Not closed again on failure: a Close that hangs would hang that.
		ep, buf := dial()
		defer buf.Close()
		recv, send, closed := make(chan error, 1), make(chan error, 1), make(chan error, 1)
		waitRecv := func() { _, err := ep.WaitRecv(bg); recv <- err }
		waitSend := func() { _, err := ep.WaitSend(bg); send <- err }
		if !recvFirst {
			waitRecv, waitSend = waitSend, waitRecv
		}
		go waitRecv()
		time.Sleep(300 * time.Millisecond) // the first waits on the channel
		if c.sendAlone {
			recv <- rdmacm.ErrClosed
		} else {
			go waitSend()
		}
		time.Sleep(300 * time.Millisecond)
		go func() { closed <- ep.Close() }()
		for _, w := range []struct {
			name string
			c    chan error
		}{{"WaitRecv", recv}, {"WaitSend", send}, {"Close", closed}} {
			select {
			case err := <-w.c:
				if w.name != "Close" && !errors.Is(err, rdmacm.ErrClosed) {
					t.Errorf("%s (WaitRecv first: %v): %v at Close, want ErrClosed", w.name, recvFirst, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s (WaitRecv first: %v): still blocked 30 s after Close", w.name, recvFirst)
			}
		}
	}
}
