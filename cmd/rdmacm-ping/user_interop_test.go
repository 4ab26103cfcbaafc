package main

// Interop of the user-space CM (-backend user: cm/engine over umad) with
// the Linux kernel CM. These tests boot their own pair: guest a without
// ib_cm, iw_cm, rdma_cm and rdma_ucm (only ib_core, ib_uverbs, ib_umad and
// rdma_rxe), guest b stock. rdmacm-ping always runs in a, the C peers
// (rping, the librdmacm ECE fixture, cmtime) in b on the kernel CM.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/mad"
)

var (
	userPairOnce  sync.Once
	theUserPair   *vmtest.Pair
	userPairErr   error
	userToolsErr  error
	userPairClose = func() {}
)

// userPair boots the pair whose guest a has no kernel CM. The stock pair,
// if booted, is shut down first: four TCG guests do not fit two cores.
func userPair(tb testing.TB) *vmtest.Pair {
	tb.Helper()
	requireVMTest(tb)
	userPairOnce.Do(func() {
		if thePair != nil {
			thePair.Close()
			thePair, pairErr = nil, fmt.Errorf("the stock pair was shut down for the no-CM pair")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		theUserPair, userPairErr = vmtest.BootPair(ctx, vmtest.PairOptions{Log: os.Stderr, SkipModulesA: vmtest.CMModules()})
		if userPairErr == nil {
			userToolsErr = buildTools(theUserPair.Share)
			userPairClose = func() { theUserPair.Close() }
		}
	})
	if userPairErr != nil {
		tb.Fatalf("guests did not boot: %v", userPairErr)
	}
	if userToolsErr != nil {
		tb.Fatal(userToolsErr)
	}
	return theUserPair
}

const userPing = ping + " -backend user"

var serverSeq int

// goServer starts rdmacm-ping (user backend, debug on) in a and waits
// until it listens: a has no kernel CM, so `rdma resource show` cannot
// witness the listener; the server's debug log does.
func goServer(t *testing.T, ctx context.Context, a *vmtest.Machine, args string) (wait func() (stdout, stderr string, code int)) {
	t.Helper()
	serverSeq++
	log := fmt.Sprintf("/tmp/go-server-%d.log", serverSeq)
	p, err := a.Start(ctx, fmt.Sprintf("%s -d %s 2>%s; rc=$?; cat %s >&2; exit $rc", userPing, args, log, log))
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := a.Run(ctx, "grep -q 'debug: listening on' "+log)
		if err == nil && r.ExitCode == 0 {
			break
		}
		select {
		case <-ctx.Done():
			p.Stop(context.Background())
			t.Fatalf("rdmacm-ping %s never listened", args)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return func() (string, string, int) {
		r, err := p.Wait(ctx)
		if r == nil {
			t.Fatalf("rdmacm-ping %s: %v", args, err)
		}
		t.Logf("server (a) rdmacm-ping %s exit %d:\n%s%s", args, r.ExitCode, r.Stdout, r.Stderr)
		return r.Stdout, r.Stderr, r.ExitCode
	}
}

// cServer starts a C server in b and waits until the kernel lists it.
func cServer(t *testing.T, ctx context.Context, b *vmtest.Machine, port int, cmd string) (wait func() (stdout string, code int)) {
	t.Helper()
	p, err := b.Start(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	listening(t, ctx, b, port)
	return func() (string, int) {
		r, err := p.Wait(ctx)
		if r == nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		t.Logf("server (b) %q exit %d:\n%s%s", cmd, r.ExitCode, r.Stdout, r.Stderr)
		return r.Stdout, exitCode(t, cmd, r)
	}
}

func runOn(t *testing.T, ctx context.Context, m *vmtest.Machine, cmd string) (stdout, stderr string, code int) {
	t.Helper()
	r, err := m.Run(ctx, cmd)
	if r == nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	t.Logf("client (%s) %q exit %d:\n%s%s", m.Name, cmd, r.ExitCode, r.Stdout, r.Stderr)
	return r.Stdout, r.Stderr, exitCode(t, cmd, r)
}

// capture records the CM MADs on a's wire during f and returns them.
func capture(t *testing.T, ctx context.Context, a *vmtest.Machine, name string, f func()) []vmtest.CMPacket {
	t.Helper()
	c, err := a.StartCapture(ctx, name, "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // tcpdump up
	f()
	path, err := c.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pkts, err := vmtest.ReadCMCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	checkTshark(t, path)
	return pkts
}

// checkTshark has tshark dissect a capture: every CM MAD decodes, with no
// malformed packet and no error-level expert info.
func checkTshark(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Fatalf("tshark: %v (make deps installs it)", err)
	}
	out, err := exec.Command("tshark", "-r", path, "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark -r %s: %v\n%s", path, err, out)
	}
	s := string(out)
	for _, bad := range []string{"Malformed", "Severity level: Error", "Bogus"} {
		if strings.Contains(s, bad) {
			t.Fatalf("tshark on %s reports %q:\n%s", path, bad, s)
		}
	}
	if !strings.Contains(s, "Communication Management") && !strings.Contains(s, "CM: ") && !strings.Contains(s, "ConnectRequest") {
		t.Fatalf("tshark decoded no CM MAD in %s:\n%.2000s", path, s)
	}
}

// cmdumpLines runs cmdump (built from this module) over a capture.
func cmdumpLines(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("go", "run", "../cmdump", path).CombinedOutput()
	if err != nil {
		t.Fatalf("cmdump %s: %v\n%s", path, err, out)
	}
	return string(out)
}

func names(pkts []vmtest.CMPacket, from [4]byte) []string {
	var n []string
	for _, p := range pkts {
		if p.SrcIP == from {
			n = append(n, p.AttrName)
		}
	}
	return n
}

func ip4(s string) [4]byte {
	var b [4]byte
	fmt.Sscanf(s, "%d.%d.%d.%d", &b[0], &b[1], &b[2], &b[3])
	return b
}

// TestUserBackendRping: rdmacm-ping on the user-space CM against rping on
// the kernel CM, 10 pings each way with data checked, library and
// external (-q) QPs, MADs sent from the backend's UD QP and (-umad-sends)
// through umad. The client disconnects in both runs, so the engine
// both sends the DREQ (go client) and answers one (rping client); the
// capture proves who sent what, and tshark and cmdump decode it.
func TestUserBackendRping(t *testing.T) {
	p := userPair(t)
	a, b := p.A, p.B
	// -umad-sends: the engine's MADs go through umad (QP 1) instead of
	// its UD QP.
	for _, m := range []struct{ name, goArgs, cArgs string }{{"", "", ""}, {" -q", " -q", " -q"}, {" -umad-sends", " -umad-sends", ""}} {
		q, gq := m.cArgs, m.goArgs
		ourQP := func(t *testing.T, pkts []vmtest.CMPacket) {
			t.Helper()
			for _, pk := range pkts {
				if pk.SrcIP == ip4(a.Addr) && (pk.SrcQP == 1) != (gq == " -umad-sends") {
					t.Errorf("engine %s left QP %d (with %q)", pk.AttrName, pk.SrcQP, gq)
				}
			}
		}
		t.Run("go-client-rping-server"+m.name, func(t *testing.T) {
			ctx := ctxFor(t, 3*time.Minute)
			var cOut string
			var cCode, sCode int
			var sOut string
			pkts := capture(t, ctx, a, "user-go-client"+strings.TrimSpace(m.name)+".pcap", func() {
				wait := cServer(t, ctx, b, 7174, "rping -s -v -a "+b.Addr+" -C 10"+q)
				cOut, _, cCode = runOn(t, ctx, a, userPing+" -c -v -V -a "+b.Addr+" -C 10"+gq)
				sOut, sCode = wait()
			})
			if cCode != 0 || sCode != 0 {
				t.Fatalf("exit codes: rdmacm-ping %d, rping %d", cCode, sCode)
			}
			wantPings(t, "rdmacm-ping", cOut, "ping data: ", 10)
			wantPings(t, "rping -s", sOut, "server ping data: ", 10)
			wantSummary(t, cOut, 10)
			want := []string{"REQ", "RTU", "DREQ"}
			if got := names(pkts, ip4(a.Addr)); !cmp.Equal(got, want) {
				t.Fatalf("engine (a) sent %v, want %v", got, want)
			}
			if got := names(pkts, ip4(b.Addr)); !cmp.Equal(got, []string{"REP", "DREP"}) {
				t.Fatalf("kernel (b) sent %v, want [REP DREP]", got)
			}
			ourQP(t, pkts)
		})
		t.Run("rping-client-go-server"+m.name, func(t *testing.T) {
			ctx := ctxFor(t, 3*time.Minute)
			var sOut, cOut string
			var sCode, cCode int
			pkts := capture(t, ctx, a, "user-go-server"+strings.TrimSpace(m.name)+".pcap", func() {
				wait := goServer(t, ctx, a, "-s -v -a "+a.Addr+gq)
				cOut, _, cCode = runOn(t, ctx, b, "rping -c -v -V -a "+a.Addr+" -C 10"+q)
				sOut, _, sCode = wait()
			})
			if cCode != 0 || sCode != 0 {
				t.Fatalf("exit codes: rping %d, rdmacm-ping %d", cCode, sCode)
			}
			wantPings(t, "rping -c", cOut, "ping data: ", 10)
			wantPings(t, "rdmacm-ping -s", sOut, "server ping data: ", 10)
			if got := names(pkts, ip4(a.Addr)); !cmp.Equal(got, []string{"REP", "DREP"}) {
				t.Fatalf("engine (a) sent %v, want [REP DREP]", got)
			}
			if got := names(pkts, ip4(b.Addr)); !cmp.Equal(got, []string{"REQ", "RTU", "DREQ"}) {
				t.Fatalf("kernel (b) sent %v, want [REQ RTU DREQ]", got)
			}
			ourQP(t, pkts)
		})
	}
}

// TestUserBackendDisconnectFromEitherSide: the engine sends the DREQ and
// the kernel answers, and the kernel sends the DREQ and the engine
// answers, each checked on the wire.
func TestUserBackendDisconnectFromEitherSide(t *testing.T) {
	p := userPair(t)
	a, b := p.A, p.B
	port := strconv.Itoa(fixturePort)
	// The fixture server waits for the peer's DISCONNECTED: the Go client
	// sends the DREQ.
	t.Run("go-sends-dreq", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		var cCode, sCode int
		pkts := capture(t, ctx, a, "user-dreq-go.pcap", func() {
			wait := cServer(t, ctx, b, fixturePort, fixture+" -s -a "+b.Addr+" -p "+port+" -t 60")
			_, _, cCode = runOn(t, ctx, a, userPing+" -c -connect-only -a "+b.Addr+" -p "+port)
			_, sCode = wait()
		})
		if cCode != 0 || sCode != 0 {
			t.Fatalf("exit codes: rdmacm-ping %d, fixture %d", cCode, sCode)
		}
		if got := names(pkts, ip4(a.Addr)); !cmp.Equal(got, []string{"REQ", "RTU", "DREQ"}) {
			t.Fatalf("engine (a) sent %v, want [REQ RTU DREQ]", got)
		}
	})
	// A Go server that disconnects first: the engine sends the DREQ to a
	// waiting librdmacm client, which answers with a DREP.
	t.Run("go-server-sends-dreq", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		var cOut string
		var cCode, sCode int
		pkts := capture(t, ctx, a, "user-dreq-go-server.pcap", func() {
			wait := goServer(t, ctx, a, "-s -connect-only -disconnect-first -a "+a.Addr+" -p "+port)
			cOut, _, cCode = runOn(t, ctx, b, fixture+" -c -w -a "+a.Addr+" -p "+port+" -t 60")
			_, _, sCode = wait()
		})
		if cCode != 0 || sCode != 0 {
			t.Fatalf("exit codes: fixture %d, rdmacm-ping %d", cCode, sCode)
		}
		mustContain(t, "fixture", cOut, "peer disconnected first", "result: connected")
		if got := names(pkts, ip4(a.Addr)); !cmp.Equal(got, []string{"REP", "DREQ"}) {
			t.Fatalf("engine (a) sent %v, want [REP DREQ]", got)
		}
		if got := names(pkts, ip4(b.Addr)); !cmp.Equal(got, []string{"REQ", "RTU", "DREP"}) {
			t.Fatalf("kernel (b) sent %v, want [REQ RTU DREP]", got)
		}
	})
	// The Go server of -connect-only waits for the peer's disconnect: the
	// fixture client (kernel CM) sends the DREQ, the engine the DREP.
	t.Run("kernel-sends-dreq", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		var cCode, sCode int
		var sOut string
		pkts := capture(t, ctx, a, "user-dreq-kernel.pcap", func() {
			wait := goServer(t, ctx, a, "-s -connect-only -a "+a.Addr+" -p "+port)
			_, _, cCode = runOn(t, ctx, b, fixture+" -c -a "+a.Addr+" -p "+port+" -t 60")
			sOut, _, sCode = wait()
		})
		if cCode != 0 || sCode != 0 {
			t.Fatalf("exit codes: fixture %d, rdmacm-ping %d", cCode, sCode)
		}
		mustContain(t, "rdmacm-ping", sOut, "disconnected")
		if got := names(pkts, ip4(a.Addr)); !cmp.Equal(got, []string{"REP", "DREP"}) {
			t.Fatalf("engine (a) sent %v, want [REP DREP]", got)
		}
		if got := names(pkts, ip4(b.Addr)); !cmp.Equal(got, []string{"REQ", "RTU", "DREQ"}) {
			t.Fatalf("kernel (b) sent %v, want [REQ RTU DREQ]", got)
		}
	})
}

