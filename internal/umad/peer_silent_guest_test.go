//go:build linux

package umad

// The peer guest falls silent: nothing we send reaches it, as if it had
// died. The engine must find out through its own CM timers and free
// everything. Kept before
// reliability_guest_test.go in file order: TestGuestOversizedMAD must stay
// the last test of the package.

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// silencePeer black-holes everything we send to guest b: a permanent
// neighbour entry gives b's address a MAC nobody has, so every MAD we send
// (umad resolves the MAC per send) leaves for nowhere and b never answers,
// as if it had died. Taking b's eth0 down instead left b's CM deaf after
// it came back up (its next handshake got no RTU to our REP), spoiling
// the tests after it. restore removes the entry.
func silencePeer(t *testing.T, ctx context.Context) (restore func()) {
	t.Helper()
	peer := guest.Peer().Addr
	if out, err := exec.Command("ip", "neigh", "replace", peer, "lladdr", "02:00:00:00:00:99", "nud", "permanent", "dev", "eth0").CombinedOutput(); err != nil {
		t.Fatalf("black-holing %s: %v\n%s", peer, err, out)
	}
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		if out, err := exec.Command("ip", "neigh", "del", peer, "dev", "eth0").CombinedOutput(); err != nil {
			t.Errorf("restoring the neighbour entry of %s: %v\n%s", peer, err, out)
		}
	}
	t.Cleanup(restore)
	return restore
}

// TestGuestPeerSilentAfterEstablished: established with rping -s in guest
// b, then b falls silent (silencePeer). Our DREQ is sent MaxCMRetries+1 times, each
// waiting the active side's timeout_ms, 2 × PacketLifeTime + the remote CM
// response timeout (ib_send_cm_req, cm_send_handler); DREQ_ERROR follows,
// then TimeWait, TIMEWAIT_EXIT and nothing left.
func TestGuestPeerSilentAfterEstablished(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	g := startGuestCM(t, ctx, guestOpts{cfg: func(c *engine.Config) { c.MaxCMRetries, c.CMResponseTimeout = 2, 16 }})
	srv, err := guest.Peer().Start(ctx, "rping -s -a "+guest.Peer().Addr+" -p 7179 -C 1")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	waitPeerListening(t, ctx, 7179)
	id, _ := g.connect(t, ctx, 41002, 7179, 0x1239)
	g.do(t, func(e *engine.Engine, now time.Time) error { return e.Establish(now, id, nil) })
	restore := silencePeer(t, ctx)
	retx := g.d.Stats().Retransmits
	start := time.Now()
	if err := g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Disconnect(now, id, nil) }); err != nil {
		t.Fatal(err)
	}
	ev := waitAny(t, ctx, g, engine.EventDreqError, engine.EventDisconnectReply, engine.EventDisconnectRequest)
	took := time.Since(start)
	// 3 sends, 2 × 2^(18-8) + 2^(16-8) = 2304 ms apart.
	const want = 3 * 2304 * time.Millisecond
	if ev.Type != engine.EventDreqError || took < want || took > want+5*time.Second {
		t.Fatalf("got %v after %v, want DREQ_ERROR after about %v", ev.Type, took, want)
	}
	if n := g.d.Stats().Retransmits - retx; n != 2 {
		t.Errorf("%d DREQ retransmissions, want 2", n)
	}
	g.wait(t, ctx, engine.EventTimewaitExit)
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, id) })
	waitLen(t, ctx, g, 0)
	t.Logf("DREQ_ERROR after %v; nothing left", took)
	restore()
}

// TestGuestPeerSilentMidHandshake: rping -c in guest b sends its REQ, then
// b falls silent before our REP (silencePeer; b keeps resending its REQ,
// and each duplicate draws our stored REP, also lost). The REP is resent per the REQ's local CM
// response timeout and max CM retries (b's kernel: 20 and 15, so 16 sends
// 4.096 s apart); REP_ERROR follows and nothing is left after Destroy.
func TestGuestPeerSilentMidHandshake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	g := startGuestCM(t, ctx)
	const port = 7180
	lid := g.listen(t, port)
	cli, err := guest.Peer().Start(ctx, fmt.Sprintf("rping -c -a %s -p %d -C 1", guest.Local().Addr, port))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Stop(context.Background())
	req := g.wait(t, ctx, engine.EventConnectRequest)
	restore := silencePeer(t, ctx)
	start := time.Now()
	g.accept(t, req, 0x123a)
	ev := waitAny(t, ctx, g, engine.EventRepError, engine.EventEstablished, engine.EventRejected)
	took := time.Since(start)
	const want = 16 * 4096 * time.Millisecond
	if ev.Type != engine.EventRepError || took < want || took > want+10*time.Second {
		t.Fatalf("got %v after %v, want REP_ERROR after about %v", ev.Type, took, want)
	}
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, req.ID) })
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, lid) })
	waitLen(t, ctx, g, 0)
	t.Logf("REP_ERROR after %v; nothing left", took)
	restore()
}

// waitPeerListening waits until guest b's kernel lists a listener on port.
func waitPeerListening(t *testing.T, ctx context.Context, port int) {
	t.Helper()
	for {
		r, err := guest.Peer().Run(ctx, "rdma resource show cm_id")
		if err == nil && strings.Contains(r.Stdout, fmt.Sprintf(":%d ", port)) && strings.Contains(r.Stdout, "LISTEN") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("guest b: no listener on port %d", port)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
