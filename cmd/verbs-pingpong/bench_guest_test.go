package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/benchstat"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// BenchmarkGuestPingPong compares ibv_rc_pingpong with verbs-pingpong in
// the vmtest guests, each against itself (server in guest b, client in
// guest a), in poll mode (the default: busy polling the CQ) and with -e
// (sleeping on the completion channel), at 64 B and 4 KiB. Each round
// runs every case once per implementation, C then Go in odd rounds and
// Go then C in even ones; the Go binary runs from the guests' tmpfs, as
// ibv_rc_pingpong does from the in-memory root. It prints, per case, the
// medians of the clients' usec/iter and the median of the per-round Go/C
// ratios with its 95% bootstrap interval; then the client's syscalls per
// iteration, per syscall, from one more run each, recorded by guest a's
// ftrace (no ptrace: the runtime sees syscalls as long as untraced)
// between the first and the last send doorbell (rxe's POST_SEND write,
// one per iteration in both programs), so the setup is left out.
//
//	CGO_ENABLED=0 go build -o bin/vmexec ./internal/vmtest/cmd/vmexec
//	CGO_ENABLED=0 go test -run '^$' -bench GuestPingPong -benchtime 1x -timeout 60m -exec "$PWD/bin/vmexec" ./cmd/verbs-pingpong/ -args -pingpong.rounds=6
//
// (Flags, not variables: vmexec passes the guest few of the host's.)
func BenchmarkGuestPingPong(b *testing.B) {
	guest.Require(b)
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	rounds, iters := *benchRounds, *benchIters
	goProg := installBench(b, ctx)
	// Without a vDSO clock every time.Since in the Go loop is a syscall.
	cs, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	fmt.Printf("guest a: clocksource %s", cs)
	r := &benchRig{b: b, ctx: ctx, goProg: goProg, port: 19000,
		ga: gidIndex(b, guest.Local(), guest.Local().Addr), gb: gidIndex(b, guest.Peer(), guest.Peer().Addr)}
	modes := []struct{ name, flags string }{{"poll", ""}, {"events", " -e"}}
	sizes := []int{64, 4096}
	type key struct {
		mode string
		size int
	}
	us := map[key][2][]float64{} // [0] C, [1] Go, one per round
	for i := 0; i < b.N; i++ {
		for round := 0; round < rounds; round++ {
			order := []bool{false, true}
			if round%2 == 1 {
				order = []bool{true, false}
			}
			for _, m := range modes {
				for _, size := range sizes {
					k := key{m.name, size}
					v := us[k]
					for _, goImpl := range order {
						u := r.run(goImpl, fmt.Sprintf("-d rxe0 -n %d -s %d%s", iters, size, m.flags))
						fmt.Fprintf(os.Stderr, "round %d %s-%dB %s: %.2f usec/iter\n", round+1, m.name, size, impl(goImpl), u)
						v[b2i(goImpl)] = append(v[b2i(goImpl)], u)
					}
					us[k] = v
				}
			}
		}
	}
	for _, m := range modes {
		for _, size := range sizes {
			v := us[key{m.name, size}]
			var ratio []float64
			for i := range v[0] {
				ratio = append(ratio, v[1][i]/v[0][i])
			}
			lo, hi := benchstat.MedianCI(ratio)
			name := fmt.Sprintf("%s-%dB", m.name, size)
			fmt.Printf("%-12s C %8.1f usec/iter | Go %8.1f usec/iter | Go/C %.2f [%.2f, %.2f] (%d rounds)\n",
				name, benchstat.Median(v[0]), benchstat.Median(v[1]), benchstat.Median(ratio), lo, hi, len(ratio))
			b.ReportMetric(benchstat.Median(ratio), name+"-go/c")
		}
	}
	if *benchStacks {
		for _, m := range modes {
			_, stacks := r.traceSyscalls(true, fmt.Sprintf("-d rxe0 -n %d -s 64%s", iters, m.flags), true)
			for _, row := range sortedRows(stacks) {
				if row.v >= 0.05 {
					fmt.Printf("stacks go %s-64B %.2f/iter %s\n", m.name, row.v, row.name)
				}
			}
		}
	}
	if !*benchSyscalls {
		return
	}
	for _, m := range modes {
		for _, size := range sizes {
			for _, goImpl := range []bool{false, true} {
				var runs []map[string]float64
				for range *benchTraces {
					calls, _ := r.traceSyscalls(goImpl, fmt.Sprintf("-d rxe0 -n %d -s %d%s", iters, size, m.flags), false)
					runs = append(runs, calls)
				}
				fmt.Printf("syscalls/iter %s-%dB %-15s %s\n", m.name, size, impl(goImpl), formatCalls(runs))
			}
		}
	}
}

