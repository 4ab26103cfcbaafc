package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/benchstat"
	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

// serverState describes the `cmtime -b` server when a client fails:
// whether it still runs, how it ended and the tail of its output, guest
// b's cm_ids and its last kernel messages. A round whose connections were
// all rejected with reason 8 (invalid service ID) had lost the server's
// listener; this says where it went.
func serverState(ctx context.Context, srv *agent.Process, m *vmtest.Machine) string {
	tail := func(s string) string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return strings.Join(lines[max(0, len(lines)-20):], "\n")
	}
	var b strings.Builder
	if srv.Done() {
		if res, _ := srv.Wait(ctx); res != nil {
			fmt.Fprintf(&b, "server ended after %v: exit code %d, signal %q, error %q\n", res.Duration, res.ExitCode, res.Signal, res.Error)
		}
	} else {
		b.WriteString("server still running\n")
	}
	fmt.Fprintf(&b, "server stdout (tail):\n%s\nserver stderr (tail):\n%s\n", tail(srv.Stdout()), tail(srv.Stderr()))
	if r, err := m.Run(ctx, "rdma resource show cm_id; dmesg | tail -20"); err == nil {
		fmt.Fprintf(&b, "guest %s: cm_ids and dmesg:\n%s%s", m.Name, r.Stdout, r.Stderr)
	}
	return b.String()
}

// BenchmarkCmtimeVM compares connection setup and teardown of librdmacm
// and package cm (kernel backend) against the same cmtime server in the
// vmtest guests: cmtime's C client and `rdmacm-ping -cmtime N` run
// alternately (A B, B A, ...) in guest a against `cmtime -b` in guest b,
// each after the settle pause, the Go binary from guest a's tmpfs. It
// reports every cmtime step (wall time for N connections): each client's
// median and the median of the per-round Go/C ratios with a 95% bootstrap
// interval, after one uncounted warm-up round.
//
//	BENCH_ROUNDS=20 VMTEST=1 go test -run '^$' -bench 'CmtimeVM$' -benchtime 1x -timeout 60m ./cmd/rdmacm-ping/
//
// BENCH_CONNS (default 200) and BENCH_ROUNDS (default 3) tune it;
// BENCH_CSV=FILE appends every client's table, one row per step;
// BENCH_CPUPROFILE=NAME writes the Go client's CPU profile of the last
// round to the share's out/NAME.
func BenchmarkCmtimeVM(b *testing.B) {
	p := pair(b)
	conns, rounds := envInt("BENCH_CONNS", 200), envInt("BENCH_ROUNDS", 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+1)*time.Minute+10*time.Minute)
	defer cancel()
	srv, err := p.B.Start(ctx, "cmtime -b "+p.B.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop(context.Background())
	listening(b, ctx, p.B, 7471)
	local := localPing(b, ctx, p.A)
	profile := os.Getenv("BENCH_CPUPROFILE")
	if profile != "" {
		if err := os.MkdirAll(filepath.Join(p.Share, "out"), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	rec := newStepRecorder("CmtimeVM")
	orders := []string{"ck", "kc"}
	for i := 0; i < b.N; i++ {
		for r := -1; r < rounds; r++ { // round 0 warms both up and is not counted
			order := orders[(r+1)%len(orders)]
			got := map[string]map[string]float64{}
			for _, who := range order {
				cmd := settle + fmt.Sprintf("cmtime -s %s -c %d", p.B.Addr, conns)
				if who == 'k' {
					cmd = settle + fmt.Sprintf("%s -c -a %s -cmtime %d", local, p.B.Addr, conns)
					if profile != "" && r == rounds-1 {
						cmd += " -cpuprofile /host/out/" + profile
					}
				}
				res, err := p.A.Run(ctx, cmd)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%s: %v\n%s%s\n%s", cmd, err, res.Stdout, res.Stderr, serverState(ctx, srv, p.B))
				}
				got[string(who)] = checkedTable(b, cmd, res.Stdout)
			}
			rec.round(b, r, order, got)
		}
	}
	rec.report(b, conns, "k/c")
}

// cmtimeSteps are the steps of cmtime's table that both clients time
// (no bind: neither benchmark passes -b).
var cmtimeSteps = []string{"create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy"}

// checkedTable parses a client's table and fails unless every step is in it.
func checkedTable(b *testing.B, cmd, out string) map[string]float64 {
	b.Helper()
	tbl := cmtimeTable(out)
	for _, s := range cmtimeSteps {
		if _, ok := tbl[s]; !ok {
			b.Fatalf("%s: no %q row:\n%s", cmd, s, out)
		}
	}
	return tbl
}

// clientNames name the clients of both benchmarks in reports.
var clientNames = map[string]string{"c": "librdmacm", "k": "go-kernel", "e": "engine", "u": "engine-umad-sends"}

// stepRecorder keeps every counted round's tables, per client and step.
type stepRecorder struct {
	bench string
	ms    map[string]map[string][]float64 // client → step → ms per round
	csv   *os.File
}

func newStepRecorder(bench string) *stepRecorder {
	s := &stepRecorder{bench: bench, ms: map[string]map[string][]float64{}}
	if name := os.Getenv("BENCH_CSV"); name != "" {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			s.csv = f
		}
	}
	return s
}

