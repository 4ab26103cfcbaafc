package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cmd/internal/twintest"
	"github.com/go-rdma/rdmacm/internal/benchstat"
	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

// BenchmarkRsocketStreamVM compares the stream twin with librdmacm's
// rstream in the vmtest guests, both ends Go against both ends C (server
// in guest b, client in guest a), alternating C G, G C, ... per round,
// each client run after a settle pause (the kernel CM's TimeWait, see
// cmd/rdmacm-ping/bench_vm_test.go), the Go binary from the guests' tmpfs
// as rstream. Per mode (-T b blocking, -T n nonblocking, rstream's
// default) it reports each side's median client usec/xfer and Gb/sec,
// the median of the per-round Go/C ratios with a 95% bootstrap interval,
// and the CPU time per transfer of client and server, for rsockets and
// plain TCP (-T s).
//
// CPU time is the cgroup v2 usage_usec of a cgroup holding only the tool
// (all its threads, and the kernel's work in its syscalls: rxe's software
// NIC included), less the median of a one-round-trip run of the same
// side (setup, teardown and the server's idle wait), over the transfers.
//
//	BENCH_ROUNDS=6 [BENCH_TRANSPORTS=rdma] [BENCH_MODES="b n"] [BENCH_CASES="lat-64 bw-1m"] VMTEST=1 go test -run '^$' -bench 'RsocketStreamVM' -benchtime 1x -timeout 60m ./cmd/rsocket-stream/
//
// BENCH_GOENV (e.g. "GOMAXPROCS=2") sets the Go twin's environment.
func BenchmarkRsocketStreamVM(b *testing.B) {
	p := guests.Pair(b)
	rounds := 4
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	for _, m := range p.Machines() {
		script := "mkdir -p /tmp/bench-bin && cp " + goStream + " /tmp/bench-bin/ && " +
			vmtest.MountCgroup
		if r, err := m.Run(ctx, script); r == nil || !r.Success() {
			b.Fatalf("prepare %s: %v %+v", m.Name, err, r)
		}
	}
	const local = "/tmp/bench-bin/rsocket-stream"
	// BENCH_TRANSPORTS, BENCH_MODES and BENCH_CASES narrow the runs.
	transports := fieldsOr("BENCH_TRANSPORTS", "rdma tcp")
	modes := fieldsOr("BENCH_MODES", "b n")
	for _, m := range modes {
		if m != "b" && m != "n" {
			b.Fatalf("BENCH_MODES: %q is not b or n", m)
		}
	}
	type benchCase struct {
		name, flags string
		xfers       int // iterations × count × 2, rstream's divisor
	}
	setup := benchCase{"setup", "-S 64 -C 1 -I 1", 2}
	// Runs of a few seconds: the setup run's spread (tens of ms of CPU
	// in these guests) stays small per transfer.
	cases := []benchCase{
		{"lat-64", "-S 64 -C 1 -I 2000", 4000},
		{"lat-4k", "-S 4096 -C 1 -I 1000", 2000},
		{"bw-64k", "-S 65536 -C 400 -I 1", 800},
		{"bw-1m", "-S 1048576 -C 40 -I 1", 80},
	}
	if s := os.Getenv("BENCH_CASES"); s != "" {
		want := strings.Fields(s)
		cases = slices.DeleteFunc(cases, func(c benchCase) bool { return !slices.Contains(want, c.name) })
	}
	port := 7900
	for i := 0; i < b.N; i++ {
		for _, transport := range transports {
			for _, mode := range modes {
				var base map[string]cpuPair // median setup CPU per side
				for _, tc := range append([]benchCase{setup}, cases...) {
					flags := tc.flags + " -T " + mode
					if transport == "tcp" {
						flags += " -T s"
					}
					res := map[string][]sample{}
					for r := 0; r < rounds; r++ {
						order := []string{"c", "go"}
						if r%2 == 1 {
							order = []string{"go", "c"}
						}
						for _, who := range order {
							port++
							tool := map[string]string{"c": "rstream", "go": local}[who]
							res[who] = append(res[who], benchRun(b, ctx, p.B, p.A, tool, flags, port, transport == "tcp"))
						}
					}
					name := transport + "-" + mode + "-" + tc.name
					if tc.name == "setup" {
						base = reportSetup(b, name, res)
						continue
					}
					report(b, name, res, base, tc.xfers)
				}
			}
		}
	}
}

func fieldsOr(env, def string) []string {
	if s := os.Getenv(env); s != "" {
		return strings.Fields(s)
	}
	return strings.Fields(def)
}

// sample is one client run: its row and both sides' CPU time.
type sample struct {
	usec, gbps float64
	cpu        cpuPair
}

// cpuPair is the CPU time of client and server, µs.
type cpuPair struct{ cli, srv float64 }

func parseCPU(b *testing.B, who, out string) float64 {
	b.Helper()
	v, ok := vmtest.CPUUsec(out)
	if !ok {
		b.Fatalf("%s: no cpu_usec line in %q", who, out)
	}
	return v
}

