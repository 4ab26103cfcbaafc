package uverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/unix"
	sysunix "golang.org/x/sys/unix"
)

// pipeChannel is a blocking completion channel on a pipe's read end,
// with CQ handle 7 known to its context: WaitBlocking's read and
// decoding, testable without a device.
func pipeChannel(t testing.TB) (*CompChannel, *CQ, *os.File) {
	t.Helper()
	p := make([]int, 2)
	if err := unix.Pipe2(p, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	e, err := newEventFile(p[0], "pipe")
	if err != nil {
		t.Fatal(err)
	}
	e.blocking = true
	x := &Context{dev: Device{Name: "pipe0"}, cqs: map[uint64]*CQ{}, channels: map[*CompChannel]struct{}{}}
	cq := &CQ{ctx: x, uhandle: 7}
	x.cqs[7] = cq
	ch := &CompChannel{ctx: x, ev: e, blocking: true}
	w := os.NewFile(uintptr(p[1]), "pipe-w")
	t.Cleanup(func() { e.close(); w.Close() })
	return ch, cq, w
}

func compEvent(handle uint64) []byte {
	return binary.NativeEndian.AppendUint64(nil, handle)
}

func TestWaitBlockingReadsOneEvent(t *testing.T) {
	ch, cq, w := pipeChannel(t)
	got := make(chan []*CQ, 1)
	go func() {
		out, err := ch.WaitBlocking(context.Background(), nil)
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	select {
	case <-got:
		t.Fatal("WaitBlocking returned with no event")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := w.Write(compEvent(7)); err != nil {
		t.Fatal(err)
	}
	if out := <-got; len(out) != 1 || out[0] != cq {
		t.Fatalf("first wait: %v, want the CQ", out)
	}
	// (A pipe, unlike the channel, may hand two events to one read: one
	// at a time.)
	if _, err := w.Write(compEvent(99)); err != nil {
		t.Fatal(err)
	}
	dst := make([]*CQ, 0, 2)
	out, err := ch.WaitBlocking(context.Background(), dst)
	if err != nil || len(out) != 0 {
		t.Fatalf("event for an unknown CQ: %v, %v; want none", out, err)
	}
	// The fd never became non-blocking (it never joined the netpoller).
	flags, err := sysunix.FcntlInt(uintptr(ch.ev.fd()), sysunix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("fd flags %#x, %v: want blocking", flags, err)
	}
}

func TestWaitBlockingAllocatesNothing(t *testing.T) {
	ch, _, w := pipeChannel(t)
	checkNoAllocs(t, ch, w, context.Background())
}

// checkNoAllocs fails t unless a wait under ctx for an event written
// to w allocates nothing once warm.
func checkNoAllocs(t *testing.T, ch *CompChannel, w *os.File, ctx context.Context) {
	t.Helper()
	dst := make([]*CQ, 0, 2)
	ev := compEvent(7)
	wait := func() {
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
		out, err := ch.WaitBlocking(ctx, dst)
		if err != nil || len(out) != 1 {
			t.Fatalf("wait: %v, %v", out, err)
		}
	}
	wait()
	if allocs := testing.AllocsPerRun(100, wait); allocs != 0 {
		t.Errorf("WaitBlocking (context %v): %v allocations per wait, want 0", ctx, allocs)
	}
}

func TestWaitKindsDoNotMix(t *testing.T) {
	ch, _, _ := pipeChannel(t)
	if _, err := ch.Wait(context.Background()); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Wait on a blocking channel: %v", err)
	}
	ch.blocking = false
	if _, err := ch.WaitBlocking(context.Background(), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("WaitBlocking on a netpoller channel: %v", err)
	}
}

// TestWaitBlockingCancellable: under a context that can end, the wait
// returns the event, ends with the context, ignores a kick left from an
// earlier wait, and allocates nothing when the context is the same.
func TestWaitBlockingCancellable(t *testing.T) {
	ch, cq, w := pipeChannel(t)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		out, err := ch.WaitBlocking(ctx, nil)
		if err == nil && (len(out) != 1 || out[0] != cq) {
			err = errors.New("no CQ")
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("returned with no event: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := w.Write(compEvent(7)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	go func() {
		_, err := ch.WaitBlocking(ctx, nil)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-got; err != context.Canceled {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	// The kick may outlive the wait; the next one polls again and waits.
	ch.ev.mu.Lock()
	ch.ev.kickLocked()
	ch.ev.mu.Unlock()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	go func() {
		_, err := ch.WaitBlocking(ctx2, nil)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a stale kick ended the wait: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	w.Write(compEvent(7))
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	checkNoAllocs(t, ch, w, ctx2)
}

// TestWaitBlockingClose: Close ends a cancellable wait with ErrClosed
// and closes the fd after it; a wait under a context that never ends
// keeps the fd open until its read returns.
func TestWaitBlockingClose(t *testing.T) {
	ch, _, _ := pipeChannel(t)
	fd := uintptr(ch.ev.fd())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := ch.WaitBlocking(ctx, nil)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ch.ev.close()
	if err := <-got; !errors.Is(err, ErrClosed) {
		t.Fatalf("wait ended by Close: %v, want ErrClosed", err)
	}
	if _, err := sysunix.FcntlInt(fd, sysunix.F_GETFL, 0); err != sysunix.EBADF {
		t.Fatalf("fd after the wait: %v, want EBADF", err)
	}
	if _, err := ch.WaitBlocking(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait after Close: %v, want ErrClosed", err)
	}

	ch, _, w := pipeChannel(t)
	fd = uintptr(ch.ev.fd())
	go func() {
		_, err := ch.WaitBlocking(context.Background(), nil)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ch.ev.close()
	if _, err := sysunix.FcntlInt(fd, sysunix.F_GETFL, 0); err != nil {
		t.Fatalf("fd closed under a read in progress: %v", err)
	}
	w.Write(compEvent(7))
	if err := <-got; err != nil {
		t.Fatalf("the read in progress: %v", err)
	}
	if _, err := sysunix.FcntlInt(fd, sysunix.F_GETFL, 0); err != sysunix.EBADF {
		t.Fatalf("fd after the read: %v, want EBADF", err)
	}
}

// TestWaitBlockingLongWaits: with more than one P, a wait under a
// context that never ends that begins 5 ms or more after the last one
// began sleeps in slices, so Close ends it; one soon after is a read
// again. With one P it stays a read.
func TestWaitBlockingLongWaits(t *testing.T) {
	for _, procs := range []int{2, 1} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			ch, _, w := pipeChannel(t)
			late := func() {
				time.Sleep(30 * time.Millisecond)
				w.Write(compEvent(7))
			}
			go late()
			if _, err := ch.WaitBlocking(context.Background(), nil); err != nil || ch.ev.long {
				t.Fatalf("the first wait: %v, long %v", err, ch.ev.long)
			}
			w.Write(compEvent(7))
			if _, err := ch.WaitBlocking(context.Background(), nil); err != nil || !ch.ev.long {
				t.Fatalf("a wait 30 ms after the last began: %v, long %v", err, ch.ev.long)
			}
			w.Write(compEvent(7))
			if _, err := ch.WaitBlocking(context.Background(), nil); err != nil || ch.ev.long {
				t.Fatalf("a wait at once after the last: %v, long %v", err, ch.ev.long)
			}
			go late()
			if _, err := ch.WaitBlocking(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				_, err := ch.WaitBlocking(context.Background(), nil)
				got <- err
			}()
			time.Sleep(20 * time.Millisecond)
			ch.ev.close()
			select {
			case err := <-got:
				if procs == 1 || !errors.Is(err, ErrClosed) {
					t.Fatalf("wait after a long one, at Close: %v; want ErrClosed with 2 Ps, no end with 1", err)
				}
			case <-time.After(time.Second):
				if procs == 2 {
					t.Fatal("Close did not end a wait after a long one")
				}
				w.Write(compEvent(7)) // a read: only an event ends it
				if err := <-got; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWaitBlockingReady is a wait whose event is already written: the
// wait's own cost beside its read(2) (and the benchmark's write(2)).
func BenchmarkWaitBlockingReady(b *testing.B) {
	ch, _, w := pipeChannel(b)
	ev := compEvent(7)
	var dst []*CQ
	var err error
	for b.Loop() {
		if _, err = w.Write(ev); err != nil {
			b.Fatal(err)
		}
		if dst, err = ch.WaitBlocking(context.Background(), dst); err != nil || len(dst) != 1 {
			b.Fatalf("WaitBlocking: %v, %d CQs", err, len(dst))
		}
	}
}
