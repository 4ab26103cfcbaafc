package main

import (
	"context"
	"fmt"
	"os"
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
// as rstream. It reports each side's median client usec/xfer and Gb/sec
// and the median of the per-round Go/C ratios with a 95% bootstrap
// interval, for rsockets and plain TCP (-T s), blocking calls (-T b).
//
//	BENCH_ROUNDS=6 [BENCH_TRANSPORTS=rdma] VMTEST=1 go test -run '^$' -bench 'RsocketStreamVM' -benchtime 1x -timeout 60m ./cmd/rsocket-stream/
func BenchmarkRsocketStreamVM(b *testing.B) {
	p := guests.Pair(b)
	rounds := 4
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	for _, m := range p.Machines() {
		if r, err := m.Run(ctx, "mkdir -p /tmp/bench-bin && cp "+goStream+" /tmp/bench-bin/"); r == nil || !r.Success() {
			b.Fatalf("copy to %s: %v %+v", m.Name, err, r)
		}
	}
	const local = "/tmp/bench-bin/rsocket-stream"
	// BENCH_TRANSPORTS narrows the runs, e.g. to "rdma".
	transports := []string{"rdma", "tcp"}
	if s := os.Getenv("BENCH_TRANSPORTS"); s != "" {
		transports = strings.Fields(s)
	}
	cases := []struct{ name, flags string }{
		{"lat-64", "-S 64 -C 1 -I 500"},
		{"lat-4k", "-S 4096 -C 1 -I 300"},
		{"bw-64k", "-S 65536 -C 100 -I 1"},
		{"bw-1m", "-S 1048576 -C 10 -I 1"},
	}
	port := 7900
	for i := 0; i < b.N; i++ {
		for _, transport := range transports {
			for _, tc := range cases {
				flags := tc.flags + " -T b"
				if transport == "tcp" {
					flags += " -T s"
				}
				res := map[string][][2]float64{} // "c", "go" -> rounds of (usec/xfer, Gb/sec)
				for r := 0; r < rounds; r++ {
					order := []string{"c", "go"}
					if r%2 == 1 {
						order = []string{"go", "c"}
					}
					for _, who := range order {
						port++
						tool := map[string]string{"c": "rstream", "go": local}[who]
						out := benchRun(b, ctx, p.B, p.A, tool, fmt.Sprintf("%s -p %d", flags, port), transport == "tcp")
						res[who] = append(res[who], parseRow(b, out))
					}
				}
				report(b, transport+"-"+tc.name, res)
			}
		}
	}
}

// benchRun runs tool as server on srv and client on cli (after the
// settle pause) and returns the client's output.
func benchRun(b *testing.B, ctx context.Context, srv, cli *vmtest.Machine, tool, args string, tcp bool) string {
	b.Helper()
	cmd := tool + " " + args
	var sp *agent.Process
	if tcp { // no cm_id to watch: the client retries until the port answers
		var err error
		if sp, err = srv.Start(ctx, cmd); err != nil {
			b.Fatal(err)
		}
	} else {
		marker := ""
		if tool != "rstream" {
			marker = "name"
		}
		port, _ := strconv.Atoi(args[strings.LastIndex(args, " ")+1:])
		sp = twintest.Serve(b, ctx, srv, cmd, marker, port)
	}
	defer sp.Stop(context.Background())
	for try := 0; ; try++ {
		r, err := cli.Run(ctx, fmt.Sprintf("sleep 3; %s -s %s %s", tool, srv.Addr, args))
		if r != nil && r.Success() {
			twintest.Finish(b, ctx, sp, tool+" server")
			return r.Stdout
		}
		if !tcp || try == 5 {
			b.Fatalf("%s client %s: %v %+v", tool, args, err, r)
		}
	}
}

// parseRow reads usec/xfer and Gb/sec from the row of a custom test.
func parseRow(b *testing.B, out string) [2]float64 {
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
	return [2]float64{usec, gbps}
}

// report prints one line per case: medians and the Go/C ratio of
// usec/xfer (latency: below 1 is better for Go) with its interval.
func report(b *testing.B, name string, res map[string][][2]float64) {
	var cu, gu, cg, gg, ratio []float64
	for i := range res["c"] {
		cu, gu = append(cu, res["c"][i][0]), append(gu, res["go"][i][0])
		cg, gg = append(cg, res["c"][i][1]), append(gg, res["go"][i][1])
		ratio = append(ratio, res["go"][i][0]/res["c"][i][0])
	}
	lo, hi := benchstat.MedianCI(ratio)
	line := fmt.Sprintf("%-12s C %9.2f usec/xfer %6.3f Gb/s | Go %9.2f usec/xfer %6.3f Gb/s | Go/C usec/xfer %.2f [%.2f, %.2f] (%d rounds)",
		name, benchstat.Median(cu), benchstat.Median(cg), benchstat.Median(gu), benchstat.Median(gg), benchstat.Median(ratio), lo, hi, len(ratio))
	fmt.Println(line)
	b.ReportMetric(benchstat.Median(ratio), name+"-go/c")
}
