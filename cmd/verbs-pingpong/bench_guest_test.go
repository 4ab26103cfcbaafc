package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
// iteration, per syscall, counted by guest a's ftrace (no ptrace, so the
// runtime sees syscalls as long as they are untraced) over a run of
// -pingpong.iters iterations less one of a tenth of that, which cancels
// the setup's.
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
						u, _ := r.run(goImpl, fmt.Sprintf("-d rxe0 -n %d -s %d%s", iters, size, m.flags), false)
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
			fmt.Print(r.syscallStacks(fmt.Sprintf("-d rxe0 -n %d -s 64%s", iters, m.flags), "go "+m.name+"-64B", iters))
		}
	}
	if !*benchSyscalls {
		return
	}
	short := max(iters/10, 1)
	for _, m := range modes {
		for _, size := range sizes {
			for _, goImpl := range []bool{false, true} {
				flags := func(n int) string { return fmt.Sprintf("-d rxe0 -n %d -s %d%s", n, size, m.flags) }
				_, long := r.run(goImpl, flags(iters), true)
				_, base := r.run(goImpl, flags(short), true)
				fmt.Printf("syscalls/iter %s-%dB %-15s %s\n", m.name, size, impl(goImpl), perIter(long, base, iters-short))
			}
		}
	}
}

