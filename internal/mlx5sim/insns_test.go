//go:build linux && amd64

package mlx5sim_test

import (
	"bufio"
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

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
)

// BenchmarkInstructions counts, under gdb (c/countinsns.py), the
// instructions of one steady-state iteration of each case of
// BenchmarkVsLibmlx5 on both sides: c/bench.c's loop, from its
// ibv_poll_cq line round to it again, and the Go loop (goRig.iterations),
// from its PostSend line round to it again. It splits them into the
// harness (bench.c's main; the mlx5sim_test functions) and the provider
// (everything the verbs run: libibverbs, libmlx5 and the libc spinlock
// and memcpy it calls; uverbs, internal/barrier and the runtime's memmove),
// and counts locked instructions and fences. Unlike times, the counts
// do not depend on the machine's load (docs/benchmarks.md, mlx5
// section). x86-64 only; it needs gdb.
//
//	go test -run '^$' -bench Instructions -benchtime 1x ./internal/mlx5sim/
func BenchmarkInstructions(b *testing.B) {
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		b.Skipf("gdb not found (Debian package gdb): %v", err)
	}
	shim, _ := cSide(b)
	bench, err := mlx5sim.BuildBench(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("c", "countinsns.py"))
	if err != nil {
		b.Fatal(err)
	}
	cBreak := "bench.c:" + strconv.Itoa(lineOf(b, filepath.Join("c", "bench.c"), "ibv_poll_cq(r.cq"))
	goBreak := "bench_test.go:" + strconv.Itoa(lineOf(b, "bench_test.go", "l.q.PostSend(l.wrs)"))
	var table strings.Builder
	fmt.Fprintf(&table, "| case | libmlx5: all (harness + provider) | ours: all (harness + provider) | locked instructions C / Go | lfence, sfence |\n|---|---|---|---|---|\n")
	for _, c := range []string{"send_inline64", "write_sge1", "batch16"} {
		cc := countC(b, gdb, script, bench, shim, cBreak, c)
		gc := countGo(b, gdb, script, goBreak, c)
		fmt.Fprintf(&table, "| %s | %d (%d + %d) | %d (%d + %d) | %d / %d | %d, %d / %d, %d |\n", c,
			cc.total, cc.harness, cc.total-cc.harness, gc.total, gc.harness, gc.total-gc.harness,
			cc.kinds["locked"], gc.kinds["locked"], cc.kinds["lfence"], cc.kinds["sfence"], gc.kinds["lfence"], gc.kinds["sfence"])
		b.ReportMetric(float64(cc.total), c+"-c-insns")
		b.ReportMetric(float64(gc.total), c+"-go-insns")
		b.ReportMetric(float64(cc.total-cc.harness), c+"-c-provider-insns")
		b.ReportMetric(float64(gc.total-gc.harness), c+"-go-provider-insns")
		b.Logf("%s, C per function: %v", c, cc.funcs)
		b.Logf("%s, Go per function: %v", c, gc.funcs)
	}
	b.Logf("instructions per loop iteration (batch16: 16 WRs):\n%s", table.String())
}

var (
	goSideOnce sync.Once
	goSideBin  string
	goSideErr  error
)

type insnCount struct {
	total, harness int
	funcs          map[string]int
	kinds          map[string]int
}

// lineOf is the 1-based number of the first line of file containing s.
func lineOf(b *testing.B, file, s string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	b.Fatalf("%s: no line with %q", file, s)
	return 0
}

func parseCount(b *testing.B, out string, harness func(fn string) bool) insnCount {
	c := insnCount{funcs: map[string]int{}, kinds: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			continue
		}
		switch {
		case f[0] == "insns" && len(f) == 2:
			c.total = n
		case f[0] == "func" && len(f) == 3:
			c.funcs[f[1]] = n
			if harness(f[1]) {
				c.harness += n
			}
		case f[0] == "kind" && len(f) == 3:
			c.kinds[f[1]] = n
		}
	}
	if c.total == 0 {
		b.Fatalf("no count in gdb's output:\n%s", out)
	}
	return c
}

// countC runs c/bench.c under gdb against a fresh simulated device.
func countC(b *testing.B, gdb, script, bench, shim, brk, c string) insnCount {
	p := mlx5sim.DefaultProfile()
	sys := b.TempDir()
	if err := mlx5sim.WriteSysfs(sys, p); err != nil {
		b.Fatal(err)
	}
	cmd := mlx5sim.ScenarioCmd(bench, shim, sys, c)
	var env []string
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "LD_PRELOAD=") { // the program's, not gdb's
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "COUNT_PRELOAD="+shim, "COUNT_BREAK="+brk)
	cmd.Path = gdb
	cmd.Args = []string{"gdb", "-q", "-batch", "-x", script, "--args", bench, c, "100000"}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := mlx5sim.RunChild(ctx, cmd, mlx5sim.New(p)); err != nil {
		b.Fatalf("gdb on the C bench: %v\n%s", err, out.String())
	}
	return parseCount(b, out.String(), func(fn string) bool { return fn == "main" })
}

// countGo runs BenchmarkGoSide under gdb, in this package's test
// binary built with its symbols (go test leaves them out of the binary
// it runs).
func countGo(b *testing.B, gdb, script, brk, c string) insnCount {
	goSideOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			goSideErr = err
			return
		}
		goSideBin = filepath.Join(b.TempDir(), "mlx5sim.test")
		if out, err := exec.Command(gobin, "test", "-c", "-o", goSideBin, ".").CombinedOutput(); err != nil {
			goSideErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if goSideErr != nil {
		b.Fatalf("building the test binary: %v", goSideErr)
	}
	cmd := exec.Command(gdb, "-q", "-batch", "-x", script, "--args", goSideBin,
		// No regexp metacharacters: gdb --args quotes them for a shell,
		// and countinsns.py starts the program without one.
		"-test.run", "NoTest", "-test.bench", "BenchmarkGoSide/"+c, "-test.benchtime", "100000x")
	// Stepping is slow: no preemption signals while it runs (an iteration
	// the scheduler ran in is counted again anyway, countinsns.py).
	cmd.Env = append(os.Environ(), "COUNT_BREAK="+brk, "GODEBUG=asyncpreemptoff=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("gdb on BenchmarkGoSide: %v\n%s", err, out)
	}
	return parseCount(b, string(out), func(fn string) bool { return strings.Contains(fn, "mlx5sim_test.") })
}
