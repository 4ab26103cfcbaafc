//go:build linux

package cm

// Endurance tests, run inside guest a by go test -exec vmexec:
//
//   - TestGuestEndurance: connect/transfer/disconnect cycles from guest a to
//     a server in guest b (this test binary in helper mode, kernel backend),
//     on whichever backend BackendAuto picks in guest a (kernel under plain
//     vmexec, user under vmexec -nocm-a). Afterwards the kernel's RDMA
//     resources, the process's fds and its goroutines are back at their
//     baseline.
//   - TestGuestKernelBackendPeerKilled: rping -c in guest b SIGKILLed mid
//     handshake and after ESTABLISHED, against a kernel-backend listener.
//
// The helpers rdmaResources, openFDs, kernelChannel, startServer, localAddr,
// nextQPN and kctx are in kernel_test.go.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

const (
	// enduranceServerEnv makes TestEnduranceServerHelper serve; the
	// address and the number of connections come with it.
	enduranceServerEnv = "CM_ENDURANCE_SERVER"
	enduranceAddrEnv   = "CM_ENDURANCE_SERVER_ADDR"
	enduranceConnsEnv  = "CM_ENDURANCE_SERVER_CONNS"
	// enduranceCyclesEnv overrides the number of measured cycles.
	enduranceCyclesEnv = "CM_ENDURANCE_CYCLES"

	endurancePort   = 7411
	enduranceMsgLen = 64
	// enduranceReady and enduranceDone are printed by the server.
	enduranceReady = "ENDURANCE-SERVER-READY"
	enduranceDone  = "ENDURANCE-SERVER-DONE"
)

// enduranceCycles overrides CM_ENDURANCE_CYCLES: vmexec forwards only a
// few variables (CI, GO*) into the guest, but passes test flags through:
// go test -exec vmexec ./cm/ -args -cm.endurance-cycles=20.
var enduranceCycles = flag.Int("cm.endurance-cycles", 0, "TestGuestEndurance cycles (0: $"+enduranceCyclesEnv+", else 1000)")

// enduranceCaps sizes the library QPs of both sides.
var enduranceCaps = QPInit{Cap: qp.Cap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}}

// enduranceMessage is the 64-byte SEND of cycle i: its number in text,
// then a pattern that depends on it.
func enduranceMessage(i int) []byte {
	m := make([]byte, enduranceMsgLen)
	n := copy(m, fmt.Sprintf("rdmacm endurance cycle %07d;", i))
	for j := n; j < len(m); j++ {
		m[j] = byte(i*31 + j)
	}
	return m
}

// waitCompletion polls cq for one completion, sleeping on its completion
// channel in between (arm, poll again for a completion that raced the
// arm, then wait).
func waitCompletion(ctx context.Context, cq *uverbs.CQ, cc *uverbs.CompChannel) (uverbs.WC, error) {
	wc := make([]uverbs.WC, 1)
	for {
		n, err := cq.Poll(wc)
		if err != nil {
			return uverbs.WC{}, fmt.Errorf("poll CQ: %w", err)
		}
		if n == 1 {
			return wc[0], nil
		}
		if err := cq.RequestNotify(false); err != nil {
			return uverbs.WC{}, fmt.Errorf("arm CQ: %w", err)
		}
		if n, _ = cq.Poll(wc); n == 1 {
			return wc[0], nil
		}
		if _, err := cc.Wait(ctx); err != nil {
			return uverbs.WC{}, fmt.Errorf("wait for a completion: %w", err)
		}
	}
}