// TestUserBackendECE: ECE between the engine and librdmacm in both
// directions, exact values, and REJ 35 both ways.
func TestUserBackendECE(t *testing.T) {
	p := userPair(t)
	a, b := p.A, p.B
	port := strconv.Itoa(fixturePort)
	t.Run("fixture-server-go-client", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		wait := cServer(t, ctx, b, fixturePort, fixture+" -s -a "+b.Addr+" -p "+port+" -V "+vendor+" -O 0x10000000 -t 60")
		cOut, _, cCode := runOn(t, ctx, a, userPing+" -c -connect-only -a "+b.Addr+" -p "+port+" -ece "+vendor+":0x30000001")
		sOut, sCode := wait()
		if sCode != 0 || cCode != 0 {
			t.Fatalf("exit codes: fixture %d, rdmacm-ping %d", sCode, cCode)
		}
		mustContain(t, "fixture", sOut, "remote ECE: vendor=0x15b3 options=0x30000001", "result: connected")
		mustContain(t, "rdmacm-ping", cOut, "remote ECE: vendor=0x15b3 options=0x10000000", "private data length: 196", "disconnected")
	})
	t.Run("go-server-fixture-client", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		wait := goServer(t, ctx, a, "-s -connect-only -a "+a.Addr+" -p "+port+" -ece "+vendor+":0x20000002")
		cOut, _, cCode := runOn(t, ctx, b, fixture+" -c -a "+a.Addr+" -p "+port+" -V "+vendor+" -O 0x30000001 -t 60")
		sOut, _, sCode := wait()
		if sCode != 0 || cCode != 0 {
			t.Fatalf("exit codes: rdmacm-ping %d, fixture %d", sCode, cCode)
		}
		mustContain(t, "fixture", cOut, "remote ECE: vendor=0x15b3 options=0x20000002", "result: connected")
		mustContain(t, "rdmacm-ping", sOut, "remote ECE: vendor=0x15b3 options=0x30000001", "private data length: 56", "disconnected")
	})
	t.Run("go-reject-ece-fixture-client", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		var sOut, cOut string
		var sCode, cCode int
		pkts := capture(t, ctx, a, "user-rej35-go.pcap", func() {
			wait := goServer(t, ctx, a, "-s -reject-ece -a "+a.Addr+" -p "+port)
			cOut, _, cCode = runOn(t, ctx, b, fixture+" -c -a "+a.Addr+" -p "+port+" -V "+vendor+" -O 0x30000001 -t 60")
			sOut, _, sCode = wait()
		})
		if sCode != 0 || cCode != 3 {
			t.Fatalf("exit codes: rdmacm-ping %d (want 0), fixture %d (want 3, rejected)", sCode, cCode)
		}
		mustContain(t, "fixture", cOut, "event: RDMA_CM_EVENT_REJECTED status=35", "result: rejected status=35")
		mustContain(t, "rdmacm-ping", sOut, "remote ECE: vendor=0x15b3 options=0x30000001", "rejected with reason 35")
		var rej *vmtest.CMPacket
		for i := range pkts {
			if pkts[i].AttrName == "REJ" && pkts[i].SrcIP == ip4(a.Addr) {
				rej = &pkts[i]
			}
		}
		if rej == nil || rej.RejectReason() != 35 {
			t.Fatalf("no REJ reason 35 from the engine on the wire: %+v", pkts)
		}
	})
	t.Run("fixture-reject-ece-go-client", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		wait := cServer(t, ctx, b, fixturePort, fixture+" -s -r -a "+b.Addr+" -p "+port+" -t 60")
		_, cErr, cCode := runOn(t, ctx, a, userPing+" -c -connect-only -a "+b.Addr+" -p "+port+" -ece "+vendor+":0x30000001")
		sOut, sCode := wait()
		if sCode != 0 || cCode != 1 {
			t.Fatalf("exit codes: fixture %d (want 0), rdmacm-ping %d (want 1)", sCode, cCode)
		}
		mustContain(t, "fixture", sOut, "rejected with rdma_reject_ece")
		mustContain(t, "rdmacm-ping", cErr, "connection rejected: reason 35 (vendor option is not supported)")
		if n := strings.Count(strings.TrimSpace(cErr), "\n"); n != 0 {
			t.Fatalf("the error is not one line:\n%s", cErr)
		}
	})
}