var (
	benchRounds   = flag.Int("pingpong.rounds", 4, "BenchmarkGuestPingPong: rounds (each runs every case in C and in Go)")
	benchIters    = flag.Int("pingpong.iters", 1000, "BenchmarkGuestPingPong: iterations per run")
	benchSyscalls = flag.Bool("pingpong.syscalls", true, "BenchmarkGuestPingPong: count the syscalls per iteration after the rounds")
	benchStacks   = flag.Bool("pingpong.stacks", false, "BenchmarkGuestPingPong: print where the Go client's syscalls come from (user stacks, 64 B)")
	benchGoEnv    = flag.String("pingpong.goenv", "", "BenchmarkGuestPingPong: `K=V ...` for both Go sides (e.g. GOMAXPROCS=2), for experiments")
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
// guest's -g, and returns the client's usec/iter; with count, also the
// syscalls the client made, by name, from an ftrace histogram. The
// client starts once the server listens, so that no failed attempt adds
// to the counts.
func (r *benchRig) run(goImpl bool, args string, count bool) (float64, map[string]int) {
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
	var stop func() map[string]int
	if count {
		stop = startSyscallCount(b, filepath.Base(prog))
	}
	out, err := cli.CombinedOutput()
	var calls map[string]int
	if stop != nil {
		calls = stop()
	}
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
	return u, calls
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

// startSyscallCount puts a histogram of the syscalls made by threads
// named comm on raw_syscalls:sys_enter; the function it returns reads
// the counts by syscall name and removes the histogram.
func startSyscallCount(b *testing.B, comm string) (stop func() map[string]int) {
	b.Helper()
	mountTracefs(b)
	trigFile := tracefs + "/events/raw_syscalls/sys_enter/trigger"
	trig := fmt.Sprintf(`hist:keys=id.syscall:sort=hitcount:size=2048 if comm == "%s"`, comm)
	if err := appendFile(trigFile, trig); err != nil {
		b.Fatalf("ftrace hist trigger: %v", err)
	}
	return func() map[string]int {
		hist, err := os.ReadFile(tracefs + "/events/raw_syscalls/sys_enter/hist")
		if rerr := appendFile(trigFile, "!"+trig); err == nil {
			err = rerr
		}
		if err != nil {
			b.Fatalf("ftrace hist: %v", err)
		}
		calls := map[string]int{}
		for _, m := range histRe.FindAllStringSubmatch(string(hist), -1) {
			n, _ := strconv.Atoi(m[2])
			calls[strings.TrimPrefix(m[1], "sys_")] += n
		}
		return calls
	}
}

// mountTracefs mounts tracefs unless the guest has.
func mountTracefs(b *testing.B) {
	b.Helper()
	if _, err := os.Stat(tracefs + "/events"); err != nil {
		if out, err := exec.Command("mount", "-t", "tracefs", "none", tracefs).CombinedOutput(); err != nil {
			b.Fatalf("mount tracefs: %v\n%s", err, out)
		}
	}
}

// syscallStacks runs one Go pair with args and returns where the
// client's syscalls came from, per iteration: ftrace's user stack trace
// of every syscall entry, symbolized here, as the client is this very
// binary (static, so at the same addresses). Tracing the stacks makes
// every syscall longer, so these counts are not the table's.
func (r *benchRig) syscallStacks(args, name string, iters int) string {
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
	w("tracing_on", "0")
	w("trace", "")
	w("buffer_size_kb", "16384")
	w("options/userstacktrace", "1")
	for _, e := range enters {
		e = strings.TrimPrefix(e, tracefs+"/")
		w(e+"/filter", `comm == "verbs-pingpong"`)
		w(e+"/enable", "1")
	}
	w("tracing_on", "1")
	r.run(true, args, false)
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
	// Counted from the first send doorbell (rxe), where the timed loop starts:
	// the setup's sysfs reads would swamp the rest.
	counts := map[string]int{}
	key, started := "", false
	flush := func() {
		started = started || strings.Contains(key, "(*rxeQP).ring")
		if key != "" && started {
			counts[key]++
		}
		key = ""
	}
	for _, line := range strings.Split(string(trace), "\n") {
		if m := sysEnterRe.FindStringSubmatch(line); m != nil {
			flush()
			key = m[1] + ":"
			continue
		}
		m := userPCRe.FindStringSubmatch(line)
		if m == nil || key == "" || strings.Count(key, " < ") >= 4 {
			continue
		}
		pc, _ := strconv.ParseUint(m[1], 16, 64)
		fn := "?"
		if f := runtime.FuncForPC(uintptr(pc)); f != nil {
			fn = f.Name()[strings.LastIndexByte(f.Name(), '/')+1:]
			fn = strings.TrimPrefix(fn, "runtime.")
		}
		if strings.HasSuffix(key, ":") {
			key += " " + fn
		} else {
			key += " < " + fn
		}
	}
	flush()
	type row struct {
		key string
		n   int
	}
	var rows []row
	for k, n := range counts {
		rows = append(rows, row{k, n})
	}
	slices.SortFunc(rows, func(a, b row) int { return b.n - a.n })
	var sb strings.Builder
	for _, r := range rows {
		if float64(r.n)/float64(iters) >= 0.05 {
			fmt.Fprintf(&sb, "stacks %s %.2f/iter %s\n", name, float64(r.n)/float64(iters), r.key)
		}
	}
	return sb.String()
}

var (
	sysEnterRe = regexp.MustCompile(`: sys_(\w+)\(`)
	userPCRe   = regexp.MustCompile(`^\s*=>\s+<([0-9a-f]+)>`)
)

// histRe is one row of the histogram: "{ id: sys_read [  0] } hitcount: 12".
var histRe = regexp.MustCompile(`id: (\S+)\s+\[\s*\d+\]\s*\}\s*hitcount:\s*(\d+)`)

// appendFile writes s to a tracefs file without truncating it: opening a
// trigger file with O_TRUNC removes every trigger on the event.
func appendFile(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

// perIter formats (long-base)/n per syscall, the most frequent first,
// after the total.
func perIter(long, base map[string]int, n int) string {
	type row struct {
		name string
		v    float64
	}
	var rows []row
	total := 0.0
	for name, c := range long {
		v := float64(c-base[name]) / float64(n)
		total += v
		if v >= 0.005 || v <= -0.005 {
			rows = append(rows, row{name, v})
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	s := fmt.Sprintf("total %.2f |", total)
	for _, r := range rows {
		s += fmt.Sprintf(" %s %.2f", r.name, r.v)
	}
	return s
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