// round records one round (r < 0: the warm-up, printed, not counted).
func (s *stepRecorder) round(b *testing.B, r int, order string, got map[string]map[string]float64) {
	b.Helper()
	stamp := time.Now().UTC().Format(time.RFC3339)
	for _, who := range order {
		w := string(who)
		line := fmt.Sprintf("bench-vm: round %d (%s) %s:", r+1, order, clientNames[w])
		for _, st := range cmtimeSteps {
			line += fmt.Sprintf(" %s %.2f,", st, got[w][st])
			if r >= 0 && s.csv != nil {
				fmt.Fprintf(s.csv, "%s,%s,%d,%s,%s,%s,%.3f\n", stamp, s.bench, r+1, order, clientNames[w], st, got[w][st])
			}
		}
		// go test truncates benchmark logs: the figures go to stderr.
		fmt.Fprintln(os.Stderr, line[:len(line)-1], "ms")
		if r < 0 {
			continue
		}
		if s.ms[w] == nil {
			s.ms[w] = map[string][]float64{}
		}
		for _, st := range cmtimeSteps {
			s.ms[w][st] = append(s.ms[w][st], got[w][st])
		}
	}
}

// report prints, per step, each client's median and each ratio's median
// per-round value with its interval, and reports them as metrics. A ratio
// "x/y" names two clients.
func (s *stepRecorder) report(b *testing.B, conns int, ratios ...string) {
	if s.csv != nil {
		s.csv.Close()
	}
	for _, st := range cmtimeSteps {
		line := fmt.Sprintf("bench-vm: %s, %d connections, medians:", st, conns)
		for _, w := range []string{"c", "k", "e", "u"} {
			if v := s.ms[w][st]; len(v) > 0 {
				line += fmt.Sprintf(" %s %.2f ms,", clientNames[w], benchstat.Median(v))
				b.ReportMetric(benchstat.Median(v), clientNames[w]+"-"+metricName(st)+"-ms")
			}
		}
		fmt.Fprintln(os.Stderr, line[:len(line)-1])
		for _, q := range ratios {
			x, y := s.ms[q[:1]][st], s.ms[q[2:]][st]
			if len(x) == 0 || len(x) != len(y) {
				continue
			}
			per := make([]float64, len(x))
			faster := 0
			for i := range x {
				per[i] = x[i] / y[i]
				if per[i] < 1 {
					faster++
				}
			}
			lo, hi := benchstat.MedianCI(per)
			name := clientNames[q[:1]] + "/" + clientNames[q[2:]]
			b.ReportMetric(benchstat.Median(per), metricName(st)+"-"+name)
			fmt.Fprintf(os.Stderr, "bench-vm: %s: %s per round: median %.3f, 95%% interval %.3f-%.3f, below 1 in %d of %d rounds\n",
				st, name, benchstat.Median(per), lo, hi, faster, len(per))
		}
	}
}

func metricName(step string) string {
	return strings.ReplaceAll(step, " ", "-")
}

// settle starts every client run, so that no run overlaps the end of the
// previous run's time wait. The kernel CM holds each disconnected
// connection in TimeWait for cm_convert_to_ms(av.timeout) (cm_enter_timewait):
// 2^(19-8) = 2,048 ms here, from the REQ's primary local ACK timeout of 19,
// in guest b for every client and in guest a for the kernel CM's. With a
// one-second pause, in 80 rounds, each client's connect step (relative to
// its round's mean) was 2-13% higher when it ran right after itself, with
// no insmod or rmmod to delay its start, than after another client: the
// previous run's 200 expiries are the likely cause.
const settle = "sleep 3; "

