//go:build linux

package umad

// Reliability tests on the real wire, run in guest a without ib_cm
// (vmexec -nocm-a): malformed MADs from guest b, and rping in guest b
// killed mid-handshake and after Established.

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/malformed"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

const (
	malformedEnv    = "UMAD_MALFORMED_SENDER"
	malformedRounds = 3
	malformedRandom = 44
)

// TestMalformedSenderHelper runs on guest b: it sends the malformed cases
// to guest a's GSI over UDP port 4791.
func TestMalformedSenderHelper(t *testing.T) {
	if os.Getenv(malformedEnv) != "1" {
		t.Skip("helper for TestGuestMalformedMADs")
	}
	src, err := netip.ParseAddr(os.Getenv(malformedEnv + "_SRC"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := netip.ParseAddr(os.Getenv(malformedEnv + "_DST"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := malformed.NewSender(src)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	to := netip.AddrPortFrom(dst, roce.UDPPort)
	if os.Getenv(malformedEnv+"_MODE") == "oversized" {
		if err := s.Send(to, malformed.Oversized()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		n, err := s.SendAll(to, []malformed.Case{followUp()}, malformedRounds, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("SENT %d", n+1)
		return
	}
	n, err := s.SendAll(to, malformed.Cases(1, malformedRandom), malformedRounds, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SENT %d", n)
}

// recorder keeps a copy of every MAD the transport delivers.
type recorder struct {
	Transport
	mu  sync.Mutex
	got [][]byte
}

func (r *recorder) Recv(ctx context.Context, buf []byte) (engine.Addr, int, error) {
	a, n, err := r.Transport.Recv(ctx, buf)
	if err == nil {
		r.mu.Lock()
		r.got = append(r.got, append([]byte(nil), buf[:n]...))
		r.mu.Unlock()
	}
	return a, n, err
}

// TestGuestMalformedMADs: guest b sends malformed CM MADs with valid
// ICRCs to guest a's QP 1. The engine counts and drops what reaches it,
// answers what deserves an answer (DREQ for an unknown ID: DREP; REQ for
// no listener: REJ), keeps its invariants, and then completes a normal
// handshake with rping -c from guest b.
func TestGuestMalformedMADs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	rec := &recorder{}
	g := startGuestCM(t, ctx, guestOpts{wrap: func(tr Transport) Transport { rec.Transport = tr; return rec }})
	cases := malformed.Cases(1, malformedRandom)
	res, err := runSender(ctx, "cases")
	if err != nil {
		t.Fatal(err)
	}
	sent := len(cases) * malformedRounds
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, fmt.Sprintf("SENT %d", sent)) {
		t.Fatalf("sender on guest b: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	time.Sleep(2 * time.Second) // the last datagrams reach the engine

	// Which cases reached the CM agent, matched by content (a short
	// payload arrives zero-padded to 256 bytes, if at all).
	rec.mu.Lock()
	got := rec.got
	rec.mu.Unlock()
	reached := map[string]int{}
	unmatched := 0
	for _, m := range got {
		name := ""
		for _, c := range cases { // a full-size case, byte for byte
			if bytes.Equal(m, c.Payload) {
				name = c.Name
				break
			}
		}
		for _, c := range cases { // else a short one, zero-padded
			if name == "" && len(c.Payload) < len(m) && bytes.Equal(m[:len(c.Payload)], c.Payload) && allZero(m[len(c.Payload):]) {
				name = c.Name
			}
		}
		if name == "" {
			unmatched++
			continue
		}
		reached[name]++
	}
	var dropped, kernelReached []string
	for _, c := range cases {
		if reached[c.Name] == 0 {
			dropped = append(dropped, c.Name)
		} else if c.KernelDrops {
			kernelReached = append(kernelReached, c.Name)
		}
	}
	st := g.d.Stats()
	t.Logf("MALFORMED-RESULT sent=%d cases=%d reached=%d unmatched=%d short=%d engine=%+v send-errors=%d",
		sent, len(cases), g.d.Received.Load(), unmatched, g.d.Short.Load(), st, g.d.SendErrors.Load())
	t.Logf("MALFORMED-NOT-REACHED %v", dropped)
	t.Logf("MALFORMED-REACHED %v", reached)
	if g.d.Received.Load() == 0 {
		t.Fatal("nothing reached the CM agent: ICRC or addressing wrong")
	}
	if len(kernelReached) > 0 {
		t.Errorf("ib_mad let through %v, expected to drop them", kernelReached)
	}
	for _, name := range []string{"attribute-0x00ff", "dreq-unknown-id", "rtu-unknown-id", "lap", "req-unknown-service"} {
		if reached[name] != malformedRounds {
			t.Errorf("%s reached the agent %d times, want %d", name, reached[name], malformedRounds)
		}
	}
	if st.Malformed == 0 || st.BadAttribute == 0 || st.Dropped == 0 || st.LAPDropped < malformedRounds {
		t.Errorf("engine counters %+v", st)
	}
	if st.Malformed != st.BadLength+st.BadVersion+st.BadAttribute+st.BadField {
		t.Errorf("malformed %d is not the sum of its reasons: %+v", st.Malformed, st)
	}
	if err := g.d.Do(func(e *engine.Engine, _ time.Time) error { return e.CheckInvariants() }); err != nil {
		t.Fatal(err)
	}
	// The engine still works: a normal handshake with rping from b.
	passiveHandshake(t, ctx, g, 7176)
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// passiveHandshake listens on port, lets rping -c in guest b connect,
// accepts, and disconnects.
func passiveHandshake(t *testing.T, ctx context.Context, g *guestCM, port uint16) {
	t.Helper()
	lid := g.listen(t, port)
	defer g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, lid) })
	cli, err := guest.Peer().Start(ctx, fmt.Sprintf("rping -c -v -a %s -p %d -C 1", guest.Local().Addr, port))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Stop(ctx)
	req := g.wait(t, ctx, engine.EventConnectRequest)
	g.accept(t, req, 0x1236)
	g.wait(t, ctx, engine.EventEstablished)
	g.disconnect(t, ctx, req.ID)
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, req.ID) })
}

// waitLen waits until the engine holds want IDs (TimeWait included).
func waitLen(t *testing.T, ctx context.Context, g *guestCM, want int) {
	t.Helper()
	for {
		var n, timers int
		_ = g.d.Do(func(e *engine.Engine, _ time.Time) error {
			n, timers = e.Len(), e.Timers()
			return e.CheckInvariants()
		})
		if n == want {
			t.Logf("engine holds %d IDs, %d timers", n, timers)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("engine still holds %d IDs, want %d", n, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startKillable starts rping -c on guest b against port, recording its
// PID so that killPeer can SIGKILL exactly that process.
func startKillable(t *testing.T, ctx context.Context, port uint16) {
	t.Helper()
	pidFile := fmt.Sprintf("/tmp/umad-rping-%d.pid", port)
	p, err := guest.Peer().Start(ctx, fmt.Sprintf("rping -c -v -a %s -p %d -C 1 & echo $! > %s; wait", guest.Local().Addr, port, pidFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })
}

func killPeer(t *testing.T, ctx context.Context, port uint16) {
	t.Helper()
	res, err := guest.Peer().Run(ctx, fmt.Sprintf("kill -KILL $(cat /tmp/umad-rping-%d.pid)", port))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("kill on guest b: %v %+v", err, res)
	}
}

func waitAny(t *testing.T, ctx context.Context, g *guestCM, want ...engine.EventType) engine.Event {
	t.Helper()
	for {
		select {
		case ev := <-g.events:
			t.Logf("event %v", &ev)
			for _, w := range want {
				if ev.Type == w {
					return ev
				}
			}
		case <-ctx.Done():
			t.Fatalf("none of %v: %v", want, ctx.Err())
		}
	}
}

// TestGuestPeerKilledMidHandshake: rping -c in guest b sends its REQ and
// is killed by SIGKILL before we answer. Closing its rdma_cm ID makes b's
// kernel CM send REJ (reason 4, timeout) for a connection in REQ_SENT
// (cm_destroy_id); the engine reports REJECTED and, once destroyed, holds
// nothing but the listener.
func TestGuestPeerKilledMidHandshake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	g := startGuestCM(t, ctx)
	const port = 7177
	lid := g.listen(t, port)
	startKillable(t, ctx, port)
	req := g.wait(t, ctx, engine.EventConnectRequest)
	killPeer(t, ctx, port)
	ev := waitAny(t, ctx, g, engine.EventRejected)
	if ev.ID != req.ID || ev.Reason != mad.RejectTimeout {
		t.Errorf("REJECTED %v reason %d, want ID %v reason 4 (timeout)", ev.ID, ev.Reason, req.ID)
	}
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, req.ID) })
	waitLen(t, ctx, g, 1)
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, lid) })
	waitLen(t, ctx, g, 0)
}

