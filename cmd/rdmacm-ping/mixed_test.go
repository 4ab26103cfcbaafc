package main

// Interop across architectures: an x86-64 guest a (192.0.2.1) and an
// arm64 guest b (192.0.2.2, Debian's arm64 kernel under qemu-system-aarch64)
// on one soft-RoCE wire. Every Go program is built for both (static,
// GOARCH=arm64 for b) and every C peer is the guest's own: rdma-core's
// tools from each architecture's packages, and the librdmacm fixtures
// compiled with gcc for a and cross-compiled for b. /host/bin/NAME runs
// the build for the guest it is called in.
//
// Each case runs our program on one guest and the C peer on the other,
// with our program on arm64 and on x86-64, as server and as client.
// TestMixedKernel does so on the kernel CM in both guests; in TestMixedEngine
// guest b has no kernel CM and our programs there run on our CM engine
// (-backend user). TestMixedSmoke is the short check of make vmtest:
// rping both ways on the kernel CM, then one case on the engine.
//
//	make vmtest-arm64                                   # all of them
//	VMTEST=1 VMTEST_ARM64=1 go test -run TestMixed -v ./cmd/rdmacm-ping/

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cmd/internal/twintest"
	"github.com/go-rdma/rdmacm/internal/vmtest"
)

// requireMixed skips unless VMTEST=1 and VMTEST_ARM64 asks for this level:
// "smoke" (make vmtest) runs TestMixedSmoke only, "1" (make vmtest-arm64)
// runs them all. The long cases stay out of make test's budget.
func requireMixed(t *testing.T, smoke bool) {
	t.Helper()
	requireVMTest(t)
	switch v := os.Getenv("VMTEST_ARM64"); {
	case v == "1":
	case v == "smoke" && smoke:
	default:
		t.Skip("x86-64/arm64 pair: run with VMTEST_ARM64=1 (make vmtest-arm64), or VMTEST_ARM64=smoke for TestMixedSmoke (make vmtest)")
	}
}

// mixedTools are what a mixed pair installs in /host/bin: Go main
// packages, and C programs with their sources.
type mixedTools struct {
	goPkgs map[string]string
	cSrcs  map[string][]string
}

const mod = "github.com/go-rdma/rdmacm"

var (
	smokeTools = mixedTools{goPkgs: map[string]string{"rdmacm-ping": mod + "/cmd/rdmacm-ping"}}
	allTools   = mixedTools{
		goPkgs: map[string]string{
			"rdmacm-ping":    ".",
			"rsocket-stream": mod + "/cmd/rsocket-stream",
			"rsocket-copy":   mod + "/cmd/rsocket-copy",
			"verbs-pingpong": mod + "/cmd/verbs-pingpong",
			"echo":           mod + "/examples/echo",
			"write":          mod + "/examples/write",
		},
		cSrcs: map[string][]string{
			"ece_fixture": {"../../internal/vmtest/fixtures/ece_fixture.c"},
			"echo-c":      {"../../examples/c/echo.c"},
			"write-c":     {"../../examples/c/write.c"},
		},
	}
)

