//go:build linux

package rdmacm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// callerQP makes QPs the way a Setup giving the caller's QP would: an RC
// QP with its own CQ (no completion channel: the test polls it).
type callerQP struct {
	q  *uverbs.QP
	cq *uverbs.CQ
}

func (c *callerQP) setup(ep *rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
	pd := ep.PD()
	var err error
	if c.cq, err = pd.Context().CreateCQ(16, nil, 0); err != nil {
		return rdmacm.ConnSetup{}, err
	}
	c.q, err = pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: c.cq, RecvCQ: c.cq,
		Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	return rdmacm.ConnSetup{QP: c.q}, err
}

// poll returns the next n completions of the caller's CQ.
func (c *callerQP) poll(ctx context.Context, n int) ([]uverbs.WC, error) {
	var out []uverbs.WC
	buf := make([]uverbs.WC, 4)
	for len(out) < n {
		k, err := c.cq.Poll(buf)
		if err != nil {
			return out, err
		}
		out = append(out, buf[:k]...)
		if k == 0 {
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	for _, wc := range out {
		if wc.Status != rdmacm.WCSuccess {
			return out, fmt.Errorf("completion %+v", wc)
		}
	}
	return out, nil
}

func (c *callerQP) close() {
	if c.q != nil {
		c.q.Close()
	}
	if c.cq != nil {
		c.cq.Close()
	}
}

// TestExternalQPInGuest connects with the caller's QPs: a client QP with
// ErrorQPOnClose (Close leaves the QP in ERR, not destroyed) against the
// server's own QP, then one without it (Close leaves the QP's state
// alone) against the server's caller QP. The server's Setup chooses per
// connection, from the REQ's private data.
func TestExternalQPInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	t.Logf("backend %s", backend)
	var s callerQP
	defer s.close()
	l, err := rdmacm.Listen(exampleHost+":7405", &rdmacm.EndpointOptions{Backend: backend,
		Setup: func(ep *rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
			if string(ep.PrivateData()[:3]) == "ext" {
				return s.setup(ep)
			}
			return rdmacm.ConnSetup{}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serverErr := make(chan error, 2)
	go func() {
		ep, err := l.Accept(ctx)
		if err != nil {
			serverErr <- err
			return
		}
		serverErr <- echoOnce(ctx, ep)
		ep, err = l.Accept(ctx)
		if err != nil {
			serverErr <- err
			return
		}
		serverErr <- func() error {
			defer ep.Close()
			buf, err := ep.RegMsgs(32)
			if err != nil {
				return err
			}
			defer buf.Close()
			if err := ep.PostRecv(buf, 0, 32); err != nil {
				return err
			}
			wcs, err := s.poll(ctx, 1)
			if err != nil {
				return err
			}
			if err := ep.PostSend(buf, 0, int(wcs[0].ByteLen)); err != nil {
				return err
			}
			_, err = s.poll(ctx, 1)
			return err
		}()
	}()

	for i, errOnClose := range []bool{true, false} {
		var c callerQP
		pd := []byte("own")
		if i == 1 {
			pd = []byte("ext")
		}
		ep, err := rdmacm.Dial(ctx, exampleHost+":7405", &rdmacm.EndpointOptions{Backend: backend, ErrorQPOnClose: errOnClose,
			PrivateData: pd, Setup: c.setup})
		if err != nil {
			c.close()
			t.Fatalf("Dial %d with the caller's QP: %v", i, err)
		}
		if ep.QP() != c.q || c.q.State() != qp.RTS {
			t.Fatalf("endpoint QP %p state %v, want the caller's %p in RTS", ep.QP(), c.q.State(), c.q)
		}
		if _, err := ep.WaitRecv(ctx); err == nil {
			t.Fatal("WaitRecv on the caller's QP succeeded")
		}
		buf, err := ep.RegMsgs(64)
		if err != nil {
			t.Fatal(err)
		}
		if err := ep.PostRecv(buf, 32, 32); err != nil {
			t.Fatal(err)
		}
		n := copy(buf.Bytes(), fmt.Sprintf("ext %d", i))
		if err := ep.PostSend(buf, 0, n); err != nil {
			t.Fatal(err)
		}
		if _, err := c.poll(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if got, want := string(buf.Bytes()[32:32+n]), fmt.Sprintf("ext %d", i); got != want {
			t.Fatalf("echo %q, want %q", got, want)
		}
		if err := <-serverErr; err != nil {
			t.Fatalf("server: %v", err)
		}
		if err := ep.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		want := qp.RTS
		if errOnClose {
			want = qp.Err
		}
		if got := c.q.State(); got != want {
			t.Fatalf("ErrorQPOnClose %v: QP in %v after Close, want %v", errOnClose, got, want)
		}
		// Still the caller's: modifiable and destroyable.
		if err := c.q.Modify(&qp.Attr{State: qp.Err}, qp.MaskState); err != nil {
			t.Fatalf("Modify after Close: %v", err)
		}
		buf.Close()
		if err := c.q.Close(); err != nil {
			t.Fatalf("QP Close after the endpoint's: %v", err)
		}
		c.q = nil
		c.close()
	}
}
