//go:build linux

package rdmacm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// TestSharedCQInGuest dials two endpoints whose send and receive queues
// complete on one shared CQ (one completion channel), sends on both and
// receives the server's answers: every completion comes from CQ.Next and
// names its endpoint by QPNum.
func TestSharedCQInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	t.Logf("backend %s", backend)

	l, err := rdmacm.Listen(exampleHost+":7404", &rdmacm.EndpointOptions{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serverErr := make(chan error, 2)
	go func() {
		for range 2 {
			ep, err := l.Accept(ctx)
			if err != nil {
				serverErr <- err
				return
			}
			go func() { serverErr <- echoOnce(ctx, ep) }()
		}
	}()

	cq, err := rdmacm.NewCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	opts := &rdmacm.EndpointOptions{Backend: backend, SendCQ: cq, RecvCQ: cq}
	eps := map[uint32]*rdmacm.Endpoint{}
	bufs := map[uint32]*rdmacm.MR{}
	for range 2 {
		ep, err := rdmacm.Dial(ctx, exampleHost+":7404", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		if _, err := ep.WaitSend(ctx); err == nil {
			t.Fatal("WaitSend on an endpoint with a shared CQ succeeded")
		}
		buf, err := ep.RegMsgs(64)
		if err != nil {
			t.Fatal(err)
		}
		defer buf.Close()
		qpn := ep.QPNum()
		eps[qpn], bufs[qpn] = ep, buf
		if err := ep.PostRecv(buf, 32, 32); err != nil {
			t.Fatal(err)
		}
		n := copy(buf.Bytes(), fmt.Sprintf("qp %d", qpn))
		if err := ep.PostSend(buf, 0, n); err != nil {
			t.Fatal(err)
		}
	}
	type key struct {
		qpn  uint32
		recv bool
	}
	seen := map[key]bool{}
	for len(seen) < 4 {
		wc, err := cq.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v (seen %v)", err, seen)
		}
		ep := eps[wc.QPNum]
		if ep == nil {
			t.Fatalf("completion of unknown QP %d", wc.QPNum)
		}
		k := key{wc.QPNum, wc.Opcode == rdmacm.WCRecv}
		if seen[k] {
			t.Fatalf("second completion %+v", wc)
		}
		seen[k] = true
		if k.recv {
			got := string(bufs[wc.QPNum].Bytes()[32 : 32+wc.ByteLen])
			if want := fmt.Sprintf("qp %d", wc.QPNum); got != want {
				t.Fatalf("QP %d received %q, want %q", wc.QPNum, got, want)
			}
		}
	}
	for range 2 {
		if err := <-serverErr; err != nil {
			t.Fatalf("server: %v", err)
		}
	}
	for _, ep := range eps {
		ep.Close()
	}
	if err := cq.Close(); err != nil {
		t.Fatalf("CQ Close: %v", err)
	}
}

// echoOnce receives one message on ep and sends it back.
func echoOnce(ctx context.Context, ep *rdmacm.Endpoint) error {
	defer ep.Close()
	buf, err := ep.RegMsgs(32)
	if err != nil {
		return err
	}
	defer buf.Close()
	if err := ep.PostRecv(buf, 0, 32); err != nil {
		return err
	}
	wc, err := ep.WaitRecv(ctx)
	if err != nil {
		return err
	}
	if err := ep.PostSend(buf, 0, int(wc.ByteLen)); err != nil {
		return err
	}
	_, err = ep.WaitSend(ctx)
	return err
}