// bootMixed boots x86-64 guest a and arm64 guest b (without the kernel
// CM if engineB) for one test, installs tools, and shuts them down at its
// end. The stock pair of this binary, if up, goes first: four TCG guests
// do not fit two cores.
func bootMixed(t *testing.T, engineB bool, tools mixedTools) *vmtest.Pair {
	t.Helper()
	if thePair != nil {
		thePair.Close()
		thePair, pairErr = nil, fmt.Errorf("the stock pair was shut down for a mixed pair")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	imgA, err := vmtest.Prepare(ctx, vmtest.PrepareOptions{Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	imgB, err := vmtest.Prepare(ctx, vmtest.PrepareOptions{Log: os.Stderr, Arch: vmtest.ArchARM64})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("images ready in %v", time.Since(start).Round(time.Millisecond))
	opts := vmtest.PairOptions{Log: os.Stderr, Image: imgA, Arm64Image: imgB, ArchB: vmtest.ArchARM64, Share: t.TempDir(),
		Lifetime: 40 * time.Minute}
	if engineB {
		opts.SkipModulesB = vmtest.CMModules()
	}
	// The tools build while the guests boot.
	built := make(chan error, 1)
	go func() {
		start := time.Now()
		imgs := []*vmtest.Image{imgA, imgB}
		for name, pkg := range tools.goPkgs {
			if err := vmtest.InstallGo(ctx, opts.Share, imgs, name, pkg); err != nil {
				built <- err
				return
			}
		}
		for name, srcs := range tools.cSrcs {
			if err := vmtest.InstallC(ctx, opts.Share, imgs, name, srcs...); err != nil {
				built <- err
				return
			}
		}
		t.Logf("tools built for both guests in %v", time.Since(start).Round(time.Millisecond))
		built <- nil
	}()
	start = time.Now()
	p, err := vmtest.BootPair(ctx, opts)
	if err != nil {
		<-built
		t.Fatalf("mixed pair did not boot: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	t.Logf("mixed pair up in %v: a %s, b %s (kernel CM in b: %v)", time.Since(start).Round(time.Millisecond), p.A.Arch, p.B.Arch, !engineB)
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	if p.A.Arch != vmtest.ArchAMD64 || p.B.Arch != vmtest.ArchARM64 {
		t.Fatalf("guests a %s, b %s; want amd64 and arm64", p.A.Arch, p.B.Arch)
	}
	// Each guest must run its own build.
	for _, m := range []*vmtest.Machine{p.A, p.B} {
		r, err := m.Run(ctx, "uname -m; "+ping+" -h 2>&1 | head -1")
		if err != nil || !strings.Contains(r.Stdout, "rdmacm-ping: unknown option -h") {
			t.Fatalf("guest %s (%s): rdmacm-ping does not run: %v %+v", m.Name, m.Arch, err, r)
		}
		t.Logf("guest %s: %s", m.Name, strings.Fields(r.Stdout)[0])
	}
	return p
}

// placements are the two arrangements of a case: our program in the arm64
// guest with the C peer in the x86-64 one, and the other way round.
func placements(p *vmtest.Pair) []struct {
	name     string
	ours, cp *vmtest.Machine
} {
	return []struct {
		name     string
		ours, cp *vmtest.Machine
	}{{"go-on-arm64", p.B, p.A}, {"go-on-x86", p.A, p.B}}
}

// engineServer starts rdmacm-ping on our CM engine in m and returns once
// it listens (its debug log says so: the kernel lists no cm_id for it).
func engineServer(t *testing.T, ctx context.Context, m *vmtest.Machine, args string) (wait func() (stdout, stderr string, code int)) {
	t.Helper()
	cmd := userPing + " -d " + args
	p, err := m.Start(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	// "listening on": the debug log's line, or -cmtime's on stdout.
	if err := p.WaitOutput(ctx, "listening on"); err != nil {
		p.Stop(context.Background())
		t.Fatalf("%s on %s never listened: %v", cmd, m.Name, err)
	}
	return func() (string, string, int) {
		r, err := p.Wait(ctx)
		if r == nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		t.Logf("server (%s) %q exit %d:\n%s%s", m.Name, cmd, r.ExitCode, r.Stdout, r.Stderr)
		return r.Stdout, r.Stderr, r.ExitCode
	}
}

// rpingKernel: rdmacm-ping in ours against rping in cp, both roles, 10
// pings with the data checked on both ends.
func rpingKernel(t *testing.T, ours, cp *vmtest.Machine) {
	t.Run("go-client", func(t *testing.T) {
		sOut, _, sCode, cOut, _, cCode := session(t, cp, ours, 7174,
			"rping -s -v -a "+cp.Addr+" -C 10", ping+" -c -v -V -a "+cp.Addr+" -C 10")
		if cCode != 0 || sCode != 0 {
			t.Fatalf("exit codes: rdmacm-ping %d, rping %d", cCode, sCode)
		}
		wantPings(t, "rdmacm-ping", cOut, "ping data: ", 10)
		wantPings(t, "rping -s", sOut, "server ping data: ", 10)
		wantSummary(t, cOut, 10)
	})
	t.Run("go-server", func(t *testing.T) {
		sOut, _, sCode, cOut, _, cCode := session(t, ours, cp, 7174,
			ping+" -s -v -a "+ours.Addr, "rping -c -v -V -a "+ours.Addr+" -C 10")
		if cCode != 0 || sCode != 0 {
			t.Fatalf("exit codes: rping %d, rdmacm-ping %d", cCode, sCode)
		}
		wantPings(t, "rping -c", cOut, "ping data: ", 10)
		wantPings(t, "rdmacm-ping -s", sOut, "server ping data: ", 10)
	})
}

// rpingEngine: rdmacm-ping on our engine in ours (no kernel CM there)
// against rping on the kernel CM in cp, both roles.
func rpingEngine(t *testing.T, ours, cp *vmtest.Machine, roles ...string) {
	if len(roles) == 0 {
		roles = []string{"go-client", "go-server"}
	}
	for _, role := range roles {
		t.Run(role, func(t *testing.T) {
			ctx := ctxFor(t, 3*time.Minute)
			if role == "go-client" {
				wait := cServer(t, ctx, cp, 7174, "rping -s -v -a "+cp.Addr+" -C 10")
				cOut, _, cCode := runOn(t, ctx, ours, userPing+" -c -v -V -a "+cp.Addr+" -C 10")
				sOut, sCode := wait()
				if cCode != 0 || sCode != 0 {
					t.Fatalf("exit codes: rdmacm-ping %d, rping %d", cCode, sCode)
				}
				wantPings(t, "rdmacm-ping", cOut, "ping data: ", 10)
				wantPings(t, "rping -s", sOut, "server ping data: ", 10)
				wantSummary(t, cOut, 10)
				return
			}
			wait := engineServer(t, ctx, ours, "-s -v -a "+ours.Addr)
			cOut, _, cCode := runOn(t, ctx, cp, "rping -c -v -V -a "+ours.Addr+" -C 10")
			sOut, _, sCode := wait()
			if cCode != 0 || sCode != 0 {
				t.Fatalf("exit codes: rping %d, rdmacm-ping %d", cCode, sCode)
			}
			wantPings(t, "rping -c", cOut, "ping data: ", 10)
			wantPings(t, "rdmacm-ping -s", sOut, "server ping data: ", 10)
		})
	}
}

// TestMixedSmoke (make vmtest): rdmacm-ping in the arm64 guest against
// rping in the x86-64 one on the kernel CM, as client and as server; then
// the kernel CM modules are removed from the arm64 guest and rdmacm-ping
// there, now on our engine, pings rping again. One boot.
func TestMixedSmoke(t *testing.T) {
	requireMixed(t, true)
	start := time.Now()
	p := bootMixed(t, false, smokeTools)
	t.Run("kernel", func(t *testing.T) { rpingKernel(t, p.B, p.A) })
	ctx := ctxFor(t, time.Minute)
	// Whatever depends on ib_cm goes first; ib_umad stays, for the engine.
	rm := "rmmod " + strings.Join(reverse(p.B.Image().SkipClosure(vmtest.CMModules())), " ")
	if r, err := p.B.Run(ctx, rm+" && ! grep -q '^ib_cm ' /proc/modules"); err != nil {
		t.Fatalf("%s in the arm64 guest: %v %+v", rm, err, r)
	}
	t.Run("engine", func(t *testing.T) { rpingEngine(t, p.B, p.A, "go-client") })
	t.Logf("mixed smoke: %v including boot", time.Since(start).Round(time.Millisecond))
}

func reverse(s []string) []string {
	r := make([]string, len(s))
	for i, v := range s {
		r[len(s)-1-i] = v
	}
	return r
}

// TestMixedKernel: every pairing on the kernel CM in both guests.
func TestMixedKernel(t *testing.T) {
	requireMixed(t, false)
	p := bootMixed(t, false, allTools)
	for _, pl := range placements(p) {
		ours, cp := pl.ours, pl.cp
		t.Run(pl.name, func(t *testing.T) {
			t.Run("rping", func(t *testing.T) { rpingKernel(t, ours, cp) })
			t.Run("cmtime", func(t *testing.T) { cmtimeMixed(t, ours, cp, ping) })
			t.Run("ece", func(t *testing.T) { eceMixed(t, ours, cp, ping, false) })
			t.Run("pingpong", func(t *testing.T) { pingpongMixed(t, ours, cp) })
			t.Run("rstream", func(t *testing.T) { streamMixed(t, ours, cp, "") })
			t.Run("rcopy", func(t *testing.T) { copyMixed(t, ours, cp, "") })
			t.Run("echo", func(t *testing.T) { echoMixed(t, ours, cp, "kernel") })
			t.Run("write", func(t *testing.T) { writeMixed(t, ours, cp, "kernel") })
		})
	}
}

// TestMixedEngine: our programs in the arm64 guest on our CM engine (the
// guest has no kernel CM), the C peers in the x86-64 guest on the kernel
// CM, both roles.
func TestMixedEngine(t *testing.T) {
	requireMixed(t, false)
	p := bootMixed(t, true, allTools)
	ours, cp := p.B, p.A
	t.Run("rping", func(t *testing.T) { rpingEngine(t, ours, cp) })
	t.Run("cmtime", func(t *testing.T) { cmtimeMixed(t, ours, cp, userPing) })
	t.Run("ece", func(t *testing.T) { eceMixed(t, ours, cp, userPing, true) })
	t.Run("rstream", func(t *testing.T) { streamMixed(t, ours, cp, "-backend user") })
	t.Run("rcopy", func(t *testing.T) { copyMixed(t, ours, cp, "-backend user") })
	t.Run("echo", func(t *testing.T) { echoMixed(t, ours, cp, "user") })
	t.Run("write", func(t *testing.T) { writeMixed(t, ours, cp, "user") })
}

// serverUp starts our server: on the engine, until its debug log says it
// listens; on the kernel CM, until the kernel lists the listener.
func serverUp(t *testing.T, ctx context.Context, m *vmtest.Machine, goPing, args string, port int) (wait func() (string, int)) {
	t.Helper()
	if goPing == userPing {
		w := engineServer(t, ctx, m, args)
		return func() (string, int) { o, _, c := w(); return o, c }
	}
	return cServer(t, ctx, m, port, goPing+" "+args)
}

// cmtimeMixed: rdmacm-ping -cmtime against librdmacm's cmtime, both roles.
func cmtimeMixed(t *testing.T, ours, cp *vmtest.Machine, goPing string) {
	check := func(t *testing.T, who, out string) {
		t.Helper()
		tbl := cmtimeTable(out)
		for _, s := range []string{"create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy"} {
			if _, ok := tbl[s]; !ok {
				t.Fatalf("%s: no %q row:\n%s", who, s, out)
			}
		}
		if strings.Contains(out, "error") {
			t.Fatalf("%s reported errors:\n%s", who, out)
		}
	}
	t.Run("go-client", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		srv, err := cp.Start(ctx, "cmtime -b "+cp.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop(context.Background())
		listening(t, ctx, cp, 7471)
		out, _, code := runOn(t, ctx, ours, goPing+" -c -a "+cp.Addr+" -cmtime 20")
		if code != 0 {
			t.Fatalf("rdmacm-ping -cmtime: exit %d", code)
		}
		check(t, "rdmacm-ping -cmtime", out)
	})
	t.Run("go-server", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		// The -cmtime server serves until stopped.
		cmd := goPing + " -s -cmtime 1 -a " + ours.Addr
		srv, err := ours.Start(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop(context.Background())
		if goPing == userPing {
			if err := srv.WaitOutput(ctx, "listening on"); err != nil {
				t.Fatal(err)
			}
		} else {
			listening(t, ctx, ours, 7471)
		}
		out, _, code := runOn(t, ctx, cp, "cmtime -s "+ours.Addr+" -c 20")
		if code != 0 {
			t.Fatalf("cmtime: exit %d", code)
		}
		check(t, "cmtime", out)
		if r, err := srv.Stop(ctx); err != nil {
			t.Fatalf("%s: %v %+v", cmd, err, r)
		}
	})
}

// eceMixed: the ECE exchange with the librdmacm fixture, both roles,
// accepted and rejected.
func eceMixed(t *testing.T, ours, cp *vmtest.Machine, goPing string, engine bool) {
	port := strconv.Itoa(fixturePort)
	t.Run("go-client", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		wait := cServer(t, ctx, cp, fixturePort, fixture+" -s -a "+cp.Addr+" -p "+port+" -V "+vendor+" -O 0x10000000 -t 60")
		cOut, _, cCode := runOn(t, ctx, ours, goPing+" -c -connect-only -a "+cp.Addr+" -p "+port+" -ece "+vendor+":0x30000001")
		sOut, sCode := wait()
		if sCode != 0 || cCode != 0 {
			t.Fatalf("exit codes: fixture %d, rdmacm-ping %d", sCode, cCode)
		}
		mustContain(t, "fixture", sOut, "remote ECE: vendor=0x15b3 options=0x30000001", "result: connected")
		mustContain(t, "rdmacm-ping", cOut, "remote ECE: vendor=0x15b3 options=0x10000000", "private data length: 196", "disconnected")
	})
	t.Run("go-server", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		wait := serverUp(t, ctx, ours, goPing, "-s -connect-only -a "+ours.Addr+" -p "+port+" -ece "+vendor+":0x20000002", fixturePort)
		cOut, _, cCode := runOn(t, ctx, cp, fixture+" -c -a "+ours.Addr+" -p "+port+" -V "+vendor+" -O 0x30000001 -t 60")
		sOut, sCode := wait()
		if sCode != 0 || cCode != 0 {
			t.Fatalf("exit codes: rdmacm-ping %d, fixture %d", sCode, cCode)
		}
		mustContain(t, "fixture", cOut, "remote ECE: vendor=0x15b3 options=0x20000002", "result: connected")
		mustContain(t, "rdmacm-ping", sOut, "remote ECE: vendor=0x15b3 options=0x30000001", "private data length: 56", "disconnected")
	})
	t.Run("go-server-rejects", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		wait := serverUp(t, ctx, ours, goPing, "-s -reject-ece -a "+ours.Addr+" -p "+port, fixturePort)
		cOut, _, cCode := runOn(t, ctx, cp, fixture+" -c -a "+ours.Addr+" -p "+port+" -V "+vendor+" -O 0x30000001 -t 60")
		sOut, sCode := wait()
		if sCode != 0 || cCode != 3 {
			t.Fatalf("exit codes: rdmacm-ping %d (want 0), fixture %d (want 3, rejected)", sCode, cCode)
		}
		mustContain(t, "fixture", cOut, "event: RDMA_CM_EVENT_REJECTED status=35", "result: rejected status=35")
		mustContain(t, "rdmacm-ping", sOut, "remote ECE: vendor=0x15b3 options=0x30000001", "rejected with reason 35")
	})
	t.Run("fixture-rejects", func(t *testing.T) {
		ctx := ctxFor(t, 3*time.Minute)
		wait := cServer(t, ctx, cp, fixturePort, fixture+" -s -r -a "+cp.Addr+" -p "+port+" -t 60")
		_, cErr, cCode := runOn(t, ctx, ours, goPing+" -c -connect-only -a "+cp.Addr+" -p "+port+" -ece "+vendor+":0x30000001")
		sOut, sCode := wait()
		if sCode != 0 || cCode != 1 {
			t.Fatalf("exit codes: fixture %d (want 0), rdmacm-ping %d (want 1)", sCode, cCode)
		}
		mustContain(t, "fixture", sOut, "rejected with rdma_reject_ece")
		mustContain(t, "rdmacm-ping", cErr, "connection rejected: reason 35 (vendor option is not supported)")
	})
}

// roceGID is the index of m's RoCE v2 GID for its IPv4 address.
func roceGID(t *testing.T, ctx context.Context, m *vmtest.Machine) int {
	t.Helper()
	var o [4]int
	fmt.Sscanf(m.Addr, "%d.%d.%d.%d", &o[0], &o[1], &o[2], &o[3])
	gid := fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", o[0], o[1], o[2], o[3])
	d := "/sys/class/infiniband/rxe0/ports/1"
	r, err := m.Run(ctx, fmt.Sprintf(`for g in %s/gids/*; do i=${g##*/}; [ "$(cat $g)" = %s ] && [ "$(cat %s/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && echo $i; done; true`, d, gid, d))
	if err != nil {
		t.Fatalf("GID table of %s: %v", m.Name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.Split(r.Stdout, "\n")[0]))
	if err != nil {
		t.Fatalf("%s: no RoCE v2 GID %s: %q", m.Name, gid, r.Stdout)
	}
	return n
}

var pingpongSummary = regexp.MustCompile(`(\d+) iters in [\d.]+ seconds = [\d.]+ usec/iter`)

// pingpongMixed: verbs-pingpong against ibv_rc_pingpong, both roles, the
// received data validated (-c), in poll and event mode.
func pingpongMixed(t *testing.T, ours, cp *vmtest.Machine) {
	ctx := ctxFor(t, 5*time.Minute)
	gids := map[*vmtest.Machine]int{ours: roceGID(t, ctx, ours), cp: roceGID(t, ctx, cp)}
	port := 18700
	for _, c := range []struct {
		name  string
		goSrv bool
		extra string
	}{{"go-server", true, ""}, {"go-client", false, ""}, {"go-server/events", true, " -e"}, {"go-client/events", false, " -e"}} {
		port++
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxFor(t, 3*time.Minute)
			srv, cli := cp, ours
			srvProg, cliProg := "ibv_rc_pingpong", "/host/bin/verbs-pingpong"
			if c.goSrv {
				srv, cli, srvProg, cliProg = ours, cp, cliProg, srvProg
			}
			common := fmt.Sprintf("-d rxe0 -n 200 -s 4096 -c -p %d%s", port, c.extra)
			sp, err := srv.Start(ctx, fmt.Sprintf("%s %s -g %d", srvProg, common, gids[srv]))
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Stop(context.Background())
			// The server's stdout is block-buffered: the client retries
			// until it listens.
			cmd := fmt.Sprintf("for i in $(seq 100); do %s %s -g %d %s && exit 0; sleep 0.2; done; exit 1", cliProg, common, gids[cli], srv.Addr)
			cOut, _, cCode := runOn(t, ctx, cli, cmd)
			sr, err := sp.Wait(ctx)
			if sr == nil {
				t.Fatalf("server: %v", err)
			}
			t.Logf("server (%s) %s exit %d:\n%s%s", srv.Name, srvProg, sr.ExitCode, sr.Stdout, sr.Stderr)
			if cCode != 0 || sr.ExitCode != 0 {
				t.Fatalf("exit codes: client %d, server %d", cCode, sr.ExitCode)
			}
			for who, out := range map[string]string{"server": sr.Stdout + sr.Stderr, "client": cOut} {
				if m := pingpongSummary.FindStringSubmatch(out); m == nil || m[1] != "200" {
					t.Errorf("%s: no summary for 200 iters:\n%s", who, out)
				}
				if strings.Contains(out, "invalid data") {
					t.Errorf("%s: data did not validate:\n%s", who, out)
				}
			}
		})
	}
}

// streamMixed: the rsocket twin against rstream, both roles, every byte
// verified; goFlags picks the twin's backend.
func streamMixed(t *testing.T, ours, cp *vmtest.Machine, goFlags string) {
	g := twintest.New(vmtest.PairOptions{}, goFlags)
	port := 7650
	for _, flags := range []string{"-S 4096 -C 1 -I 50 -T b -T v", "-S 65536 -C 10 -I 1 -T b -T v"} {
		port++
		t.Run("go-server/"+flags, func(t *testing.T) { g.StreamCase(t, ours, cp, twintest.GoStream, twintest.CStream, flags, port) })
		port++
		t.Run("go-client/"+flags, func(t *testing.T) { g.StreamCase(t, cp, ours, twintest.CStream, twintest.GoStream, flags, port) })
	}
}

// copyMixed: 8 MiB through rcopy and our twin, both roles, the copy's
// sha256 checked.
func copyMixed(t *testing.T, ours, cp *vmtest.Machine, goFlags string) {
	g := twintest.New(vmtest.PairOptions{}, goFlags)
	ctx := ctxFor(t, time.Minute)
	const size = 8 << 20
	t.Run("go-client", func(t *testing.T) {
		src, want := twintest.CopySource(t, ctx, ours, size)
		g.CopyCase(t, cp, ours, twintest.CCopy, twintest.GoCopy, src, want, size, 7861)
	})
	t.Run("go-server", func(t *testing.T) {
		src, want := twintest.CopySource(t, ctx, cp, size)
		g.CopyCase(t, ours, cp, twintest.GoCopy, twintest.CCopy, src, want, size, 7862)
	})
}

// exampleCase runs the Go example (backend) and its C twin in both roles,
// the server first: ours until it prints "listening"; the C one prints
// that only once a client came, so until the kernel lists it on port. A C
// server that does not end by itself (cServerEnds false) is stopped once
// its client is done.
func exampleCase(t *testing.T, ours, cp *vmtest.Machine, goProg, cProg, backend string, port int, cServerEnds bool, check func(t *testing.T, srv, cli string)) {
	for _, goSrv := range []bool{true, false} {
		name := "go-client"
		srv, cli := cp, ours
		if goSrv {
			name, srv, cli = "go-server", ours, cp
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t, 3*time.Minute)
			srvCmd := fmt.Sprintf("%s -s %s", cProg, srv.Addr)
			cliCmd := fmt.Sprintf("%s -backend %s -a %s", goProg, backend, srv.Addr)
			if goSrv {
				srvCmd = fmt.Sprintf("%s -backend %s -s -a %s", goProg, backend, srv.Addr)
				cliCmd = fmt.Sprintf("%s %s", cProg, srv.Addr)
			}
			sp, err := srv.Start(ctx, srvCmd)
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Stop(context.Background())
			if !goSrv {
				listening(t, ctx, srv, port)
			} else if err := sp.WaitOutput(ctx, "listening"); err != nil {
				t.Fatal(err)
			}
			cOut, _, cCode := runOn(t, ctx, cli, cliCmd)
			wait := sp.Wait
			if !goSrv && !cServerEnds {
				wait = sp.Stop
			}
			sr, err := wait(ctx)
			if sr == nil {
				t.Fatalf("server: %v", err)
			}
			if !goSrv && !cServerEnds {
				sr.ExitCode = 0 // stopped
			}
			t.Logf("server (%s) %q exit %d:\n%s%s", srv.Name, srvCmd, sr.ExitCode, sr.Stdout, sr.Stderr)
			if cCode != 0 || sr.ExitCode != 0 {
				t.Fatalf("exit codes: client %d, server %d", cCode, sr.ExitCode)
			}
			check(t, sr.Stdout, cOut)
		})
	}
}

