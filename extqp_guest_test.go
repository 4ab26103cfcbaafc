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

// callerQP makes QPs the way a caller of DialQP/AcceptQP would: an RC QP
// with its own CQ (no completion channel: the test polls it).
type callerQP struct {
	q  *uverbs.QP
	cq *uverbs.CQ
}

func (c *callerQP) newQP(pd *uverbs.PD) (*uverbs.QP, error) {
	var err error
	if c.cq, err = pd.Context().CreateCQ(16, nil, 0); err != nil {
		return nil, err
	}
	c.q, err = pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: c.cq, RecvCQ: c.cq,
		Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	return c.q, err
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
		if wc.Status != uverbs.WCSuccess {
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

// TestExternalQPInGuest connects with the caller's QPs: DialQP with
// ErrorQPOnClose (Close leaves the QP in ERR, not destroyed), then DialQP
// without it against AcceptQP (Close leaves the QP's state alone).
func TestExternalQPInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	t.Logf("backend %s", backend)
	l, err := rdmacm.Listen(exampleHost+":7405", &rdmacm.EndpointOptions{Backend: backend})
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
		var s callerQP
		defer s.close()
		ep, err = l.AcceptQP(ctx, nil, s.newQP)
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
		ep, err := rdmacm.DialQP(ctx, exampleHost+":7405", &rdmacm.EndpointOptions{Backend: backend, ErrorQPOnClose: errOnClose}, c.newQP)
		if err != nil {
			c.close()
			t.Fatalf("DialQP %d: %v", i, err)
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
