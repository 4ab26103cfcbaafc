package rdmacm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The host half of the shared CQ: everything but the device.
func TestSharedCQHost(t *testing.T) {
	if _, err := NewCQ(-1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("NewCQ(-1): %v", err)
	}
	cq, err := NewCQ(0)
	if err != nil || cq.entries != DefaultCQEntries {
		t.Fatalf("NewCQ(0): %v %+v", err, cq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cq.Next(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Next before any endpoint: %v", err)
	}
	c, err := (&EndpointOptions{SendCQ: cq, RecvCQ: cq}).config()
	if err != nil || c.sendCQ != cq || c.recvCQ != cq {
		t.Fatalf("config: %v %+v", err, c)
	}
	cq.users = 1
	if err := cq.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("Close while used: %v", err)
	}
	cq.unbind()
	if err := cq.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := cq.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := cq.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if _, err := cq.bind(nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("bind after Close: %v", err)
	}

	// An endpoint whose queues complete on a shared CQ refuses its own
	// waits.
	ep := &Endpoint{closed: make(chan struct{})}
	ep.gone, ep.setGone = context.WithCancelCause(context.Background())
	if _, err := ep.WaitSend(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("WaitSend on a shared CQ: %v", err)
	}
	if _, err := ep.WaitRecv(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("WaitRecv on a shared CQ: %v", err)
	}
}

// Next calls are served one at a time: one waiting its turn ends with its
// ctx.
func TestSharedCQNextCtx(t *testing.T) {
	cq, _ := NewCQ(4)
	cq.sem <- struct{}{} // another Next holds the CQ
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := cq.Next(ctx); !errors.Is(err, ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next waiting its turn: %v", err)
	}
	<-cq.sem
}