// benchRun runs tool as server on srv and client on cli (after the
// settle pause), each in its own cgroup, and returns the client's row
// and both CPU times.
func benchRun(b *testing.B, ctx context.Context, srv, cli *vmtest.Machine, tool, flags string, port int, tcp bool) sample {
	b.Helper()
	args := fmt.Sprintf("%s -p %d", flags, port)
	cmd := tool
	if e := os.Getenv("BENCH_GOENV"); e != "" && tool != "rstream" {
		cmd = "env " + e + " " + tool
	}
	srvCmd := vmtest.InCgroup(fmt.Sprintf("s%d", port), cmd+" "+args)
	var sp *agent.Process
	if tcp { // no cm_id to watch: the client retries until the port answers
		var err error
		if sp, err = srv.Start(ctx, srvCmd); err != nil {
			b.Fatal(err)
		}
	} else {
		marker := ""
		if tool != "rstream" {
			marker = "name"
		}
		sp = twintest.Serve(b, ctx, srv, srvCmd, marker, port)
	}
	defer sp.Stop(context.Background())
	for try := 0; ; try++ {
		cliCmd := vmtest.InCgroup(fmt.Sprintf("c%d-%d", port, try), fmt.Sprintf("%s -s %s %s", cmd, srv.Addr, args))
		r, err := cli.Run(ctx, "sleep 3; "+cliCmd)
		if r != nil && r.Success() {
			so := twintest.Finish(b, ctx, sp, tool+" server")
			usec, gbps := parseRow(b, r.Stdout)
			return sample{usec, gbps, cpuPair{parseCPU(b, "client", r.Stdout), parseCPU(b, "server", so)}}
		}
		if !tcp || try == 5 {
			b.Fatalf("%s client %s: %v %+v", tool, args, err, r)
		}
	}
}

// parseRow reads usec/xfer and Gb/sec from the row of a custom test.
func parseRow(b *testing.B, out string) (usec, gbps float64) {
	b.Helper()
	m := twintest.RowPattern.FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("no row in %q", out)
	}
	f := strings.Fields(m[0])
	usec, err1 := strconv.ParseFloat(f[len(f)-1], 64)
	gbps, err2 := strconv.ParseFloat(f[len(f)-2], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("row %q", m[0])
	}
	return usec, gbps
}

// reportSetup prints the median CPU time of the one-round-trip runs and
// returns it per side.
func reportSetup(b *testing.B, name string, res map[string][]sample) map[string]cpuPair {
	base := map[string]cpuPair{}
	var rounds [2][2][]float64 // c, go × client, server
	for i, who := range []string{"c", "go"} {
		for _, r := range res[who] {
			rounds[i][0], rounds[i][1] = append(rounds[i][0], r.cpu.cli), append(rounds[i][1], r.cpu.srv)
		}
		base[who] = cpuPair{benchstat.Median(rounds[i][0]), benchstat.Median(rounds[i][1])}
	}
	fmt.Printf("%-14s C cpu %8.0f / %8.0f usec | Go cpu %8.0f / %8.0f usec (client / server, per run, %d rounds)\n",
		name, base["c"].cli, base["c"].srv, base["go"].cli, base["go"].srv, len(res["c"]))
	fmt.Printf("%-14s rounds: C cpu %s / %s | Go cpu %s / %s\n", "",
		floats(rounds[0][0]), floats(rounds[0][1]), floats(rounds[1][0]), floats(rounds[1][1]))
	return base
}

// report prints one line per case: medians and the Go/C ratio of
// usec/xfer (latency: below 1 is better for Go) with its interval, and
// each side's CPU time per transfer beyond its setup run's.
func report(b *testing.B, name string, res map[string][]sample, base map[string]cpuPair, xfers int) {
	var cu, gu, cg, gg, ratio []float64
	cpu := map[string][2][]float64{}
	for i := range res["c"] {
		c, g := res["c"][i], res["go"][i]
		cu, gu = append(cu, c.usec), append(gu, g.usec)
		cg, gg = append(cg, c.gbps), append(gg, g.gbps)
		ratio = append(ratio, g.usec/c.usec)
	}
	for _, who := range []string{"c", "go"} {
		var cli, srv []float64
		for _, r := range res[who] {
			cli = append(cli, (r.cpu.cli-base[who].cli)/float64(xfers))
			srv = append(srv, (r.cpu.srv-base[who].srv)/float64(xfers))
		}
		cpu[who] = [2][]float64{cli, srv}
	}
	lo, hi := benchstat.MedianCI(ratio)
	med := func(who string, side int) float64 { return benchstat.Median(cpu[who][side]) }
	fmt.Printf("%-14s C %9.2f usec/xfer %6.3f Gb/s cpu %8.1f / %8.1f | Go %9.2f usec/xfer %6.3f Gb/s cpu %8.1f / %8.1f | Go/C usec/xfer %.2f [%.2f, %.2f] (%d rounds; cpu usec/xfer client / server)\n",
		name, benchstat.Median(cu), benchstat.Median(cg), med("c", 0), med("c", 1),
		benchstat.Median(gu), benchstat.Median(gg), med("go", 0), med("go", 1),
		benchstat.Median(ratio), lo, hi, len(ratio))
	// The rounds themselves, for pooling runs and judging the spread.
	fmt.Printf("%-14s rounds: C usec/xfer %s | Go usec/xfer %s\n", "", floats(cu), floats(gu))
	fmt.Printf("%-14s rounds: C cpu %s / %s | Go cpu %s / %s\n", "", floats(cpu["c"][0]), floats(cpu["c"][1]), floats(cpu["go"][0]), floats(cpu["go"][1]))
	b.ReportMetric(benchstat.Median(ratio), name+"-go/c")
	b.ReportMetric(med("c", 0), name+"-c-cpu-us/xfer")
	b.ReportMetric(med("go", 0), name+"-go-cpu-us/xfer")
}

func floats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(s, " ")
}