var (
	benchRounds   = flag.Int("pingpong.rounds", 4, "BenchmarkGuestPingPong: rounds (each runs every case in C and in Go)")
	benchIters    = flag.Int("pingpong.iters", 1000, "BenchmarkGuestPingPong: iterations per run")
	benchSyscalls = flag.Bool("pingpong.syscalls", true, "BenchmarkGuestPingPong: count the syscalls per iteration after the rounds")
	benchTraces   = flag.Int("pingpong.traces", 2, "BenchmarkGuestPingPong: runs per case that count syscalls")
	benchStacks   = flag.Bool("pingpong.stacks", false, "BenchmarkGuestPingPong: print where the Go client's syscalls come from (user stacks, 64 B)")
	benchGoEnv    = flag.String("pingpong.goenv", "", "BenchmarkGuestPingPong: `K=V ...` for both Go sides (e.g. GOMAXPROCS=2, or "+envYield+"=1h for no yield), for experiments")
)

// benchRig is what every run of the benchmark needs.
type benchRig struct {
	b      *testing.B
	ctx    context.Context
	goProg string // the Go binary in tmpfs, the same path on both guests
	ga, gb int    // the guests' RoCE v2 GID indexes
	port   int    // the last TCP port used: every run takes a new one
}

// run runs one server in guest b and one client here, with args and the
// guest's -g, and returns the client's usec/iter. The client starts once
// the server listens, so that no failed attempt adds to a trace.
func (r *benchRig) run(goImpl bool, args string) float64 {
	b := r.b
	b.Helper()
	r.port++
	peer := guest.Peer()
	prog, env := "ibv_rc_pingpong", []string(nil)
	if goImpl {
		prog, env = r.goProg, append([]string{envRunMain + "=1"}, strings.Fields(*benchGoEnv)...)
	}
	srvCmd := fmt.Sprintf("%s %s %s -g %d -p %d", strings.Join(env, " "), prog, args, r.gb, r.port)
	srv, err := peer.Start(r.ctx, strings.TrimSpace(srvCmd))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop(context.Background())
	// /proc/net/tcp{,6} rows of a listening socket: local port in hex, no
	// remote port, state 0A.
	wait := fmt.Sprintf(`i=0; until grep -qE ':%04X [0-9A-F]+:0000 0A' /proc/net/tcp /proc/net/tcp6; do i=$((i+1)); [ $i -lt 600 ] || exit 1; sleep 0.1; done`, r.port)
	if res, err := peer.Run(r.ctx, wait); err != nil {
		b.Fatalf("server %q never listened: %v %+v\n%s%s", srvCmd, err, res, srv.Stdout(), srv.Stderr())
	}
	cli := exec.CommandContext(r.ctx, prog, append(strings.Fields(args), "-g", strconv.Itoa(r.ga), "-p", strconv.Itoa(r.port), peer.Addr)...)
	cli.Env = append(os.Environ(), env...)
	out, err := cli.CombinedOutput()
	if err != nil {
		b.Fatalf("client %q: %v\n%s\nserver %q:\n%s%s", cli.String(), err, out, srvCmd, srv.Stdout(), srv.Stderr())
	}
	if _, err := srv.Wait(r.ctx); err != nil {
		b.Fatalf("server %q: %v\n%s%s", srvCmd, err, srv.Stdout(), srv.Stderr())
	}
	m := usecRe.FindStringSubmatch(string(out))
	if m == nil {
		b.Fatalf("client %q: no summary:\n%s", cli.String(), out)
	}
	u, _ := strconv.ParseFloat(m[3], 64)
	return u
}

