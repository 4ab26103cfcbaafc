package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/benchstat"
	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// This benchmark lives in the echo package, not in a package of its own,
// because make vmtest runs every test binary under ./examples/ in the
// guests: a new package would cost a guest boot there for nothing.

// exCase is one benchmark case: an example (Go binary name; the C twin is
// name-c) with its flags, timed over n operations, its syscalls counted
// as the difference between n and n0 operations.
type exCase struct {
	name, prog, flags string
	port              int
	n0, n             int
}

var exCases = []exCase{
	{"echo-64", "echo", "-size 64", 7471, 200, 1000},
	{"echo-4k", "echo", "-size 4096", 7471, 200, 1000},
	{"write-1m", "write", "", 7472, 10, 50},
}

// BenchmarkExamplesVM compares examples/echo and examples/write with
// their C twins (examples/c/echo.c, write.c) in the vmtest guests, both
// ends Go against both ends C (server in guest b, client in guest a, the
// kernel CM), in the order of variants, reversed every other round (the
// Go examples twice: -wait thread and -wait netpoll), every binary run from
// the guests' tmpfs, each run after a settle pause (the kernel CM's
// TimeWait, see cmd/rdmacm-ping/bench_vm_test.go). The time is the
// client's -t line: the mean time per operation (echo: one round trip of
// -size bytes; write: one 1 MiB RDMA WRITE with immediate, to its
// completion). It reports each side's median and the median of the
// per-round Go/C ratios with a 95% bootstrap interval, then the syscalls
// and the CPU time per operation of each process: the syscalls by name
// from the guest kernel's ftrace histogram of raw_syscalls:sys_enter for
// the program's threads (as bench/syscalls/ftrace_count.sh does; no
// ptrace), the CPU time (every thread's, user and kernel) from a cgroup
// v2 holding only the process, each over one run of n and one of n0
// operations, the difference divided by n-n0 so that setup and teardown
// drop out.
//
//	BENCH_ROUNDS=4 VMTEST=1 go test -run '^$' -bench ExamplesVM -benchtime 1x -timeout 60m ./examples/echo/
//
// BENCH_CASES (e.g. "echo-64 write-1m") narrows the cases; BENCH_GOENV
// (e.g. "GOMAXPROCS=2") sets the Go programs' environment.
func BenchmarkExamplesVM(b *testing.B) {
	if guest.InGuest() {
		b.Skip("boots its own guests: run it on the host")
	}
	if os.Getenv("VMTEST") != "1" {
		b.Skip("boots QEMU guests: run with VMTEST=1")
	}
	rounds := 4
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	cases := exCases
	if s := os.Getenv("BENCH_CASES"); s != "" {
		cases = slices.DeleteFunc(slices.Clone(exCases), func(c exCase) bool { return !slices.Contains(strings.Fields(s), c.name) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	p := exPair(b, ctx)
	for i := 0; i < b.N; i++ {
		for _, c := range cases {
			us := map[string][]float64{} // variant -> rounds of us/op
			for r := 0; r < rounds; r++ {
				order := slices.Clone(variants)
				if r%2 == 1 {
					slices.Reverse(order)
				}
				for _, who := range order {
					out, _ := exRun(b, ctx, p, c, who, c.n, false)
					us[who] = append(us[who], parseTime(b, out, c.n))
				}
			}
			for _, who := range variants[1:] {
				var ratio []float64
				for r := range us["c"] {
					ratio = append(ratio, us[who][r]/us["c"][r])
				}
				lo, hi := benchstat.MedianCI(ratio)
				fmt.Printf("%-9s C %10.2f us/op | %-10s %10.2f us/op | /C %.2f [%.2f, %.2f] (%d rounds)\n",
					c.name, benchstat.Median(us["c"]), who, benchstat.Median(us[who]), benchstat.Median(ratio), lo, hi, len(ratio))
				b.ReportMetric(benchstat.Median(ratio), c.name+"-"+who+"/c")
			}
			// Syscalls and CPU µs per operation: client and server, of each
			// variant.
			per := map[string]map[string]float64{} // "c client" ... -> syscall -> per op
			cpu := map[string]float64{}            // "c client" ... -> CPU µs per op
			for _, who := range variants {
				_, small := exRun(b, ctx, p, c, who, c.n0, true)
				_, large := exRun(b, ctx, p, c, who, c.n, true)
				for side := range large {
					m := map[string]float64{}
					for sc := range maps.Keys(large[side]) {
						m[sc] = 0
					}
					for sc := range maps.Keys(small[side]) {
						m[sc] = 0
					}
					for sc := range m {
						m[sc] = float64(large[side][sc]-small[side][sc]) / float64(c.n-c.n0)
					}
					cpu[who+" "+side] = m["cpu_usec"]
					delete(m, "cpu_usec")
					per[who+" "+side] = m
				}
			}
			printSyscalls(c.name, per)
			fmt.Printf("  %-20s", "CPU us/op")
			for _, side := range []string{"client", "server"} {
				for _, who := range variants {
					fmt.Printf(" %17.1f", cpu[who+" "+side])
					b.ReportMetric(cpu[who+" "+side], c.name+"-"+who+"-"+side+"-cpu-us/op")
				}
			}
			fmt.Println()
			for _, side := range []string{"client", "server"} {
				for _, who := range variants {
					b.ReportMetric(total(per[who+" "+side]), c.name+"-"+who+"-"+side+"-syscalls/op")
				}
			}
		}
	}
}

// exPair boots the pair, builds both examples and both C twins into the
// share and copies them into each guest's /tmp/bench-bin (tmpfs).
func exPair(b *testing.B, ctx context.Context) *vmtest.Pair {
	b.Helper()
	opts := vmtest.PairOptions{Log: os.Stderr, Lifetime: 58 * time.Minute}
	if d := os.Getenv("VMTEST_SHARE"); d != "" {
		opts.Share, opts.Keep = d, true
	}
	p, err := vmtest.BootPair(ctx, opts)
	if err != nil {
		b.Fatalf("guests did not boot: %v", err)
	}
	b.Cleanup(func() { p.Close() })
	const mod = "github.com/go-rdma/rdmacm/examples/"
	for _, prog := range []string{"echo", "write"} {
		if err := p.InstallGo(ctx, prog, mod+prog); err != nil {
			b.Fatal(err)
		}
		if err := p.InstallC(ctx, prog+"-c", "../c/"+prog+".c"); err != nil {
			b.Fatal(err)
		}
	}
	for _, m := range p.Machines() {
		cp := "mkdir -p /tmp/bench-bin && cd " + vmtest.GuestShare + "/bin/$(uname -m) && cp echo echo-c write write-c /tmp/bench-bin/ && " + vmtest.MountCgroup
		if r, err := m.Run(ctx, cp); r == nil || !r.Success() {
			b.Fatalf("copy to guest %s: %v %+v", m.Name, err, r)
		}
	}
	return p
}

// settle comes before every run's server: no run overlaps the previous
// connection's TimeWait (2,048 ms in these guests).
const settle = 3 * time.Second

// variants are what each case runs, C first: the C twin, the Go example
// waiting in the kernel (ThreadWait, as C waits), and the Go example
// waiting in the netpoller (the library's default).
var variants = []string{"c", "go-thread", "go-netpoll"}

// exRun runs c's program (who: a variant) for n operations, server in
// guest b and client in guest a, and returns the client's output and,
// with count, each side's syscalls by name.
func exRun(b *testing.B, ctx context.Context, p *vmtest.Pair, c exCase, who string, n int, count bool) (string, map[string]map[string]int) {
	b.Helper()
	bin := "/tmp/bench-bin/" + c.prog
	args := fmt.Sprintf("-n %d %s", n, c.flags)
	comm := c.prog
	switch who {
	case "c":
		bin += "-c"
		comm += "-c"
	default:
		args += " -wait " + strings.TrimPrefix(who, "go-")
	}
	if who != "c" && os.Getenv("BENCH_GOENV") != "" {
		bin = "env " + os.Getenv("BENCH_GOENV") + " " + bin
	}
	if count {
		for _, m := range []*vmtest.Machine{p.A, p.B} {
			if r, err := m.Run(ctx, traceScript(comm, true)); r == nil || !r.Success() {
				b.Fatalf("ftrace in guest %s: %v %+v", m.Name, err, r)
			}
		}
	}
	time.Sleep(settle)
	srv, cli := fmt.Sprintf("%s -s -a %s %s", bin, p.B.Addr, args), fmt.Sprintf("%s -a %s -t %s", bin, p.B.Addr, args)
	if count {
		srv, cli = vmtest.InCgroup("srv", srv), vmtest.InCgroup("cli", cli)
	}
	sp, err := p.B.Start(ctx, srv)
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Stop(context.Background())
	listenOn(b, ctx, p.B, c.port)
	cr, err := p.A.Run(ctx, cli)
	if cr == nil || !cr.Success() {
		b.Fatalf("%s client %s: %v %+v\nserver: %s%s", bin, args, err, cr, sp.Stdout(), sp.Stderr())
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sr, err := sp.Wait(wctx)
	if sr == nil || !sr.Success() || !strings.Contains(sr.Stdout, "server: ") {
		b.Fatalf("%s server %s: %v %+v", bin, args, err, sr)
	}
	if !count {
		return cr.Stdout, nil
	}
	calls := map[string]map[string]int{}
	for side, m := range map[string]*vmtest.Machine{"client": p.A, "server": p.B} {
		r, err := m.Run(ctx, traceScript(comm, false))
		if r == nil || !r.Success() {
			b.Fatalf("ftrace in guest %s: %v %+v", m.Name, err, r)
		}
		calls[side] = parseHist(r.Stdout)
	}
	calls["client"]["cpu_usec"], calls["server"]["cpu_usec"] = cpuUsec(b, cr.Stdout), cpuUsec(b, sr.Stdout)
	return cr.Stdout, calls
}

// cpuUsec reads vmtest.InCgroup's line.
func cpuUsec(b *testing.B, out string) int {
	b.Helper()
	v, ok := vmtest.CPUUsec(out)
	if !ok {
		b.Fatalf("no CPU time in %q", out)
	}
	return int(v)
}

// traceScript starts (on) or reads and ends the histogram of the syscalls
// that threads named comm enter.
func traceScript(comm string, on bool) string {
	const ev = "$T/events/raw_syscalls/sys_enter"
	trig := fmt.Sprintf(`hist:keys=id.syscall:sort=hitcount if comm == "%s"`, comm)
	if on {
		return "T=/sys/kernel/tracing; [ -d $T/events ] || mount -t tracefs none $T; echo '" + trig + "' > " + ev + "/trigger"
	}
	return "T=/sys/kernel/tracing; cat " + ev + "/hist && echo '!" + trig + "' > " + ev + "/trigger"
}

var histRow = regexp.MustCompile(`(?m)^\{ id: (?:sys_)?(\S+)\s+\[\s*\d+\] \} hitcount:\s+(\d+)$`)

// parseHist reads a histogram of id.syscall keys.
func parseHist(s string) map[string]int {
	m := map[string]int{}
	for _, r := range histRow.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(r[2])
		m[r[1]] += n
	}
	return m
}

var timeLine = regexp.MustCompile(`(?m)^time: (\d+) ops, ([0-9.]+) us/op$`)

// parseTime reads the client's -t line.
func parseTime(b *testing.B, out string, n int) float64 {
	b.Helper()
	m := timeLine.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(n) {
		b.Fatalf("no time line for %d ops in %q", n, out)
	}
	v, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// listenOn waits until the kernel lists a listener on port in m (the C
// servers print nothing before their first client).
func listenOn(b *testing.B, ctx context.Context, m *vmtest.Machine, port int) {
	b.Helper()
	want := regexp.MustCompile(fmt.Sprintf(`state LISTEN .*src-addr \S+:%d `, port))
	for {
		if r, err := m.Run(ctx, "rdma resource show cm_id"); err == nil && want.MatchString(r.Stdout) {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("no listener on port %d in guest %s", port, m.Name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// printSyscalls prints one row per syscall that any side makes at least
// 0.02 times per operation (smaller differences are noise between the two
// runs), Go's most frequent first, then the totals.
func printSyscalls(name string, per map[string]map[string]float64) {
	var cols []string
	for _, side := range []string{"client", "server"} {
		for _, who := range variants {
			cols = append(cols, who+" "+side)
		}
	}
	names := map[string]bool{}
	for _, m := range per {
		for sc, v := range m {
			if v >= 0.02 {
				names[sc] = true
			}
		}
	}
	rows := slices.Collect(maps.Keys(names))
	slices.SortFunc(rows, func(x, y string) int {
		vx, vy := per["go-thread client"][x]+per["go-thread server"][x], per["go-thread client"][y]+per["go-thread server"][y]
		if vx != vy {
			if vx > vy {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	fmt.Printf("%-9s syscalls/op", name)
	for _, c := range cols {
		fmt.Printf(" %17s", c)
	}
	fmt.Println()
	for _, sc := range append(rows, "total") {
		fmt.Printf("  %-20s", sc)
		for _, c := range cols {
			v := per[c][sc]
			if sc == "total" {
				v = total(per[c])
			}
			fmt.Printf(" %17.2f", v)
		}
		fmt.Println()
	}
}
