//go:build linux

package mlx5sim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
	"github.com/go-rdma/rdmacm/internal/mlx5sim/scenario"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Fences as executed instructions (README, "Fences"): both sides run
// under qemu-user with c/fenceplugin.c, which reports every barrier
// instruction the scenario's thread executes, before it executes, to the
// device in this process. The C side's barriers count when they are
// libmlx5's, the Go side's when they are in this module's code.

// modPrefix is the symbol prefix of this module's functions.
const modPrefix = "github.com/go-rdma/rdmacm/"

var (
	fenceOnce            sync.Once
	fenceQemu, fencePlug string
	fenceGoBin           string
	fenceErr             error
)

// fenceTools builds the plugin and finds qemu-user for this GOARCH, and
// the Go child: this test binary or, when it has the race detector, a
// copy built without it, so that the child runs the production barrier
// paths (under -race DoorbellWCUnlock's release is an atomic store,
// doorbell_race.go) and does not pay for the detector under TCG. A
// missing tool skips outside CI and fails under CI=true.
func fenceTools(t testing.TB) (qemu, plugin, gobin string) {
	t.Helper()
	fenceOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mlx5sim-fence-")
		if err != nil {
			fenceErr = err
			return
		}
		if fenceQemu, fenceErr = mlx5sim.QemuUser(runtime.GOARCH); fenceErr != nil {
			return
		}
		if fencePlug, fenceErr = mlx5sim.BuildFencePlugin(dir); fenceErr != nil {
			return
		}
		fenceGoBin = os.Args[0]
		if raceEnabled {
			fenceGoBin = filepath.Join(dir, "fenced.test")
			fenceErr = buildTestBin(fenceGoBin, nil)
		}
	})
	if errors.Is(fenceErr, mlx5sim.ErrMissingDependency) && os.Getenv("CI") != "true" {
		t.Skipf("skipping (CI=true makes this a failure; make deps installs it): %v", fenceErr)
	}
	if fenceErr != nil {
		t.Fatal(fenceErr)
	}
	return fenceQemu, fencePlug, fenceGoBin
}

// buildTestBin builds this package's test binary at out, with extra
// environment for the go command (GOARCH=arm64) and go test flags.
func buildTestBin(out string, env []string, flags ...string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building a test binary needs the go command: %v", err)
	}
	args := append(append([]string{"test", "-c", "-o", out}, flags...), ".")
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// fenced is one side's trace and its fence log.
type fenced struct {
	trace, log []string
}

// runCFenced runs one scenario through libmlx5 under qemu-user with the
// plugin.
func runCFenced(t *testing.T, file, prof string) fenced {
	t.Helper()
	shim, scn := cSide(t)
	qemu, _, _ := fenceTools(t)
	return runCFencedWith(t, qemu, nil, shim, scn, file, prof)
}