// TestEnduranceServerHelper is the server of TestGuestEndurance, run in
// guest b (stock kernel CM) with CM_ENDURANCE_SERVER=1. For each of the
// CM_ENDURANCE_SERVER_CONNS connections it creates a library QP, posts one
// receive, accepts, checks the 64-byte SEND of cycle k (the k-th
// connection, 0 being the warm-up), waits for the client's DISCONNECTED,
// answers with its own Disconnect (the DREP) and destroys the ID.
func TestEnduranceServerHelper(t *testing.T) {
	if os.Getenv(enduranceServerEnv) != "1" {
		t.Skip("helper for TestGuestEndurance (runs in guest b)")
	}
	addr, err := netip.ParseAddrPort(os.Getenv(enduranceAddrEnv))
	if err != nil {
		t.Fatalf("%s: %v", enduranceAddrEnv, err)
	}
	conns, err := strconv.Atoi(os.Getenv(enduranceConnsEnv))
	if err != nil || conns <= 0 {
		t.Fatalf("%s=%q: want a positive count", enduranceConnsEnv, os.Getenv(enduranceConnsEnv))
	}
	ch, err := Open(&Options{Backend: BackendKernel})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	l, err := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy()
	if err := l.Bind(addr); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	var mr *uverbs.MR // on the channel's PD, registered with the first ID
	defer func() {
		if mr != nil {
			mr.Close()
		}
	}()
	fmt.Printf("%s %v backend %s\n", enduranceReady, addr, ch.Backend())
	start := time.Now()
	for k := range conns {
		if err := serveEndurance(l, k, buf, &mr); err != nil {
			t.Fatalf("connection %d of %d: %v", k, conns, err)
		}
	}
	fmt.Printf("%s served=%d in %v\n", enduranceDone, conns, time.Since(start).Round(time.Millisecond))
}

func serveEndurance(l *ID, k int, buf *uverbs.Buffer, mr **uverbs.MR) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := l.GetRequest(ctx)
	if err != nil {
		return fmt.Errorf("get request: %w", err)
	}
	defer id.Destroy()
	q, err := id.CreateQP(enduranceCaps)
	if err != nil {
		return err
	}
	if *mr == nil {
		_, pd, err := id.Verbs()
		if err != nil {
			return err
		}
		if *mr, err = pd.RegMR(buf, qp.AccessLocalWrite); err != nil {
			return err
		}
	}
	clear(buf.Bytes()[:2*enduranceMsgLen])
	// Twice the message's room, so that a longer SEND would show in
	// ByteLen instead of failing the receive.
	if err := q.Verbs.PostRecv([]uverbs.RecvWR{{ID: uint64(k), SGEs: []uverbs.SGE{(*mr).SGE(0, 2*enduranceMsgLen)}}}); err != nil {
		return err
	}
	if err := id.Accept(ctx, nil); err != nil {
		return err
	}
	wc, err := waitCompletion(ctx, q.RecvCQ, q.RecvChannel)
	if err != nil {
		return err
	}
	if wc.Status != rdma.WCSuccess || wc.Opcode != rdma.WCRecv || wc.ID != uint64(k) || wc.ByteLen != enduranceMsgLen {
		return fmt.Errorf("receive completion %+v (%v), want success, RECV, ID %d, %d bytes", wc, wc.Status, k, enduranceMsgLen)
	}
	if got, want := buf.Bytes()[:enduranceMsgLen], enduranceMessage(k); !bytes.Equal(got, want) {
		return fmt.Errorf("payload %q, want %q", got, want)
	}
	ev, err := id.GetEvent(ctx)
	if err != nil {
		return fmt.Errorf("waiting for DISCONNECTED: %w", err)
	}
	typ, status := ev.Type, ev.Status
	ev.Ack()
	if typ != EventDisconnected || status != 0 {
		return fmt.Errorf("got %v status %d, want DISCONNECTED", typ, status)
	}
	// The client's DISCONNECTED needs our DREP.
	if err := id.Disconnect(ctx); err != nil {
		return err
	}
	return id.Destroy()
}