// TestGuestPeerKilledAfterEstablished: once established, rping -c in
// guest b is killed by SIGKILL; b's kernel CM sends a DREQ as its ID is
// destroyed (cm_destroy_id in ESTABLISHED). The engine reports
// DISCONNECT_REQUEST, our DREP puts the ID in TimeWait, TIMEWAIT_EXIT
// follows, and after Destroy nothing is left.
func TestGuestPeerKilledAfterEstablished(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	g := startGuestCM(t, ctx)
	const port = 7178
	lid := g.listen(t, port)
	startKillable(t, ctx, port)
	req := g.wait(t, ctx, engine.EventConnectRequest)
	g.accept(t, req, 0x1237)
	g.wait(t, ctx, engine.EventEstablished)
	killPeer(t, ctx, port)
	ev := waitAny(t, ctx, g, engine.EventDisconnectRequest, engine.EventRejected)
	if ev.Type == engine.EventDisconnectRequest {
		if err := g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Disconnect(now, req.ID, nil) }); err != nil {
			t.Fatal(err)
		}
	}
	g.wait(t, ctx, engine.EventTimewaitExit)
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, req.ID) })
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, lid) })
	waitLen(t, ctx, g, 0)
}

// TestGuestUnreachablePeer: a REQ to a GID nobody answers (192.0.2.99) is
// resent MaxCMRetries times, 2 × PacketLifeTime + the remote CM response
// timeout apart (cm_send_handler, cma's timeouts), then REQ_ERROR; no REJ
// goes out and nothing is left after Destroy.
func TestGuestUnreachablePeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	g := startGuestCM(t, ctx, guestOpts{cfg: func(c *engine.Config) { c.MaxCMRetries, c.CMResponseTimeout = 2, 16 }})
	nobody := netip.MustParseAddr("192.0.2.99")
	p := g.path()
	p.DGID = rdma.GIDFromAddr(nobody)
	var id engine.ID
	start := time.Now()
	if err := g.d.Do(func(e *engine.Engine, now time.Time) (err error) {
		id, err = e.Connect(now, engine.ConnectParams{PortSpace: rdma.PortSpaceTCP,
			Src:  netip.AddrPortFrom(netip.MustParseAddr(guest.Local().Addr), 41001),
			Dst:  netip.AddrPortFrom(nobody, 7174),
			Path: p, QPN: 0x1238, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ev := waitAny(t, ctx, g, engine.EventReqError, engine.EventRejected, engine.EventConnectReply)
	took := time.Since(start)
	// 3 sends, each waiting 2 × 2^(18-8) ms + 2^(16-8) ms = 2304 ms.
	if ev.Type != engine.EventReqError || took < 3*2304*time.Millisecond || took > 3*2304*time.Millisecond+5*time.Second {
		t.Errorf("got %v after %v, want REQ_ERROR after about %v", ev.Type, took, 3*2304*time.Millisecond)
	}
	st := g.d.Stats()
	t.Logf("REQ_ERROR after %v; retransmits %d, send errors %d", took, st.Retransmits, g.d.SendErrors.Load())
	_ = g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, id) })
	waitLen(t, ctx, g, 0)
}