// perConnection zeroes what differs between any two connections: IDs,
// transaction IDs, QPNs, PSNs, and the active side's ephemeral source
// port (in the IP header) with the RoCEv2 flow label derived from it.
func perConnectionREQ(m *mad.REQ) {
	m.TransactionID, m.LocalCommID, m.LocalQPN, m.StartingPSN = 0, 0, 0, 0
	m.Primary.FlowLabel = 0
	m.PrivateData[2], m.PrivateData[3] = 0, 0 // cma_hdr.port
}

func perConnectionREP(m *mad.REP) {
	m.TransactionID, m.LocalCommID, m.RemoteCommID, m.LocalQPN, m.StartingPSN = 0, 0, 0, 0, 0
	m.LocalCAGUID = 0 // the sending node's GUID: a and b differ
}

// kernelMADs reads the kernel's REQ (from a, rping -c) and REP (from b,
// rping -s) from the golden capture of rping on the stock guests.
func kernelMADs(t *testing.T) (req mad.REQ, rep mad.REP) {
	t.Helper()
	pkts, err := vmtest.ReadCMCapture(filepath.Join("..", "..", "mad", "testdata", "captures", "rping-cm.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	var haveREQ, haveREP bool
	for _, p := range pkts {
		if v, err := mad.ParseREQ(p.MAD); err == nil && !haveREQ {
			v.Decode(&req)
			haveREQ = true
		}
		if v, err := mad.ParseREP(p.MAD); err == nil && !haveREP {
			v.Decode(&rep)
			haveREP = true
		}
	}
	if !haveREQ || !haveREP {
		t.Fatal("rping-cm.pcap lacks the kernel's REQ or REP")
	}
	return req, rep
}

// TestUserBackendMADsMatchKernel: the engine's REQ (rdmacm-ping -c against
// rping -s) and REP (rping -c against rdmacm-ping -s) equal the kernel's
// REQ and REP from the same guests, same addresses and port, field by
// field, except the per-connection fields. The engine's trace
// (rdmacm-ping -pcap) is checked too: cmdump and tshark read it, and its
// MADs are the ones on the wire.
func TestUserBackendMADsMatchKernel(t *testing.T) {
	p := userPair(t)
	a, b := p.A, p.B
	kreq, krep := kernelMADs(t)
	ctx := ctxFor(t, 4*time.Minute)
	trace := "/host/user-trace.pcap"
	var ours []vmtest.CMPacket
	ours = append(ours, capture(t, ctx, a, "user-req.pcap", func() {
		wait := cServer(t, ctx, b, 7174, "rping -s -a "+b.Addr+" -C 1")
		if _, _, code := runOn(t, ctx, a, userPing+" -c -a "+b.Addr+" -C 1 -pcap "+trace); code != 0 {
			t.Fatalf("rdmacm-ping -c exit %d", code)
		}
		wait()
	})...)
	ours = append(ours, capture(t, ctx, a, "user-rep.pcap", func() {
		wait := goServer(t, ctx, a, "-s -a "+a.Addr)
		if _, _, code := runOn(t, ctx, b, "rping -c -a "+a.Addr+" -C 1"); code != 0 {
			t.Fatalf("rping -c exit %d", code)
		}
		wait()
	})...)
	var req mad.REQ
	var rep mad.REP
	var haveREQ, haveREP bool
	for _, pk := range ours {
		if pk.SrcIP != ip4(a.Addr) {
			continue
		}
		if v, err := mad.ParseREQ(pk.MAD); err == nil {
			v.Decode(&req)
			haveREQ = true
		}
		if v, err := mad.ParseREP(pk.MAD); err == nil {
			v.Decode(&rep)
			haveREP = true
		}
	}
	if !haveREQ || !haveREP {
		t.Fatalf("the engine's REQ or REP is missing from the captures: %v", names(ours, ip4(a.Addr)))
	}
	t.Logf("engine REQ ECE %v, kernel REQ ECE %v", req.ECE(), kreq.ECE())
	perConnectionREQ(&req)
	perConnectionREQ(&kreq)
	if d := cmp.Diff(kreq, req); d != "" {
		t.Errorf("engine REQ differs from the kernel's (-kernel +engine):\n%s", d)
	}
	perConnectionREP(&rep)
	perConnectionREP(&krep)
	if d := cmp.Diff(krep, rep); d != "" {
		t.Errorf("engine REP differs from the kernel's (-kernel +engine):\n%s", d)
	}
	// Our MADs leave from the backend's UD QP (umad.UDSend), not QP 1,
	// for the peer's QP 1 with the GSI Q_Key; b's kernel CM answered them.
	wireQPs := map[uint32]bool{}
	for _, pk := range ours {
		if pk.SrcIP != ip4(a.Addr) {
			continue
		}
		if pk.SrcQP <= 1 || pk.DestQP != 1 || pk.QKey != 0x80010000 {
			t.Errorf("engine %s on the wire: QP %d → %d, Q_Key %#x; want our UD QP → 1, 0x80010000", pk.AttrName, pk.SrcQP, pk.DestQP, pk.QKey)
		}
		wireQPs[pk.SrcQP] = true
	}
	// The engine's own trace of the first session.
	host := a.HostPath(trace)
	traced, err := vmtest.ReadCMCapture(host)
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range traced {
		if pk.SrcIP == ip4(a.Addr) && !wireQPs[pk.SrcQP] {
			t.Errorf("-pcap trace: %s from QP %d, which sent nothing on the wire (%v)", pk.AttrName, pk.SrcQP, wireQPs)
		}
	}
	out := cmdumpLines(t, host)
	for _, w := range []string{" REQ ", " REP ", " RTU ", " DREQ ", " DREP ", "5 CM MADs, 0 skipped (not CM), 0 malformed"} {
		if !strings.Contains(out, w) {
			t.Fatalf("cmdump of the -pcap trace lacks %q:\n%s", w, out)
		}
	}
	checkTshark(t, host)
	t.Logf("cmdump %s:\n%s", trace, out)
}

// TestUserBackendAuto: with no kernel CM, -backend auto picks the engine.
func TestUserBackendAuto(t *testing.T) {
	p := userPair(t)
	a, b := p.A, p.B
	ctx := ctxFor(t, 3*time.Minute)
	wait := cServer(t, ctx, b, 7174, "rping -s -a "+b.Addr+" -C 2")
	_, cErr, code := runOn(t, ctx, a, ping+" -d -c -V -a "+b.Addr+" -C 2")
	wait()
	if code != 0 || !strings.Contains(cErr, "debug: backend user") {
		t.Fatalf("-backend auto without ib_cm: exit %d, want the user backend:\n%s", code, cErr)
	}
}
