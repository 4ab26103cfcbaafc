//go:build linux

package rdmacm_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// TestRecvBeforeAcceptInGuest: a client with RNR retry count 0 (set by the
// server's REP, whose RNR retry count is the active side's) sends as soon
// as Dial returns. With RecvSlots the server's receive is posted
// before the REP leaves, so the message is received; without (the
// control) the send fails with RNR retries exceeded, which shows the
// first half tests what it claims.
func TestRecvBeforeAcceptInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	for _, slots := range []int{1, 0} {
		l, err := rdmacm.Listen(exampleHost+":7406", &rdmacm.EndpointOptions{Backend: backend, RecvSlots: slots, RecvSlotSize: 64, RNRRetryCount: -1})
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			msg string
			err error
		}
		served := make(chan result, 1)
		go func() {
			ep, err := l.Accept(ctx)
			if err != nil {
				served <- result{err: err}
				return
			}
			defer ep.Close()
			if slots == 0 {
				select { // the control posts nothing
				case <-ep.Done():
				case <-ctx.Done():
				}
				served <- result{err: ep.Err()}
				return
			}
			wc, err := ep.WaitRecv(ctx)
			if err != nil {
				served <- result{err: err}
				return
			}
			served <- result{msg: string(ep.RecvMR().Bytes()[wc.ID : wc.ID+uint64(wc.ByteLen)])}
		}()
		ep, err := rdmacm.Dial(ctx, exampleHost+":7406", &rdmacm.EndpointOptions{Backend: backend})
		if err != nil {
			t.Fatal(err)
		}
		buf, err := ep.RegMsgs(64)
		if err != nil {
			t.Fatal(err)
		}
		n := copy(buf.Bytes(), "at once")
		if err := ep.PostSend(buf, 0, n); err != nil {
			t.Fatal(err)
		}
		_, sendErr := ep.WaitSend(ctx)
		ep.Close()
		buf.Close()
		t0 := time.Now()
		r := <-served
		t.Logf("slots %d: send %v; server %q %v after %v", slots, sendErr, r.msg, r.err, time.Since(t0))
		l.Close()
		var we *rdmacm.WCError
		if slots == 0 {
			if !errors.As(sendErr, &we) || we.Status != rdmacm.WCRNRRetryExcErr {
				t.Fatalf("control without RecvSlots: send %v, want RNR retries exceeded", sendErr)
			}
			continue
		}
		if sendErr != nil || r.err != nil || r.msg != "at once" {
			t.Fatalf("RecvSlots 1: send %v; server received %q, %v", sendErr, r.msg, r.err)
		}
	}
}

// TestListenerRegWildcardInGuest: a listener on every device has no
// device to register on; the error names the address and the fix. On an
// address, the registration works.
func TestListenerRegWildcardInGuest(t *testing.T) {
	guest.Require(t)
	opts := &rdmacm.EndpointOptions{Backend: guestBackend()}
	l, err := rdmacm.Listen(":7407", opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.RegWrite(4096)
	l.Close()
	if !errors.Is(err, rdmacm.ErrNoDevice) || !strings.Contains(err.Error(), `":7407"`) ||
		!strings.Contains(err.Error(), "listen on the device's IP address") || strings.Count(err.Error(), "rdmacm:") != 1 {
		t.Fatalf("RegWrite on \":7407\": %v", err)
	}
	l, err = rdmacm.Listen(exampleHost+":7407", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, err := l.RegWrite(4096)
	if err != nil {
		t.Fatalf("RegWrite on %s: %v", exampleHost, err)
	}
	if m.Remote().Len != 4096 || m.Remote().RKey == 0 && m.Remote().Addr == 0 {
		t.Fatalf("RemoteBuf %+v", m.Remote())
	}
	m.Close()
}

// TestECEOnRxeInGuest: rxe applies no ECE. The endpoint's own QP then
// refuses an ECE asked for (Dial and Accept), sends none, and declines an
// offer: LocalECE is what the device applied.
func TestECEOnRxeInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	want := &ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000001}

	l, err := rdmacm.Listen(exampleHost+":7408", &rdmacm.EndpointOptions{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *rdmacm.Endpoint, 1)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			ep, err := l.Accept(ctx)
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- ep
		}
	}()
	// The client's own QP, ECE asked for: refused before any REQ.
	_, err = rdmacm.Dial(ctx, exampleHost+":7408", &rdmacm.EndpointOptions{Backend: backend, ECE: want})
	if !errors.Is(err, rdmacm.ErrNotSupported) || !strings.Contains(err.Error(), "applies no ECE") {
		t.Fatalf("Dial asking for ECE on rxe: %v, want ErrNotSupported", err)
	}
	// One prefix, and the address dialed.
	if msg := err.Error(); strings.Count(msg, "rdmacm: ") != 1 || strings.Contains(msg, ": cm: ") || strings.Contains(msg, "uverbs: ") ||
		!strings.HasPrefix(msg, "rdmacm: dial "+exampleHost+":7408: ") {
		t.Fatalf("Dial's error %q: want one prefix and the address", msg)
	}
	// The client's QP offers ECE (sent as given); the server's own QP
	// applies none and declines.
	var c callerQP
	defer c.close()
	ep, err := rdmacm.Dial(ctx, exampleHost+":7408", &rdmacm.EndpointOptions{Backend: backend, ECE: want, Setup: c.setup})
	if err != nil {
		t.Fatal(err)
	}
	sep := <-accepted
	if got := sep.RemoteECE(); got != *want {
		t.Errorf("server: REQ offered %v, want %v", got, *want)
	}
	if got := sep.LocalECE(); !got.IsZero() {
		t.Errorf("server's own QP on rxe answered %v, want none", got)
	}
	if got := ep.RemoteECE(); !got.IsZero() {
		t.Errorf("client: REP carried %v, want none", got)
	}
	if got := ep.LocalECE(); got != *want {
		t.Errorf("client's QP sent %v, want %v", got, *want)
	}
	sep.Close()
	ep.Close()

	// The server's own QP asked for ECE: Listen on the device refuses it;
	// on every device, the request is rejected and Accept says why.
	if l2, err := rdmacm.Listen(exampleHost+":7409", &rdmacm.EndpointOptions{Backend: backend, ECE: want}); !errors.Is(err, rdmacm.ErrNotSupported) {
		if err == nil {
			l2.Close()
		}
		t.Fatalf("Listen on rxe asking for ECE: %v, want ErrNotSupported", err)
	}
	l2, err := rdmacm.Listen(":7409", &rdmacm.EndpointOptions{Backend: backend, ECE: want})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	go func() {
		_, err := l2.Accept(ctx)
		acceptErr <- err
	}()
	if ep, err := rdmacm.Dial(ctx, exampleHost+":7409", &rdmacm.EndpointOptions{Backend: backend}); err == nil {
		ep.Close()
		t.Fatal("Dial to a server that cannot apply its ECE succeeded")
	}
	if err := <-acceptErr; !errors.Is(err, rdmacm.ErrNotSupported) {
		t.Fatalf("Accept asking for ECE on rxe: %v, want ErrNotSupported", err)
	}
}