// startEnduranceServer runs TestEnduranceServerHelper in guest b and
// waits until it listens.
func startEnduranceServer(t *testing.T, ctx context.Context, addr netip.AddrPort, conns int) *guest.Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	timeout := 14 * time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	p, err := guest.Peer().StartCmd(ctx, guest.Cmd{
		Args: []string{exe, "-test.run", "^TestEnduranceServerHelper$", "-test.v", "-test.timeout", "0"},
		Env: []string{enduranceServerEnv + "=1", enduranceAddrEnv + "=" + addr.String(),
			enduranceConnsEnv + "=" + strconv.Itoa(conns)},
		Timeout: timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r, _ := p.Stop(context.Background())
		if t.Failed() && r != nil {
			t.Logf("server in guest b (exit %d %s):\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Signal, tailOf(r.Stdout), tailOf(r.Stderr))
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.WaitOutput(wctx, enduranceReady); err != nil {
		t.Fatal(err)
	}
	return p
}

func tailOf(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// guestCtx bounds a guest test by the binary's -test.timeout, less a
// margin for the cleanups.
func guestCtx(t *testing.T, def time.Duration) context.Context {
	d := def
	if dl, ok := t.Deadline(); ok && time.Until(dl)-30*time.Second < d {
		d = time.Until(dl) - 30*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// userHeld reports what the user backend of ch and its engines still hold:
// backend IDs, bound ports, engine-ID mappings, and each engine's IDs
// (TimeWait included) and armed timers, with the engines' counters. empty
// says all of it is zero; ok is false on the kernel backend. Engine
// invariant violations are returned as err.
func userHeld(ch *Channel) (held string, empty, ok bool, err error) {
	u, ok := ch.b.(*user)
	if !ok {
		return "", false, false, nil
	}
	u.mu.Lock()
	ids, bound, mapped := len(u.ids), len(u.bound), 0
	for _, p := range u.ports {
		mapped += len(p.byEngine)
	}
	ports := u.ports
	u.mu.Unlock()
	var conns, timers int
	var st engine.Stats
	var sendErrs, udSends, umadSends, ahs uint64
	for _, p := range ports {
		err = errors.Join(err, p.d.Do(func(e *engine.Engine, _ time.Time) error {
			conns += e.Len()
			timers += e.Timers()
			return e.CheckInvariants()
		}))
		s := p.d.Stats()
		st.Received += s.Received
		st.Dropped += s.Dropped
		st.Retransmits += s.Retransmits
		st.Malformed += s.Malformed
		sendErrs += p.d.SendErrors.Load()
		if p.ud == nil {
			err = errors.Join(err, fmt.Errorf("port %s/%d sends through umad: %w", p.dev.Name, p.port.Num, p.udErr))
			continue
		}
		udSends += p.ud.UDSends.Load()
		umadSends += p.ud.UMADSends.Load()
		ahs += p.ud.AHs.Load()
		if f := p.ud.Failed(); f != nil {
			err = errors.Join(err, fmt.Errorf("UD send path failed: %w", f))
		}
	}
	if umadSends != 0 {
		err = errors.Join(err, fmt.Errorf("%d MADs went through umad", umadSends))
	}
	held = fmt.Sprintf("backend ids=%d bound=%d mapped=%d engine ids=%d timers=%d (received %d, dropped %d, retransmits %d, malformed %d, send errors %d; sent from the UD QP %d, through umad %d, AHs %d)",
		ids, bound, mapped, conns, timers, st.Received, st.Dropped, st.Retransmits, st.Malformed, sendErrs, udSends, umadSends, ahs)
	return held, ids+bound+mapped+conns+timers == 0, true, err
}

// TestGuestEndurance runs CM_ENDURANCE_CYCLES (or -cm.endurance-cycles;
// default 1000) cycles of CreateID, ResolveAddr, ResolveRoute, CreateQP,
// Connect, a 64-byte SEND and its completion, Disconnect and Destroy from
// guest a to the helper server in guest b, on the backend BackendAuto picks: kernel where guest a
// has ib_cm, user (our engine over umad) where it has not. After one
// warm-up cycle it records the `rdma resource show` counts, the open fds
// and the goroutines; after the cycles all three must come back to that
// baseline (the kernel frees a connection's CM ID after its timewait), and
// no event may be left unacked.
func TestGuestEndurance(t *testing.T) {
	guest.Require(t)
	cycles := 1000
	if s := os.Getenv(enduranceCyclesEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive count", enduranceCyclesEnv, s)
		}
		cycles = n
	}
	if *enduranceCycles > 0 {
		cycles = *enduranceCycles
	}
	ctx := guestCtx(t, 14*time.Minute)
	hasCM, err := guest.Local().HasModule(ctx, "ib_cm")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	want := BackendKernel
	if !hasCM {
		want = BackendUser // ib_cm owns the CM class wherever it is loaded
	}
	t.Logf("backend %q (ib_cm loaded in guest a: %v)", ch.Backend(), hasCM)
	if ch.Backend() != want {
		t.Fatalf("BackendAuto chose %q, want %q (ib_cm loaded: %v)", ch.Backend(), want, hasCM)
	}
	peer, err := netip.ParseAddr(guest.Peer().Addr)
	if err != nil {
		t.Fatal(err)
	}
	dst := netip.AddrPortFrom(peer, endurancePort)
	srv := startEnduranceServer(t, ctx, dst, cycles+1)

	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	cycle := func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		id, err := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
		if err != nil {
			return err
		}
		defer id.Destroy() // on failure; the second Destroy is a no-op
		if err := id.ResolveAddr(cctx, netip.AddrPort{}, dst, 0); err != nil {
			return err
		}
		if err := id.ResolveRoute(cctx, 0); err != nil {
			return err
		}
		q, err := id.CreateQP(enduranceCaps)
		if err != nil {
			return err
		}
		_, pd, err := id.Verbs()
		if err != nil {
			return err
		}
		// A registration per cycle: its MR must be gone afterwards too.
		mr, err := pd.RegMR(buf, 0)
		if err != nil {
			return err
		}
		defer mr.Close()
		copy(buf.Bytes(), enduranceMessage(i))
		if err := id.Connect(cctx, nil); err != nil {
			return err
		}
		if err := q.Verbs.PostSend([]uverbs.SendWR{{ID: uint64(i), Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled,
			SGEs: []uverbs.SGE{mr.SGE(0, enduranceMsgLen)}}}); err != nil {
			return err
		}
		wc, err := waitCompletion(cctx, q.SendCQ, q.SendChannel)
		if err != nil {
			return err
		}
		if wc.Status != rdma.WCSuccess || wc.Opcode != rdma.WCSend || wc.ID != uint64(i) {
			return fmt.Errorf("send completion %+v (%v), want success, SEND, ID %d", wc, wc.Status, i)
		}
		if err := id.Disconnect(cctx); err != nil {
			return err
		}
		if err := id.Destroy(); err != nil {
			return err
		}
		return mr.Close()
	}
	if err := cycle(0); err != nil {
		t.Fatalf("warm-up cycle: %v", err)
	}
	baseRes, baseFDs, baseG := rdmaResources(t), openFDs(t), runtime.NumGoroutine()
	start := time.Now()
	for i := 1; i <= cycles; i++ {
		if err := cycle(i); err != nil {
			t.Fatalf("cycle %d of %d (after %v): %v", i, cycles, time.Since(start), err)
		}
	}
	took := time.Since(start)
	t.Logf("%d cycles in %v (%v per cycle)", cycles, took.Round(time.Millisecond), (took / time.Duration(cycles)).Round(10*time.Microsecond))

	r, err := srv.Wait(ctx)
	if err != nil {
		t.Fatalf("server in guest b: %v", err)
	}
	if !strings.Contains(r.Stdout, fmt.Sprintf("%s served=%d", enduranceDone, cycles+1)) {
		t.Fatalf("server in guest b did not report %d connections:\n%s", cycles+1, tailOf(r.Stdout))
	}
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(l, enduranceDone) {
			t.Logf("server in guest b: %s", l)
		}
	}

	// The kernel releases a CM ID after its timewait, the engine its IDs
	// after theirs; goroutines may take a moment to end.
	// The user backend's engine holds each connection through its
	// TimeWait too; once that is over it must hold nothing.
	var res map[string]int
	var fds, g int
	var held string
	var heldEmpty, isUser bool
	var heldErr error
	settle := time.Now()
	for deadline := settle.Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		res, fds, g = rdmaResources(t), openFDs(t), runtime.NumGoroutine()
		held, heldEmpty, isUser, heldErr = userHeld(ch)
		if fmt.Sprint(res) == fmt.Sprint(baseRes) && fds == baseFDs && g <= baseG && (heldEmpty || !isUser) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("ENDURANCE backend=%s cycles=%d duration=%v settled=%v resources=%v (baseline %v) fds=%d (baseline %d) goroutines=%d (baseline %d)",
		ch.Backend(), cycles, took.Round(time.Millisecond), time.Since(settle).Round(time.Millisecond), res, baseRes, fds, baseFDs, g, baseG)
	if isUser {
		t.Logf("ENDURANCE user backend: %s", held)
		if !heldEmpty {
			t.Errorf("the user backend still holds state after %d cycles: %s", cycles, held)
		}
		if heldErr != nil {
			t.Errorf("engine invariants or send path: %v", heldErr)
		}
	}
	if fmt.Sprint(res) != fmt.Sprint(baseRes) {
		t.Errorf("rdma resources after %d cycles %v, baseline %v", cycles, res, baseRes)
	}
	if fds != baseFDs {
		t.Errorf("open fds after %d cycles %d, baseline %d", cycles, fds, baseFDs)
	}
	if g > baseG {
		stacks := make([]byte, 1<<20)
		t.Errorf("goroutines after %d cycles %d, baseline %d:\n%s", cycles, g, baseG, stacks[:runtime.Stack(stacks, true)])
	}
	if n := ch.Unacked(); n != 0 {
		t.Errorf("%d events unacked", n)
	}
}

// evRecord is an event as the killed-peer tests record it.
type evRecord struct {
	typ     EventType
	status  int32
	passive bool // on the passive ID (else on the listener)
}

func (r evRecord) String() string {
	who := "listener"
	if r.passive {
		who = "passive"
	}
	return fmt.Sprintf("%s %v status %d", who, r.typ, r.status)
}

// drainEvents records and acks every event that arrives within d, or
// until stop returns true for one.
func drainEvents(s *server, d time.Duration, stop func(*Event) bool) []evRecord {
	var got []evRecord
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return got
			}
			got = append(got, evRecord{ev.Type, ev.Status, ev.ID != s.listener})
			done := stop != nil && stop(ev)
			ev.Ack()
			if done {
				return got
			}
		case <-timer.C:
			return got
		}
	}
}