// runCFencedWith is runCFenced with a given emulator, its extra arguments
// (-L for a foreign guest's libraries) and C side.
func runCFencedWith(t *testing.T, qemu string, extra []string, shim, scn, file, prof string) fenced {
	t.Helper()
	_, plugin, _ := fenceTools(t)
	p, err := mlx5sim.ParseProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	sys := t.TempDir()
	if err := mlx5sim.WriteSysfs(sys, p); err != nil {
		t.Fatal(err)
	}
	d := mlx5sim.New(p)
	d.SetFenceFilter(mlx5sim.LibFenceFilter("libmlx5"))
	var stderr strings.Builder
	cmd := mlx5sim.ScenarioCmd(scn, shim, sys, file)
	cmd.Stderr = &stderr
	cmd = mlx5sim.FencedCmd(qemu, plugin, extra, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := mlx5sim.RunChild(ctx, cmd, d); err != nil {
		t.Fatalf("C side under qemu: %v\nstderr:\n%s\ntrace:\n%s", err, stderr.String(), strings.Join(d.Trace(), "\n"))
	}
	return fenced{d.Trace(), d.FenceLog()}
}

// runGoFenced runs one scenario through our provider in the test binary
// bin (TestGoScenarioFencedChild, built for goarch) under qemu-user with
// the plugin, env added to its environment.
func runGoFenced(t *testing.T, goarch, bin string, env []string, file, prof string) (fenced, error) {
	t.Helper()
	qemu, plugin, _ := fenceTools(t)
	if goarch != runtime.GOARCH {
		var err error
		if qemu, err = mlx5sim.QemuUser(goarch); err != nil {
			t.Fatal(err)
		}
	}
	p, err := mlx5sim.ParseProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	filter, err := mlx5sim.GoFenceFilter(bin, modPrefix)
	if err != nil {
		t.Fatal(err)
	}
	d := mlx5sim.New(p)
	d.SetFenceFilter(filter)
	cmd := exec.Command(bin, "-test.run=^TestGoScenarioFencedChild$")
	cmd.Env = append(append(os.Environ(), "MLX5SIM_FENCED_SCN="+file, "MLX5SIM_FENCED_PROFILE="+prof), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd = mlx5sim.FencedCmd(qemu, plugin, nil, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = mlx5sim.RunChild(ctx, cmd, d)
	f := fenced{d.Trace(), d.FenceLog()}
	for _, l := range strings.Split(out.String(), "\n") {
		if r, ok := strings.CutPrefix(l, "RUNERR "); ok {
			return f, errors.New(r)
		}
	}
	if err != nil {
		return f, fmt.Errorf("Go side under qemu: %v\n%s", err, out.String())
	}
	return f, nil
}

// TestGoScenarioFencedChild is the Go side of runGoFenced: the scenario
// through our provider, the device in the parent (mlx5sim.Remote), the
// whole run one trace window on this goroutine's locked thread.
func TestGoScenarioFencedChild(t *testing.T) {
	file := os.Getenv("MLX5SIM_FENCED_SCN")
	if file == "" {
		t.Skip("only as a child of runGoFenced")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := func() error {
		lines, err := scenario.ParseFile(file)
		if err != nil {
			return err
		}
		p, err := mlx5sim.ParseProfile(os.Getenv("MLX5SIM_FENCED_PROFILE"))
		if err != nil {
			return err
		}
		dir := t.TempDir()
		sys, dev := filepath.Join(dir, "sys"), filepath.Join(dir, "dev")
		if err := mlx5sim.WriteSysfs(sys, p); err != nil {
			return err
		}
		if err := mlx5sim.WriteDevRoot(dev); err != nil {
			return err
		}
		r, err := mlx5sim.DialRemote(os.Getenv("MLX5SIM_SOCK"))
		if err != nil {
			return err
		}
		defer r.Close()
		defer r.Install()()
		mlx5sim.TraceWindow(true)
		defer mlx5sim.TraceWindow(false)
		run := &scenario.Runner{Dev: r, Discovery: uverbs.Discovery{SysRoot: sys, DevRoot: dev}}
		return run.Run(lines)
	}()
	if err != nil {
		fmt.Printf("RUNERR %v\n", strings.ReplaceAll(err.Error(), "\n", " | "))
	}
}

// fenceCase is one scenario of the fenced comparison.
type fenceCase struct{ file, prof string }

// fenceSubset is the fenced comparison in the unit tier: a subset of the
// matrix, since each case costs two runs under qemu-user (about 2 s),
// that still runs every barrier function's production path on amd64 and
// arm64 (TestFences checks that it did): polls (udma_from_device_barrier),
// BlueFlame and doorbell rings with and without a bfreg lock
// (doorbellWC; mmio_wc_start and mmio_flush_writes around a locked
// copy), CQ arming (mmio_flush_writes before the UAR doorbell), receive
// and SRQ doorbell records and CQ cleaning on destroy and RESET
// (udma_to_device_barrier), under both UAR
// allocations and both command interfaces. MLX5SIM_FENCES=all runs the
// whole matrix instead.
var fenceSubset = []fenceCase{
	{"testdata/completions.scn", "uar=static ece=1 iface=ioctl"},
	{"testdata/arm.scn", "uar=dynamic ece=0 iface=ioctl"},
	{"testdata/shared_bfreg.scn", "uar=static ece=1 iface=ioctl"},
	{"testdata/srq_basic.scn", "uar=dynamic ece=1 iface=ioctl"},
	{"testdata/send_opcodes.scn", "uar=static ece=0 iface=write"},
	{"testdata/cq_clean.scn", "uar=static ece=1 iface=write"},
}

func fenceCases(t *testing.T) []fenceCase {
	if os.Getenv("MLX5SIM_FENCES") != "all" {
		for _, c := range fenceSubset {
			if !scenario.FileFits(c.file, c.prof) {
				t.Fatalf("%s does not run under the profile %q", c.file, c.prof)
			}
		}
		return fenceSubset
	}
	files, _ := filepath.Glob("testdata/*.scn")
	var out []fenceCase
	for _, f := range files {
		for _, prof := range diffProfiles {
			if scenario.FileFits(f, prof) {
				out = append(out, fenceCase{f, prof})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no scenarios in testdata")
	}
	return out
}

// wantBarriers are the barrier functions whose production path the
// fenced cases must run on goarch, with the instruction each executes
// and how many distinct ones (doorbellWC holds two SFENCEs).
func wantBarriers(goarch string) map[string]int {
	const b = modPrefix + "internal/barrier."
	switch goarch {
	case "amd64":
		return map[string]int{
			"lfence at " + b + "udmaFromDeviceBarrier+": 1,
			"sfence at " + b + "mmioFlushWrites+":       1,
			"sfence at " + b + "doorbellWC+":            2,
		}
	case "arm64":
		return map[string]int{
			"dsb ld at " + b + "udmaFromDeviceBarrier+": 1,
			"dsb st at " + b + "udmaToDeviceBarrier+":   1,
			"dsb st at " + b + "mmioFlushWrites+":       1,
		}
	}
	return nil
}

// TestFences compares the whole traces of libmlx5 and our provider with
// every barrier instruction each executed in the provider's code,
// observed by c/fenceplugin.c under qemu-user, on fenceSubset (or the
// whole matrix), and checks that every barrier function ran.
func TestFences(t *testing.T) {
	_, _, bin := fenceTools(t)
	goWhere := map[string]bool{}
	for _, c := range fenceCases(t) {
		t.Run(fmt.Sprintf("%s/%s", filepath.Base(c.file), strings.ReplaceAll(c.prof, " ", ",")), func(t *testing.T) {
			cs := runCFenced(t, c.file, c.prof)
			gs, err := runGoFenced(t, runtime.GOARCH, bin, nil, c.file, c.prof)
			if err != nil {
				t.Fatalf("Go side: %v\ntrace:\n%s", err, strings.Join(gs.trace, "\n"))
			}
			t.Logf("C: %s\nGo: %s", summarize(cs.log), summarize(gs.log))
			for _, l := range gs.log {
				goWhere[l] = true
			}
			checkTrace(t, "C", cs.trace, true)
			checkTrace(t, "Go", gs.trace, true)
			if err := mlx5sim.Compare(cs.trace, gs.trace); err != nil {
				t.Fatalf("libmlx5 and our provider differ:\n%v", err)
			}
		})
	}
	// Every barrier of ours is in internal/barrier, and each function
	// there ran on its production path.
	got := map[string]int{}
	for w := range goWhere {
		if strings.HasSuffix(w, " (not the provider's)") {
			continue
		}
		if !strings.Contains(w, " at "+modPrefix+"internal/barrier.") {
			t.Errorf("a barrier instruction outside internal/barrier: %s", w)
		}
		for f := range wantBarriers(runtime.GOARCH) {
			if strings.HasPrefix(w, f) {
				got[f]++
			}
		}
	}
	for f, n := range wantBarriers(runtime.GOARCH) {
		if got[f] != n {
			t.Errorf("%s...: %d distinct barrier instructions executed, want %d (seen: %q)", f, got[f], n, keys(goWhere))
		}
	}
}

func summarize(log []string) string {
	n := map[string]int{}
	for _, l := range log {
		n[l]++
	}
	var s []string
	for _, k := range keys(n) {
		s = append(s, fmt.Sprintf("%dx %s", n[k], k))
	}
	return strings.Join(s, ", ")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
