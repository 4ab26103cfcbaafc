package uverbs

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/unix"
)

// pipeEventFile is an eventFile on a pipe's read end: the event fds'
// netpoller plumbing, testable without a device.
func pipeEventFile(t *testing.T) (*eventFile, *os.File) {
	t.Helper()
	p := make([]int, 2)
	if err := unix.Pipe2(p, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	e, err := newEventFile(p[0], "pipe")
	if err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(p[1]), "pipe-w")
	t.Cleanup(func() { e.close(); w.Close() })
	return e, w
}

func TestEventFileWaitAllocatesNothing(t *testing.T) {
	e, w := pipeEventFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	event := make([]byte, 8)
	var got int
	count := func([]byte) { got++ }
	wait := func() {
		if _, err := w.Write(event); err != nil {
			t.Fatal(err)
		}
		if err := e.readAll(ctx, 8, count); err != nil {
			t.Fatal(err)
		}
	}
	wait() // joins the netpoller, registers ctx, fills the pool
	allocs := testing.AllocsPerRun(200, wait)
	if allocs != 0 {
		t.Errorf("readAll with the same context: %v allocations per wait, want 0", allocs)
	}
	if got != 202 { // the first wait, AllocsPerRun's warm-up and its 200 runs
		t.Errorf("read %d events, want 202", got)
	}
}

func TestEventFileWaitCancel(t *testing.T) {
	e, w := pipeEventFile(t)
	for i := 0; i < 3; i++ { // the kept registration, then new contexts
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		err := e.readAll(ctx, 8, func([]byte) {})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("wait %d: err %v, want context.Canceled", i, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("wait %d: cancel took %v", i, d)
		}
	}
	// After cancellations, a wait on a live context still blocks and then
	// reads (the deadline was reset).
	done := make(chan error, 1)
	go func() { done <- e.readAll(context.Background(), 8, func([]byte) {}) }()
	select {
	case err := <-done:
		t.Fatalf("wait returned %v before any event", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := w.Write(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestEventFileWaitConcurrentContexts(t *testing.T) {
	e, w := pipeEventFile(t)
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	errA := make(chan error, 1)
	errB := make(chan error, 1)
	go func() { errA <- e.readAll(ctxA, 8, func([]byte) {}) }()
	time.Sleep(20 * time.Millisecond)
	go func() { errB <- e.readAll(ctxB, 8, func([]byte) {}) }()
	time.Sleep(20 * time.Millisecond)
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("A: %v, want context.Canceled", err)
	}
	// B's context lives: A's cancellation must not end B's wait.
	select {
	case err := <-errB:
		t.Fatalf("B returned %v after A's cancellation", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := w.Write(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if err := <-errB; err != nil {
		t.Fatalf("B: %v", err)
	}
}

func TestEventFileCloseInterruptsWait(t *testing.T) {
	e, _ := pipeEventFile(t)
	done := make(chan error, 1)
	go func() { done <- e.readAll(context.Background(), 8, func([]byte) {}) }()
	time.Sleep(20 * time.Millisecond)
	e.close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", err)
	}
}

// TestEventFileTurn: the turn is held by one wait at a time, no release
// is lost while waits queue (each ends, none waits for a release that
// came before it queued), and a queued wait's cancellation gives up its
// place without taking the turn.
func TestEventFileTurn(t *testing.T) {
	e, _ := pipeEventFile(t)
	const waiters, rounds = 8, 2000
	var holders, held, cancelled atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < waiters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if i%7 == g%7 {
					ctx, cancel = context.WithCancel(context.Background())
					cancel() // queued or not, this one may not wait
				}
				if err := e.takeTurn(ctx); err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("takeTurn: %v", err)
					}
					cancelled.Add(1)
					continue
				}
				cancel()
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d waits hold the turn", n)
				}
				if i%3 == 0 {
					runtime.Gosched()
				}
				holders.Add(-1)
				held.Add(1)
				e.giveTurn()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("waits still queued after 30 s: %d turns held, %d queued", held.Load(), e.queued.Load())
	}
	if held.Load()+cancelled.Load() != waiters*rounds || held.Load() == 0 {
		t.Fatalf("%d turns held and %d cancelled, want %d in all", held.Load(), cancelled.Load(), waiters*rounds)
	}
	if e.busy.Load() || e.queued.Load() != 0 {
		t.Fatalf("after the last turn: busy %v, %d queued", e.busy.Load(), e.queued.Load())
	}
}
