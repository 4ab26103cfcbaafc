package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest"
)

// BenchmarkCmtimeVM compares connection setup of librdmacm and package cm
// against the same cmtime server in the vmtest guests: cmtime's C client
// and `rdmacm-ping -cmtime N` run alternately (A B A B ...) in guest a
// against `cmtime -b` in guest b. It reports the median "connect" step
// (wall time for N pipelined connections) of each and their ratio, after
// one uncounted warm-up round.
//
//	VMTEST=1 go test -run '^$' -bench CmtimeVM -benchtime 1x ./cmd/rdmacm-ping/
//
// BENCH_CONNS (default 200) and BENCH_ROUNDS (default 3) tune it;
// BENCH_CPUPROFILE=NAME writes the Go client's CPU profile of the last
// round to the share's out/NAME.
func BenchmarkCmtimeVM(b *testing.B) {
	p := pair(b)
	conns, rounds := envInt("BENCH_CONNS", 200), envInt("BENCH_ROUNDS", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
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
	var cMS, goMS []float64
	for i := 0; i < b.N; i++ {
		for r := -1; r < rounds; r++ { // round 0 warms both up and is not counted
			for _, who := range []string{"cmtime", "rdmacm-ping"} {
				cmd := settle + fmt.Sprintf("cmtime -s %s -c %d", p.B.Addr, conns)
				if who == "rdmacm-ping" {
					cmd = settle + fmt.Sprintf("%s -c -a %s -cmtime %d", local, p.B.Addr, conns)
					if profile != "" && r == rounds-1 {
						cmd += " -cpuprofile /host/out/" + profile
					}
				}
				res, err := p.A.Run(ctx, cmd)
				if err != nil {
					b.Fatalf("%s: %v\n%s%s", cmd, err, res.Stdout, res.Stderr)
				}
				ms, ok := cmtimeTable(res.Stdout)["connect"]
				if !ok {
					b.Fatalf("%s: no connect row:\n%s", cmd, res.Stdout)
				}
				b.Logf("round %d %s: connect %.2f ms for %d connections\n%s", r+1, who, ms, conns, res.Stdout)
				// go test truncates benchmark logs: the figures also go to stderr.
				fmt.Fprintf(os.Stderr, "bench-vm: round %d %s (kernel CM): connect %.2f ms for %d connections\n", r+1, who, ms, conns)
				if r < 0 {
					continue
				}
				if who == "cmtime" {
					cMS = append(cMS, ms)
				} else {
					goMS = append(goMS, ms)
				}
			}
		}
	}
	c, g := median(cMS), median(goMS)
	b.ReportMetric(c, "librdmacm-connect-ms")
	b.ReportMetric(g, "go-connect-ms")
	b.ReportMetric(g/c, "go/librdmacm")
	b.Logf("connect, %d connections: librdmacm %v ms, Go %v ms; median ratio Go/librdmacm %.2f", conns, cMS, goMS, g/c)
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
// returns its path there, so that the Go clients run from guest memory as
// the C clients do (from the guest's root file system, also in memory).
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
	return local
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
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
// each client starts after the settle pause. It reports the median
// connect step of each client, the median of the per-round ratios with a
// 95% bootstrap interval, and in how many rounds the engine was faster.
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
			b.Fatalf("%s: %v\n%+v", cmd, err, res)
		}
		return cmtimeTable(res.Stdout)
	}
	clients := map[string]string{
		"c": fmt.Sprintf("cmtime -s %s -c %d", p.B.Addr, conns),
		"k": fmt.Sprintf("%s -backend kernel -c -a %s -cmtime %d", local, p.B.Addr, conns),
		"e": fmt.Sprintf("%s -backend user -c -a %s -cmtime %d", local, p.B.Addr, conns),
		"u": fmt.Sprintf("%s -backend user -umad-sends -c -a %s -cmtime %d", local, p.B.Addr, conns),
	}
	// The kernel CM's two clients run together (between load and unload).
	orders := []string{"cke", "eck", "kce", "ekc"}
	loaded := false
	ms := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		for r := -1; r < rounds; r++ { // round 0 warms up and is not counted
			got := map[string]float64{}
			for _, who := range orders[(r+1)%len(orders)] {
				w := string(who)
				switch kernel := w != "e"; {
				case kernel && !loaded:
					run(load)
				case !kernel && loaded:
					run(unload)
				}
				loaded = w != "e"
				got[w] = run(settle + clients[w])["connect"]
				if w == "e" && umadSends {
					got["u"] = run(settle + clients["u"])["connect"]
				}
			}
			fmt.Fprintf(os.Stderr, "bench-vm: round %d (%s) connect: librdmacm %.2f ms, rdmacm-ping kernel %.2f ms, rdmacm-ping engine %.2f ms, engine with umad sends %.2f ms\n",
				r+1, orders[(r+1)%len(orders)], got["c"], got["k"], got["e"], got["u"])
			if r < 0 {
				continue
			}
			for w, v := range got {
				ms[w] = append(ms[w], v)
			}
			ms["e/c"] = append(ms["e/c"], got["e"]/got["c"])
			ms["e/k"] = append(ms["e/k"], got["e"]/got["k"])
			ms["k/c"] = append(ms["k/c"], got["k"]/got["c"])
			if umadSends {
				ms["e/u"] = append(ms["e/u"], got["e"]/got["u"])
			}
		}
	}
	if loaded {
		run(unload)
	}
	b.ReportMetric(median(ms["c"]), "librdmacm-connect-ms")
	b.ReportMetric(median(ms["k"]), "go-kernel-connect-ms")
	b.ReportMetric(median(ms["e"]), "engine-connect-ms")
	for _, q := range []string{"e/c", "e/k", "k/c", "e/u"} {
		if len(ms[q]) == 0 {
			continue
		}
		lo, hi := medianCI(ms[q])
		faster := 0
		for _, v := range ms[q] {
			if v < 1 {
				faster++
			}
		}
		name := map[string]string{"e/c": "engine/librdmacm", "e/k": "engine/go-kernel", "k/c": "go-kernel/librdmacm", "e/u": "engine/engine-umad-sends"}[q]
		b.ReportMetric(median(ms[q]), name)
		fmt.Fprintf(os.Stderr, "bench-vm: %s per round: median %.3f, 95%% interval %.3f-%.3f, below 1 in %d of %d rounds\n", name, median(ms[q]), lo, hi, faster, len(ms[q]))
	}
	if umadSends {
		b.ReportMetric(median(ms["u"]), "engine-umad-sends-connect-ms")
	}
}

// medianCI is a 95% percentile-bootstrap interval for the median of v
// (2,000 resamples, fixed seed).
func medianCI(v []float64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	meds := make([]float64, 2000)
	s := make([]float64, len(v))
	for i := range meds {
		for j := range s {
			s[j] = v[rng.IntN(len(v))]
		}
		meds[i] = median(s)
	}
	sort.Float64s(meds)
	return meds[len(meds)*25/1000], meds[len(meds)*975/1000]
}