// installBench copies this test binary into both guests' tmpfs and
// returns its path there. From the 9p share, every run would fault its
// code in through 9p again, inside the timed loop.
func installBench(b *testing.B, ctx context.Context) string {
	b.Helper()
	const dst = "/tmp/bench-bin/verbs-pingpong" // 14 bytes: the whole name is the thread's comm
	cp := fmt.Sprintf("mkdir -p %s && cp %s %s", filepath.Dir(dst), self(b), dst)
	if out, err := exec.CommandContext(ctx, "sh", "-c", cp).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", cp, err, out)
	}
	if res, err := guest.Peer().Run(ctx, cp); err != nil {
		b.Fatalf("guest b: %s: %v %+v", cp, err, res)
	}
	return dst
}

const tracefs = "/sys/kernel/tracing"

// traceSyscalls runs one pair with ftrace recording every syscall entry
// of the client's threads (the named sys_enter_* events), with their user
// stacks if stacks, and returns the syscalls per iteration by name and,
// with stacks, by name and callers. It counts from the first send
// doorbell to the last: the write of the length most writes have.
// Stacks are symbolized here, the Go client being this very binary
// (static, so at the same addresses); recording them makes every syscall
// longer, so their counts are not the table's.
func (r *benchRig) traceSyscalls(goImpl bool, args string, stacks bool) (calls, byStack map[string]float64) {
	b := r.b
	b.Helper()
	mountTracefs(b)
	w := func(file, s string) {
		if err := os.WriteFile(tracefs+"/"+file, []byte(s), 0); err != nil {
			b.Fatalf("ftrace %s: %v", file, err)
		}
	}
	enters, err := filepath.Glob(tracefs + "/events/syscalls/sys_enter_*")
	if err != nil || len(enters) == 0 {
		b.Fatalf("ftrace: no syscall events (%v)", err)
	}
	comm := "ibv_rc_pingpong"
	if goImpl {
		comm = filepath.Base(r.goProg)
	}
	w("tracing_on", "0")
	w("trace", "")
	w("buffer_size_kb", "32768")
	w("options/userstacktrace", map[bool]string{false: "0", true: "1"}[stacks])
	for _, e := range enters {
		e = strings.TrimPrefix(e, tracefs+"/")
		w(e+"/filter", fmt.Sprintf("comm == %q", comm))
		w(e+"/enable", "1")
	}
	w("tracing_on", "1")
	r.run(goImpl, args)
	w("tracing_on", "0")
	for _, e := range enters {
		e = strings.TrimPrefix(e, tracefs+"/")
		w(e+"/enable", "0")
		w(e+"/filter", "0")
	}
	w("options/userstacktrace", "0")
	trace, err := os.ReadFile(tracefs + "/trace")
	if err != nil {
		b.Fatal(err)
	}
	w("trace", "")
	if m := lostRe.FindStringSubmatch(string(trace)); m == nil || m[1] != m[2] {
		b.Fatalf("ftrace lost events: %q", m)
	}
	calls, byStack, doorbells := countTrace(string(trace), stacks, symbolize)
	if doorbells < 2 {
		b.Fatalf("ftrace: %d send doorbells in\n%s", doorbells, trace)
	}
	return calls, byStack
}

// symbolize names the function at pc in this binary, without its
// package path and runtime's prefix.
func symbolize(pc uint64) string {
	f := runtime.FuncForPC(uintptr(pc))
	if f == nil {
		return "?"
	}
	fn := f.Name()[strings.LastIndexByte(f.Name(), '/')+1:]
	return strings.TrimPrefix(fn, "runtime.")
}