// awaitRequest waits for rping's CONNECT_REQUEST (nothing else may come
// first) and returns the passive ID.
func awaitRequest(t *testing.T, s *server, c *cmCapture) *ID {
	t.Helper()
	var pid *ID
	evs := drainEvents(s, time.Minute, func(ev *Event) bool {
		if ev.Type == EventConnectRequest {
			pid = ev.ID
		}
		return true
	})
	if pid == nil {
		t.Fatalf("no CONNECT_REQUEST from rping; events %v; wire %s", evs, wireString(c.packets()))
	}
	return pid
}

// startKillableRping starts rping -c in guest b against guest a's port and
// records its PID, so that killRping SIGKILLs exactly that process.
func startKillableRping(t *testing.T, ctx context.Context, port uint16) {
	t.Helper()
	p, err := guest.Peer().Start(ctx, fmt.Sprintf("rping -c -v -a %s -p %d -C 1 & echo $! > /tmp/cm-rping-%d.pid; wait",
		guest.Local().Addr, port, port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })
}

func killRping(t *testing.T, ctx context.Context, port uint16) {
	t.Helper()
	res, err := guest.Peer().Run(ctx, fmt.Sprintf("kill -KILL $(cat /tmp/cm-rping-%d.pid)", port))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("kill rping in guest b: %v %+v", err, res)
	}
}