// localPing copies rdmacm-ping from the share into guest g's tmpfs and
// returns the command that runs it there, so that the Go clients run from
// guest memory as the C clients do (from the guest's root file system,
// also in memory). BENCH_GODEBUG=V runs it with GODEBUG=V, for
// experiments such as disablethp=1 (docs/benchmarks.md, disconnect), and
// BENCH_ENV="K=V ..." with those variables (e.g. GOMAXPROCS=2).
// Run from the 9p share, every run faulted its code in through 9p again
// and TCG translated it afresh, inside the timed steps: the engine's first
// Connect took 20-30 ms that way, against 0.8-5.7 ms from tmpfs once the
// copy had run once.
func localPing(b *testing.B, ctx context.Context, g *vmtest.Machine) string {
	b.Helper()
	const local = "/tmp/bench-bin/rdmacm-ping"
	res, err := g.Run(ctx, "mkdir -p /tmp/bench-bin && cp "+ping+" "+local)
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("copying rdmacm-ping into guest %s: %v %+v", g.Name, err, res)
	}
	cmd := local
	if v := os.Getenv("BENCH_GODEBUG"); v != "" {
		cmd = "GODEBUG=" + v + " " + cmd
	}
	if v := os.Getenv("BENCH_ENV"); v != "" {
		cmd = "env " + v + " " + cmd
	}
	return cmd
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkCmtimeUserVM compares the user-space CM (-backend user: our
// engine over umad) with the kernel CM in the same two guests: guest a is
// booted without the kernel CM; cmtime's C client and `rdmacm-ping
// -backend kernel -cmtime N` run with the kernel CM loaded (insmod ib_cm,
// iw_cm, rdma_cm, rdma_ucm from /mods), and `rdmacm-ping -backend user
// -cmtime N` runs after it is unloaded (the engine can only register the
// CM class without ib_cm), all against one `cmtime -b` in guest b.
//
// The connect step is bound by guest b's server, whose speed varies by
// ±25% from run to run, so the design is paired and balanced: each round
// runs every client once, the order rotates through four sequences so
// that every client runs first, in the middle and last equally often, and
// each client starts after the settle pause. For every cmtime step it
// reports each client's median, the median of the per-round ratios with a
// 95% bootstrap interval, and in how many rounds the first was faster.
// BENCH_UMAD_SENDS=1 adds the engine with -umad-sends (MADs sent through
// umad instead of the UD QP), right after the engine.
//
//	BENCH_ROUNDS=40 VMTEST=1 go test -run '^$' -bench 'CmtimeUserVM' -benchtime 1x -timeout 60m ./cmd/rdmacm-ping/
func BenchmarkCmtimeUserVM(b *testing.B) {
	p := userPair(b)
	conns, rounds := envInt("BENCH_CONNS", 200), envInt("BENCH_ROUNDS", 4)
	umadSends := os.Getenv("BENCH_UMAD_SENDS") == "1"
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+1)*time.Minute+10*time.Minute)
	defer cancel()
	srv, err := p.B.Start(ctx, "cmtime -b "+p.B.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop(context.Background())
	listening(b, ctx, p.B, 7471)
	local := localPing(b, ctx, p.A)
	const load = "for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko || exit 1; done"
	const unload = "rmmod rdma_ucm rdma_cm iw_cm ib_cm"
	run := func(cmd string) map[string]float64 {
		res, err := p.A.Run(ctx, cmd)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%s: %v\n%+v\n%s", cmd, err, res, serverState(ctx, srv, p.B))
		}
		if strings.Contains(cmd, "-c ") {
			return checkedTable(b, cmd, res.Stdout)
		}
		return nil
	}
	clients := map[string]string{
		"c": fmt.Sprintf("cmtime -s %s -c %d", p.B.Addr, conns),
		"k": fmt.Sprintf("%s -backend kernel -c -a %s -cmtime %d", local, p.B.Addr, conns),
		"e": fmt.Sprintf("%s -backend user -c -a %s -cmtime %d", local, p.B.Addr, conns),
		"u": fmt.Sprintf("%s -backend user -umad-sends -c -a %s -cmtime %d", local, p.B.Addr, conns),
	}
	// After every module change one untimed run absorbs what TCG pays for
	// it: after insmod, cmtime (the new modules' code is translated on
	// first use); after rmmod, the engine (the pages the modules' code
	// occupied are reused, and QEMU invalidates the translated blocks it
	// still holds for them at the first write to each). Without it, the
	// engine's create qp was 1.23-1.29x librdmacm's in the rounds that
	// unloaded right before it and 0.99-1.02x in the others (70 rounds;
	// QEMU's own profile showed the invalidation).
	warmUp := map[bool]string{true: clients["c"], false: clients["e"]}
	// The kernel CM's two clients run together (between load and unload).
	orders := []string{"cke", "eck", "kce", "ekc"}
	loaded := false
	rec := newStepRecorder("CmtimeUserVM")
	for i := 0; i < b.N; i++ {
		for r := -1; r < rounds; r++ { // round 0 warms up and is not counted
			order := orders[(r+1)%len(orders)]
			got := map[string]map[string]float64{}
			for _, who := range order {
				w := string(who)
				if kernel := w != "e"; kernel != loaded {
					if kernel {
						run(load)
					} else {
						run(unload)
					}
					run(settle + warmUp[kernel])
				}
				loaded = w != "e"
				got[w] = run(settle + clients[w])
				if w == "e" && umadSends {
					got["u"] = run(settle + clients["u"])
				}
			}
			if umadSends {
				order = strings.Replace(order, "e", "eu", 1)
			}
			rec.round(b, r, order, got)
		}
	}
	if loaded {
		run(unload)
	}
	rec.report(b, conns, "e/c", "k/c", "e/k", "e/u")
}