// TestEndOfConnectionInGuest: the receiver gets the messages that arrived
// before the peer's disconnect, then io.EOF with no completion (the
// flushed receives are not returned), again on every call; its sends then
// fail with ErrDisconnected.
func TestEndOfConnectionInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	l, err := rdmacm.Listen(exampleHost+":7410", &rdmacm.EndpointOptions{Backend: backend, RecvSlots: 4, RecvSlotSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *rdmacm.Endpoint, 1)
	go func() {
		ep, err := l.Accept(ctx)
		if err != nil {
			t.Error(err)
		}
		accepted <- ep
	}()
	ep, err := rdmacm.Dial(ctx, exampleHost+":7410", &rdmacm.EndpointOptions{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	sep := <-accepted
	if sep == nil {
		t.FailNow()
	}
	defer sep.Close()
	buf, err := ep.RegMsgs(64)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	copy(buf.Bytes(), "one")
	if err := ep.PostSend(buf, 0, 3); err != nil {
		t.Fatal(err)
	}
	if wc, err := ep.WaitSend(ctx); err != nil || wc.Opcode != rdmacm.WCSend {
		t.Fatalf("WaitSend: %+v %v", wc, err)
	}
	if err := ep.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	wc, err := sep.WaitRecv(ctx)
	if err != nil || string(sep.RecvMR().Bytes()[wc.ID:wc.ID+uint64(wc.ByteLen)]) != "one" {
		t.Fatalf("first WaitRecv: %+v %v", wc, err)
	}
	for i := range 3 {
		wc, err := sep.WaitRecv(ctx)
		if err != io.EOF || wc != (rdmacm.WC{}) {
			t.Fatalf("WaitRecv %d after the disconnect: %+v %v, want io.EOF and no completion", i, wc, err)
		}
	}
	if err := sep.PostSend(sep.RecvMR(), 0, 1); err == nil {
		if _, err := sep.WaitSend(ctx); !errors.Is(err, rdmacm.ErrDisconnected) {
			t.Fatalf("WaitSend after the end: %v, want ErrDisconnected", err)
		}
	}
	if !errors.Is(sep.Err(), io.EOF) {
		t.Fatalf("Err %v, want io.EOF", sep.Err())
	}
}

// TestListenAgainAtOnceInGuest: the last endpoint of a channel closes in
// another goroutine while a new listener opens. On our engine the closing
// channel gives the port's CM agent back and the new one registers its
// own, so the Listen must wait for the Close to finish, not only for the
// old channel's events to stop.
func TestListenAgainAtOnceInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := &rdmacm.EndpointOptions{Backend: guestBackend()}
	addr := exampleHost + ":7407"
	for i := range 20 {
		l, err := rdmacm.Listen(addr, opts)
		if err != nil {
			t.Fatalf("listen %d: %v", i, err)
		}
		accepted := make(chan *rdmacm.Endpoint, 1)
		go func() {
			sep, err := l.Accept(ctx)
			if err != nil {
				t.Errorf("accept %d: %v", i, err)
			}
			accepted <- sep
		}()
		ep, err := rdmacm.Dial(ctx, addr, opts)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		sep := <-accepted
		l.Close()
		ep.Close()
		closed := make(chan struct{})
		go func() {
			if sep != nil {
				sep.Close() // the channel's last reference
			}
			close(closed)
		}()
		time.Sleep(time.Duration(i) * 250 * time.Microsecond)
		l2, err := rdmacm.Listen(addr, opts)
		<-closed
		if err != nil {
			t.Fatalf("listen while the last endpoint closes (%d): %v", i, err)
		}
		l2.Close()
	}
}