// countTrace reads an ftrace trace of sys_enter_* events, each maybe with
// its user stack, and returns the syscalls per iteration between the
// first and the last send doorbell (the write of the length most writes
// have), by name and, with stacks, by name and first callers; and how
// many doorbells it found.
func countTrace(trace string, stacks bool, sym func(uint64) string) (calls, byStack map[string]float64, doorbells int) {
	type event struct{ name, count, stack string }
	var evs []event
	for _, line := range strings.Split(trace, "\n") {
		if m := sysEnterRe.FindStringSubmatch(line); m != nil {
			evs = append(evs, event{name: m[1], count: m[3]})
			continue
		}
		m := userPCRe.FindStringSubmatch(line)
		if m == nil || len(evs) == 0 || strings.Count(evs[len(evs)-1].stack, " < ") >= 4 {
			continue
		}
		pc, _ := strconv.ParseUint(m[1], 16, 64)
		e := &evs[len(evs)-1]
		if e.stack == "" {
			e.stack = sym(pc)
		} else {
			e.stack += " < " + sym(pc)
		}
	}
	writes := map[string]int{}
	for _, e := range evs {
		if e.name == "write" {
			writes[e.count]++
		}
	}
	doorbell := ""
	for c, n := range writes {
		if n > doorbells || n == doorbells && c < doorbell {
			doorbell, doorbells = c, n
		}
	}
	calls, byStack = map[string]float64{}, map[string]float64{}
	if doorbells < 2 {
		return calls, byStack, doorbells
	}
	first, last := -1, -1
	for i, e := range evs {
		if e.name == "write" && e.count == doorbell {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	per := 1 / float64(doorbells-1)
	for _, e := range evs[first:last] {
		calls[e.name] += per
		if stacks {
			byStack[e.name+": "+e.stack] += per
		}
	}
	return calls, byStack, doorbells
}

var (
	// "sys_write(fd: 3, buf: 7ffd…, count: 20)": count is the third field.
	sysEnterRe = regexp.MustCompile(`: sys_(\w+)\((?:(\w+): \w+, \w+: \w+, count: (\w+))?`)
	userPCRe   = regexp.MustCompile(`^\s*=>\s+<([0-9a-f]+)>`)
	lostRe     = regexp.MustCompile(`entries-in-buffer/entries-written: (\d+)/(\d+)`)
)

// mountTracefs mounts tracefs unless the guest has.
func mountTracefs(b *testing.B) {
	b.Helper()
	if _, err := os.Stat(tracefs + "/events"); err != nil {
		if out, err := exec.Command("mount", "-t", "tracefs", "none", tracefs).CombinedOutput(); err != nil {
			b.Fatalf("mount tracefs: %v\n%s", err, out)
		}
	}
}

type callRow struct {
	name string
	v    float64
}

// sortedRows is m by value, the largest first.
func sortedRows(m map[string]float64) []callRow {
	var rows []callRow
	for name, v := range m {
		rows = append(rows, callRow{name, v})
	}
	slices.SortFunc(rows, func(a, b callRow) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return rows
}

// formatCalls is the total and every syscall of at least 0.005 per
// iteration in a run, each as the range over the runs.
func formatCalls(runs []map[string]float64) string {
	if len(runs) == 0 {
		return "no runs"
	}
	names := map[string]float64{} // the largest of each, for the order
	for _, calls := range runs {
		for name, v := range calls {
			names[name] = max(names[name], v)
		}
	}
	span := func(get func(map[string]float64) float64) string {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, calls := range runs {
			lo, hi = min(lo, get(calls)), max(hi, get(calls))
		}
		if fmt.Sprintf("%.2f", lo) == fmt.Sprintf("%.2f", hi) {
			return fmt.Sprintf("%.2f", lo)
		}
		return fmt.Sprintf("%.2f–%.2f", lo, hi)
	}
	s := "total " + span(func(c map[string]float64) float64 {
		t := 0.0
		for _, v := range c {
			t += v
		}
		return t
	}) + " |"
	for _, r := range sortedRows(names) {
		if r.v >= 0.005 {
			s += " " + r.name + " " + span(func(c map[string]float64) float64 { return c[r.name] })
		}
	}
	return s
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
