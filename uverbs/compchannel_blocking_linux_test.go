package uverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/unix"
	sysunix "golang.org/x/sys/unix"
)

// pipeChannel is a blocking completion channel on a pipe's read end,
// with CQ handle 7 known to its context: WaitBlocking's read and
// decoding, testable without a device.
func pipeChannel(t *testing.T) (*CompChannel, *CQ, *os.File) {
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
		out, err := ch.WaitBlocking(nil)
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
	out, err := ch.WaitBlocking(dst)
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
	dst := make([]*CQ, 0, 2)
	ev := compEvent(7)
	wait := func() {
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
		out, err := ch.WaitBlocking(dst)
		if err != nil || len(out) != 1 {
			t.Fatalf("wait: %v, %v", out, err)
		}
	}
	wait()
	if allocs := testing.AllocsPerRun(100, wait); allocs != 0 {
		t.Errorf("WaitBlocking: %v allocations per wait, want 0", allocs)
	}
}

func TestWaitKindsDoNotMix(t *testing.T) {
	ch, _, _ := pipeChannel(t)
	if _, err := ch.Wait(context.Background()); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Wait on a blocking channel: %v", err)
	}
	ch.blocking = false
	if _, err := ch.WaitBlocking(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("WaitBlocking on a netpoller channel: %v", err)
	}
}