// cmCapture is tcpdump of the CM MADs on guest a's eth0.
type cmCapture struct {
	path string
	p    *guest.Process
}

func startCMCapture(t *testing.T, ctx context.Context, name string) *cmCapture {
	t.Helper()
	p, err := guest.Local().StartCapture(ctx, name, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })
	return &cmCapture{path: filepath.Join(guest.OutDir(), name), p: p}
}

// packets reads the capture so far (tcpdump -U writes whole packets; a
// torn last record is read again on the next call).
func (c *cmCapture) packets() []vmtest.CMPacket {
	pkts, err := vmtest.ReadCMCapture(c.path)
	if err != nil {
		return nil
	}
	return pkts
}

// waitFor waits until a captured packet satisfies match.
func (c *cmCapture) waitFor(t *testing.T, d time.Duration, what string, match func(*vmtest.CMPacket) bool) vmtest.CMPacket {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		pkts := c.packets()
		for i := range pkts {
			if match(&pkts[i]) {
				return pkts[i]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s on the wire within %v; captured %s", what, d, wireString(pkts))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wireString lists captured MADs as "b>a REQ, a>b MRA, ...".
func wireString(pkts []vmtest.CMPacket) string {
	a, _ := netip.ParseAddr(guest.Local().Addr)
	var parts []string
	for _, p := range pkts {
		dir := "b>a"
		if netip.AddrFrom4(p.SrcIP) == a {
			dir = "a>b"
		}
		s := dir + " " + p.AttrName
		if p.AttrName == "REJ" {
			s += fmt.Sprintf("(%d)", p.RejectReason())
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func countMADs(pkts []vmtest.CMPacket, fromA bool, attr string) int {
	a, _ := netip.ParseAddr(guest.Local().Addr)
	n := 0
	for _, p := range pkts {
		if p.AttrName == attr && (netip.AddrFrom4(p.SrcIP) == a) == fromA {
			n++
		}
	}
	return n
}

// waitResources waits up to d until the rdma resource counts named in
// keys (all when keys is empty) equal base's.
func waitResources(t *testing.T, base map[string]int, d time.Duration, keys ...string) {
	t.Helper()
	pick := func(m map[string]int) string {
		if len(keys) == 0 {
			return fmt.Sprint(m)
		}
		var s []string
		for _, k := range keys {
			s = append(s, fmt.Sprintf("%s %d", k, m[k]))
		}
		return strings.Join(s, " ")
	}
	var got map[string]int
	for deadline := time.Now().Add(d); ; time.Sleep(200 * time.Millisecond) {
		got = rdmaResources(t)
		if pick(got) == pick(base) {
			t.Logf("rdma resources back at baseline: %v", got)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rdma resources %v, baseline %v (compared: %s vs %s)", got, base, pick(got), pick(base))
		}
	}
}

// TestGuestKernelBackendPeerKilled: rping -c in guest b is SIGKILLed while
// it connects to a kernel-backend listener in guest a, once before we
// answer its REQ and once after ESTABLISHED. The engine's counterparts are
// internal/umad's TestGuestPeerKilled*; in a -nocm-a run guest a has no kernel
// CM and this test skips.
func TestGuestKernelBackendPeerKilled(t *testing.T) {
	guest.Require(t)
	ctx := guestCtx(t, 5*time.Minute)
	has, err := guest.Local().HasModule(ctx, "ib_cm")
	if err != nil {
		t.Fatal(err)
	}
	if !has {
		t.Skip("guest a has no ib_cm (vmexec -nocm-a): no kernel backend here; internal/umad's TestGuestPeerKilled* cover the engine")
	}
	peer, err := netip.ParseAddr(guest.Peer().Addr)
	if err != nil {
		t.Fatal(err)
	}
	fromB := func(p *vmtest.CMPacket) bool { return netip.AddrFrom4(p.SrcIP) == peer }

	t.Run("MidHandshake", func(t *testing.T) {
		const port = 7412
		base := rdmaResources(t)
		ch := kernelChannel(t)
		capt := startCMCapture(t, ctx, "kernel-peer-killed-handshake.pcap")
		srv := startServer(t, ch, netip.AddrPortFrom(localAddr(t), port))
		startKillableRping(t, ctx, port)
		pid := awaitRequest(t, srv, capt)
		evs := []evRecord{{EventConnectRequest, 0, true}}
		killRping(t, ctx, port)
		// b's kernel destroys rping's ID in REQ_SENT or MRA_REQ_RCVD and
		// sends REJ reason 4, timeout (cm_destroy_id).
		rej := capt.waitFor(t, 30*time.Second, "REJ from guest b", func(p *vmtest.CMPacket) bool { return fromB(p) && p.AttrName == "REJ" })
		t.Logf("REJ from guest b: reason %d", rej.RejectReason())
		// Whatever the REJ causes on the passive ID has had time to arrive.
		evs = append(evs, drainEvents(srv, 3*time.Second, nil)...)
		errAccept := pid.Accept(kctx(t, 10*time.Second), &ConnParam{QPNum: nextQPN(), ResponderResources: 1, InitiatorDepth: 1})
		t.Logf("Accept after the REJ: %v (state %v)", errAccept, pid.State())
		evs = append(evs, drainEvents(srv, 2*time.Second, nil)...)
		if err := pid.Destroy(); err != nil {
			t.Errorf("destroy the passive ID: %v", err)
		}
		if err := srv.listener.Destroy(); err != nil {
			t.Errorf("destroy the listener: %v", err)
		}
		waitResources(t, base, 30*time.Second)
		time.Sleep(time.Second) // the last packets reach the capture
		pkts := capt.packets()
		t.Logf("KILLED-MID-HANDSHAKE events %v; wire %s; Accept: %v", evs, wireString(pkts), errAccept)

		if rej.RejectReason() != 4 {
			t.Errorf("REJ reason %d, want 4 (timeout)", rej.RejectReason())
		}
		if n := countMADs(pkts, false, "REJ"); n != 1 {
			t.Errorf("%d REJs from guest b, want 1", n)
		}
		if n := countMADs(pkts, true, "REP") + countMADs(pkts, true, "REJ"); n != 0 {
			t.Errorf("guest a sent %d REPs or REJs, want none (the REJ reset its CM ID to idle)", n)
		}
		// ucma reports no event of a passive ID before its accept
		// succeeded (ucma_event_handler: ctx->uid is 0 until then), so
		// the REJECTED that ib_cm raised never reaches user space ...
		if len(evs) != 1 || evs[0].typ != EventConnectRequest {
			t.Errorf("events %v, want the CONNECT_REQUEST only", evs)
		}
		// ... and the accept fails instead: ib_send_cm_rep on a CM ID that
		// the REJ moved to IDLE answers EINVAL.
		var se *StateError
		if !errors.Is(errAccept, unix.EINVAL) || errors.As(errAccept, &se) {
			t.Errorf("Accept after the peer's REJ: %v, want the kernel's EINVAL", errAccept)
		}
	})

	t.Run("AfterEstablished", func(t *testing.T) {
		const port = 7413
		base := rdmaResources(t)
		ch := kernelChannel(t)
		capt := startCMCapture(t, ctx, "kernel-peer-killed-established.pcap")
		srv := startServer(t, ch, netip.AddrPortFrom(localAddr(t), port))
		startKillableRping(t, ctx, port)
		pid := awaitRequest(t, srv, capt)
		evs := []evRecord{{EventConnectRequest, 0, true}}
		// A library QP with receives posted, so that rping's first SEND
		// (its buffer advertisement) completes and rping then waits for
		// us until it is killed.
		q, err := pid.CreateQP(QPInit{Cap: qp.Cap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		_, pd, err := pid.Verbs()
		if err != nil {
			t.Fatal(err)
		}
		buf, err := uverbs.AllocBuffer(4096)
		if err != nil {
			t.Fatal(err)
		}
		defer buf.Close()
		mr, err := pd.RegMR(buf, qp.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer mr.Close()
		if err := q.Verbs.PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{mr.SGE(0, 256)}}, {ID: 2, SGEs: []uverbs.SGE{mr.SGE(256, 256)}}}); err != nil {
			t.Fatal(err)
		}
		if err := pid.Accept(kctx(t, 10*time.Second), nil); err != nil {
			t.Fatal(err)
		}
		established := false
		evs = append(evs, drainEvents(srv, 30*time.Second, func(ev *Event) bool {
			established = ev.ID == pid && ev.Type == EventEstablished
			return established
		})...)
		if !established {
			t.Fatalf("no ESTABLISHED; events %v; wire %s", evs, wireString(capt.packets()))
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		wc, err := waitCompletion(wctx, q.RecvCQ, q.RecvChannel)
		cancel()
		if err != nil || wc.Status != rdma.WCSuccess {
			t.Fatalf("rping's first SEND: %+v %v", wc, err)
		}
		t.Logf("rping's first SEND: %d bytes", wc.ByteLen)
		killed := time.Now()
		killRping(t, ctx, port)
		// b's kernel destroys rping's ID in ESTABLISHED: it sends a DREQ
		// (cm_destroy_id) and our ID reports DISCONNECTED.
		disconnected := false
		evs = append(evs, drainEvents(srv, 30*time.Second, func(ev *Event) bool {
			disconnected = ev.ID == pid && ev.Type == EventDisconnected
			return disconnected
		})...)
		if !disconnected {
			t.Fatalf("no DISCONNECTED within 30 s of the kill; events %v; wire %s", evs, wireString(capt.packets()))
		}
		t.Logf("DISCONNECTED %v after the kill command was sent (state %v)", time.Since(killed).Round(time.Millisecond), pid.State())
		if err := pid.Disconnect(kctx(t, 10*time.Second)); err != nil {
			t.Errorf("Disconnect after DISCONNECTED: %v", err)
		}
		// Our DREP puts the kernel's CM ID in timewait; its end is
		// reported (cma_ib_handler, IB_CM_TIMEWAIT_EXIT in DISCONNECT).
		evs = append(evs, drainEvents(srv, 20*time.Second, func(ev *Event) bool { return ev.Type == EventTimewaitExit })...)
		if err := pid.Destroy(); err != nil {
			t.Errorf("destroy the passive ID: %v", err)
		}
		if err := mr.Close(); err != nil {
			t.Errorf("deregister the MR: %v", err)
		}
		if err := srv.listener.Destroy(); err != nil {
			t.Errorf("destroy the listener: %v", err)
		}
		// The channel keeps its device context and PD until it closes.
		waitResources(t, base, 30*time.Second, "cm_id", "qp", "cq", "mr")
		ch.Close()
		waitResources(t, base, 30*time.Second)
		time.Sleep(time.Second)
		pkts := capt.packets()
		t.Logf("KILLED-AFTER-ESTABLISHED events %v; wire %s", evs, wireString(pkts))

		want := []evRecord{{EventConnectRequest, 0, true}, {EventEstablished, 0, true}, {EventDisconnected, 0, true}, {EventTimewaitExit, 0, true}}
		if fmt.Sprint(evs) != fmt.Sprint(want) {
			t.Errorf("events %v, want %v", evs, want)
		}
		if n := countMADs(pkts, false, "DREQ"); n != 1 {
			t.Errorf("%d DREQs from guest b, want 1", n)
		}
		if n := countMADs(pkts, true, "DREP"); n != 1 {
			t.Errorf("%d DREPs from guest a, want 1", n)
		}
	})
}