// echoMixed: examples/echo against examples/c/echo.c, 1,000 x 4 KiB.
func echoMixed(t *testing.T, ours, cp *vmtest.Machine, backend string) {
	// echo.c's server echoes its -n (1,000) messages and disconnects.
	exampleCase(t, ours, cp, "/host/bin/echo", "/host/bin/echo-c", backend, 7471, true, func(t *testing.T, srv, cli string) {
		if srv != "listening\nserver: echoed 1000 messages\n" {
			t.Errorf("server output %q", srv)
		}
		if !regexp.MustCompile(`^client: 1000 x 4096 B, p50 \S+ p99 \S+ max \S+\n$`).MatchString(cli) {
			t.Errorf("client output %q", cli)
		}
	})
}

// writeMixed: examples/write against examples/c/write.c: 1 MiB in one
// RDMA WRITE with immediate, the bytes checked on both ends (the Go side
// prints their sha256, the C side their byte sum).
func writeMixed(t *testing.T, ours, cp *vmtest.Machine, backend string) {
	const size = 1 << 20
	data := make([]byte, size)
	var sum byte
	for i := range data {
		data[i] = byte(i * 7)
		sum += data[i]
	}
	goLine := fmt.Sprintf("%d bytes written, sha256 %x\n", size, sha256.Sum256(data))
	cLine := fmt.Sprintf("%d bytes written, sum %d\n", size, sum)
	exampleCase(t, ours, cp, "/host/bin/write", "/host/bin/write-c", backend, 7472, true, func(t *testing.T, srv, cli string) {
		wantSrv, wantCli := "listening\nserver: "+cLine, "client: "+goLine
		if strings.Contains(t.Name(), "go-server") {
			wantSrv, wantCli = "listening\nserver: "+goLine, "client: "+cLine
		}
		if srv != wantSrv || cli != wantCli {
			t.Errorf("server %q (want %q), client %q (want %q)", srv, wantSrv, cli, wantCli)
		}
	})
}
