package rdmacm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The host half of the shared receive queue: its arguments, the options
// that go with it, and its life before and after a device.
func TestSRQHost(t *testing.T) {
	for _, a := range [][2]int{{0, 64}, {-1, 64}, {MaxSRQSlots + 1, 0}, {4, -1}, {4, 1<<30 + 1}, {1 << 20, 1 << 21}} {
		if _, err := NewSRQ(a[0], a[1]); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewSRQ(%d, %d): %v, want ErrInvalidArgument", a[0], a[1], err)
		}
	}
	srq, err := NewSRQ(64, 128)
	if err != nil || srq.Slots() != 64 || srq.SlotSize() != 128 {
		t.Fatalf("NewSRQ(64, 128): %v %+v", err, srq)
	}
	cq, _ := NewCQ(64)
	small, _ := NewCQ(32)
	c, err := (&EndpointOptions{SRQ: srq, RecvCQ: cq, SendCQ: cq}).config()
	if err != nil || c.srq != srq {
		t.Fatalf("config: %v %+v", err, c)
	}
	// The REQ and REP say the QP is on an SRQ; without one they do not.
	if p := c.connParam(9); !p.SRQ {
		t.Errorf("connParam on an SRQ: %+v", p)
	}
	if c, _ := (&EndpointOptions{RecvCQ: cq}).config(); c.connParam(9).SRQ {
		t.Error("connParam without an SRQ has the SRQ bit")
	}
	for name, o := range map[string]*EndpointOptions{
		"no RecvCQ":        {SRQ: srq},
		"only SendCQ":      {SRQ: srq, SendCQ: cq},
		"MaxRecvWR":        {SRQ: srq, RecvCQ: cq, MaxRecvWR: 8},
		"RecvSlots":        {SRQ: srq, RecvCQ: cq, RecvSlots: 8, RecvSlotSize: 64},
		"CQ under slots":   {SRQ: srq, RecvCQ: small},
		"negative recv WR": {SRQ: srq, RecvCQ: cq, MaxRecvWR: -1},
	} {
		_, err := o.config()
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "SRQ") {
			t.Errorf("%s: %v, want ErrInvalidArgument naming the SRQ", name, err)
		}
	}

	// Before any endpoint binds it, nothing is posted or registered.
	if err := srq.PostRecv(0); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "no endpoint") {
		t.Errorf("PostRecv before an endpoint: %v", err)
	}
	for _, off := range []int{-128, 1, 127, 64 * 128} {
		if err := srq.PostRecv(off); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("PostRecv(%d): %v, want a bad offset", off, err)
		}
	}
	if srq.MR() != nil || srq.Verbs() != nil || srq.Data(WC{ByteLen: 4}) != nil {
		t.Error("memory or an SRQ before an endpoint")
	}
	srq.users = 1
	if err := srq.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("Close while used: %v", err)
	}
	srq.unbind()
	if err := srq.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := srq.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := srq.PostRecv(0); !errors.Is(err, ErrClosed) {
		t.Errorf("PostRecv after Close: %v", err)
	}
	if _, err := srq.bind(nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("bind after Close: %v", err)
	}

	// Zero-length slots: only offset 0, and no data.
	imm, _ := NewSRQ(4, 0)
	if err := imm.PostRecv(0); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "no endpoint") {
		t.Errorf("zero-length PostRecv(0): %v", err)
	}
	if err := imm.PostRecv(1); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "offset") {
		t.Errorf("zero-length PostRecv(1): %v", err)
	}

	// An endpoint on an SRQ has no receive queue of its own.
	ep := &Endpoint{closed: make(chan struct{}), cfg: config{srq: imm}}
	ep.gone, ep.setGone = context.WithCancelCause(context.Background())
	if err := ep.PostRecv(nil, 0, 0); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "SRQ.PostRecv") {
		t.Errorf("Endpoint.PostRecv on an SRQ: %v", err)
	}
}
