package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
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
				cmd := fmt.Sprintf("cmtime -s %s -c %d", p.B.Addr, conns)
				if who == "rdmacm-ping" {
					cmd = fmt.Sprintf("%s -c -a %s -cmtime %d", ping, p.B.Addr, conns)
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
// booted without the kernel CM, and each round loads it (insmod ib_cm,
// iw_cm, rdma_cm, rdma_ucm from /mods), runs cmtime's C client and
// `rdmacm-ping -backend kernel -cmtime N`, unloads it (the engine can
// only register the CM class without ib_cm) and runs `rdmacm-ping
// -backend user -cmtime N` (MADs sent from a UD QP) and the same with
// -umad-sends (MADs sent through umad), all against one `cmtime -b` in
// guest b; every other round runs the engine first. It reports the
// median connect step of each and the engine's ratios.
//
//	VMTEST=1 go test -run '^$' -bench 'CmtimeUserVM' -benchtime 1x ./cmd/rdmacm-ping/
func BenchmarkCmtimeUserVM(b *testing.B) {
	p := userPair(b)
	conns, rounds := envInt("BENCH_CONNS", 200), envInt("BENCH_ROUNDS", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	srv, err := p.B.Start(ctx, "cmtime -b "+p.B.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop(context.Background())
	listening(b, ctx, p.B, 7471)
	const load = "for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko || exit 1; done"
	const unload = "rmmod rdma_ucm rdma_cm iw_cm ib_cm"
	run := func(cmd string) map[string]float64 {
		res, err := p.A.Run(ctx, cmd)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%s: %v\n%+v", cmd, err, res)
		}
		return cmtimeTable(res.Stdout)
	}
	ms := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		for r := -1; r < rounds; r++ { // round 0 warms up and is not counted
			var c, k, e, u map[string]float64
			kernelCM := func() {
				run(load)
				c = run(fmt.Sprintf("cmtime -s %s -c %d", p.B.Addr, conns))
				k = run(fmt.Sprintf("%s -backend kernel -c -a %s -cmtime %d", ping, p.B.Addr, conns))
				run(unload)
			}
			engine := func() {
				e = run(fmt.Sprintf("%s -c -a %s -cmtime %d", userPing, p.B.Addr, conns))
				u = run(fmt.Sprintf("%s -umad-sends -c -a %s -cmtime %d", userPing, p.B.Addr, conns))
			}
			// Alternate which CM goes first: each run leaves guest b's
			// server with N connections in TimeWait to clean up.
			if r%2 == 0 {
				kernelCM()
				engine()
			} else {
				engine()
				kernelCM()
			}
			fmt.Fprintf(os.Stderr, "bench-vm: round %d same guests: connect librdmacm %.2f ms, rdmacm-ping kernel %.2f ms, rdmacm-ping engine %.2f ms, engine with umad sends %.2f ms (create qp %.2f / %.2f / %.2f / %.2f ms)\n",
				r+1, c["connect"], k["connect"], e["connect"], u["connect"], c["create qp"], k["create qp"], e["create qp"], u["create qp"])
			if r < 0 {
				continue
			}
			ms["c"] = append(ms["c"], c["connect"])
			ms["k"] = append(ms["k"], k["connect"])
			ms["e"] = append(ms["e"], e["connect"])
			ms["u"] = append(ms["u"], u["connect"])
		}
	}
	c, k, e, u := median(ms["c"]), median(ms["k"]), median(ms["e"]), median(ms["u"])
	b.ReportMetric(c, "librdmacm-connect-ms")
	b.ReportMetric(k, "go-kernel-connect-ms")
	b.ReportMetric(e, "engine-connect-ms")
	b.ReportMetric(u, "engine-umad-sends-connect-ms")
	b.ReportMetric(e/u, "engine/engine-umad-sends")
	b.ReportMetric(e/c, "engine/librdmacm")
	b.ReportMetric(e/k, "engine/go-kernel")
	b.ReportMetric(k/c, "go-kernel/librdmacm")
}