// runSender runs TestMalformedSenderHelper on guest b in the given mode.
func runSender(ctx context.Context, mode string) (*guest.Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return guest.Peer().Run(ctx, fmt.Sprintf("%[1]s=1 %[1]s_MODE=%[2]s %[1]s_SRC=%[3]s %[1]s_DST=%[4]s %[5]s -test.run '^TestMalformedSenderHelper$' -test.v",
		malformedEnv, mode, guest.Peer().Addr, guest.Local().Addr, exe))
}

// followUp is a well-formed DREQ for an unknown ID: it reaches the agent
// on a healthy GSI and draws a DREP.
func followUp() malformed.Case {
	for _, c := range malformed.Cases(1, 0) {
		if c.Name == "dreq-unknown-id" {
			return c
		}
	}
	panic("no dreq-unknown-id case")
}

// TestGuestOversizedMAD runs last: guest b sends one UD SEND to QP 1 with a
// 512-byte payload, longer than the GSI receive buffers, then well-formed
// DREQs. The oversized one must not reach the engine; whether the DREQs
// still do is the kernel's business (rxe completes the receive in error,
// ib_mad does not repost after an error completion) and is logged.
func TestGuestOversizedMAD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	rec := &recorder{}
	g := startGuestCM(t, ctx, guestOpts{wrap: func(tr Transport) Transport { rec.Transport = tr; return rec }})
	res, err := runSender(ctx, "oversized")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, fmt.Sprintf("SENT %d", malformedRounds+1)) {
		t.Fatalf("sender on guest b: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	time.Sleep(2 * time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	followUps := 0
	for _, m := range rec.got {
		if bytes.Equal(m, malformed.Oversized().Payload[:len(m)]) && len(m) > mad.MADSize {
			t.Errorf("the oversized MAD reached the engine (%d bytes)", len(m))
		}
		if bytes.Equal(m, followUp().Payload) {
			followUps++
		}
	}
	st := g.d.Stats()
	t.Logf("OVERSIZED-RESULT received=%d follow-up DREQs reached=%d of %d engine=%+v", g.d.Received.Load(), followUps, malformedRounds, st)
	if err := g.d.Do(func(e *engine.Engine, _ time.Time) error { return e.CheckInvariants() }); err != nil {
		t.Fatal(err)
	}
}
