package uverbs

import (
	"context"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestGuestWaitBlocking: a blocking channel's wait ends by the
// completions its caller makes happen: a signalled zero-length RDMA
// WRITE, and the flush of a posted receive when the QP moves to ERR.
func TestGuestWaitBlocking(t *testing.T) {
	x := openGuest(t, InterfaceAuto)
	r := newRig(t, x, 4096)
	var err error
	if r.ch, err = x.CreateCompChannelBlocking(); err != nil {
		t.Fatal(err)
	}
	if r.cq, err = x.CreateCQ(16, r.ch, 0); err != nil {
		t.Fatal(err)
	}
	a, b := r.rcQP(t, qp.RC), r.rcQP(t, qp.RC)
	r.connect(t, a, b.Num(), 1)
	r.connect(t, b, a.Num(), 1)
	wcs := make([]WC, 16)
	// wait arms the CQ, checks it is empty, runs cause and waits for the
	// event; it returns the completions then polled.
	wait := func(what string, cause func() error) []WC {
		t.Helper()
		if err := r.cq.RequestNotify(false); err != nil {
			t.Fatal(err)
		}
		if n, err := r.cq.Poll(wcs); n != 0 || err != nil {
			t.Fatalf("%s: %d completions before the cause, %v", what, n, err)
		}
		done := make(chan error, 1)
		go func() {
			cqs, err := r.ch.WaitBlocking(context.Background(), nil)
			if err == nil && (len(cqs) != 1 || cqs[0] != r.cq) {
				t.Errorf("%s: channel reported %v", what, cqs)
			}
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // the reader blocks in read(2)
		if err := cause(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(10 * time.Second):
			// The reader stays blocked; the test binary ends anyway.
			t.Fatalf("%s: no event", what)
		}
		n, err := r.cq.Poll(wcs)
		if err != nil || n == 0 {
			t.Fatalf("%s: event but %d completions, %v", what, n, err)
		}
		return wcs[:n]
	}
	got := wait("zero-length write", func() error {
		return a.PostSend([]SendWR{{ID: 1, Opcode: OpRDMAWrite, Flags: SendSignaled}})
	})
	if got[0].ID != 1 || got[0].Status != rdma.WCSuccess {
		t.Errorf("zero-length write: %+v", got[0])
	}
	if err := b.PostRecv([]RecvWR{{ID: 2}}); err != nil {
		t.Fatal(err)
	}
	got = wait("QP to ERR", func() error { return b.Modify(&qp.Attr{State: qp.Err}, qp.MaskState) })
	if got[0].ID != 2 || got[0].Status != rdma.WCWRFlushErr {
		t.Errorf("flushed receive: %+v", got[0])
	}
}
