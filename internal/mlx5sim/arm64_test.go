//go:build linux

package mlx5sim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
	"github.com/go-rdma/rdmacm/internal/mlx5sim/scenario"
)

// The differential test on arm64: libmlx5's arm64 build (Debian's arm64
// ibverbs-providers, in a sysroot) and our provider built with
// GOARCH=arm64, each run under qemu-aarch64 with c/fenceplugin.c against
// a simulated device in this (host) process with the same profile, must
// leave identical traces, fences included: every dsb/dmb each executed in
// the provider's code (libmlx5's, or this module's functions), with the
// doorbell-record and UAR stores made before it. The C side is the
// cross-built scenario program and shim; our side is this package's test
// binary cross-built for arm64 (TestGoScenarioFencedChild).

type arm64Env struct {
	qemu      string // qemu-aarch64
	plugin    string // the fence plugin
	sys       *mlx5sim.Arm64Sysroot
	shim, scn string // cross-built C side
	gotest    string // this package's test binary for GOARCH=arm64
}

// arm64Side prepares the sysroot, the cross-built C side, the fence
// plugin and the arm64 test binary (in t's temporary directory). A missing
// dependency skips outside CI and fails under CI=true.
func arm64Side(t *testing.T) *arm64Env {
	t.Helper()
	e := &arm64Env{}
	err := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var err error
		if e.qemu, err = mlx5sim.QemuUser("arm64"); err != nil {
			return err
		}
		if e.sys, err = mlx5sim.PrepareArm64Sysroot(ctx); err != nil {
			return err
		}
		dir := t.TempDir()
		if e.shim, e.scn, err = mlx5sim.BuildCArm64(dir, e.sys); err != nil {
			return err
		}
		// The C side's addresses reach the device unchanged only with
		// guest_base 0.
		base, err := mlx5sim.GuestBaseArm64(ctx, e.qemu, e.sys, e.scn, os.DevNull)
		if err != nil {
			return err
		}
		if !zeroBase(base) {
			return fmt.Errorf("qemu-aarch64 runs the C side at guest_base %s, not 0: the device's process_vm_readv would miss it", base)
		}
		if e.plugin, err = mlx5sim.BuildFencePlugin(dir); err != nil {
			return err
		}
		e.gotest = filepath.Join(dir, "mlx5sim.arm64.test")
		if err := buildTestBin(e.gotest, arm64Build); err != nil {
			return err
		}
		// The device reads our side's memory too, with process_vm_readv
		// of qemu's pid.
		if base, err = mlx5sim.GuestBaseArm64(ctx, e.qemu, e.sys, e.gotest, "-test.run=^$"); err != nil {
			return err
		}
		if !zeroBase(base) {
			return fmt.Errorf("qemu-aarch64 runs the arm64 test binary at guest_base %s, not 0", base)
		}
		return nil
	}()
	if errors.Is(err, mlx5sim.ErrMissingDependency) && os.Getenv("CI") != "true" {
		t.Skipf("skipping (CI=true makes this a failure; make deps installs it): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// zeroBase reports whether qemu's -d page guest_base is 0 ("(nil)" as
// glibc prints a null pointer).
func zeroBase(s string) bool {
	return s == "(nil)" || strings.Trim(strings.TrimPrefix(s, "0x"), "0") == ""
}

// arm64Build is the go command's environment for this package's arm64
// test binaries.
var arm64Build = []string{"GOARCH=arm64", "CGO_ENABLED=0"}

// runCArm64 runs one scenario through libibverbs + libmlx5 for arm64
// under qemu-aarch64 with the fence plugin and returns the device's trace
// and fence log.
func runCArm64(t *testing.T, e *arm64Env, file, prof string) fenced {
	t.Helper()
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
	cmd := mlx5sim.ScenarioCmdArm64(e.qemu, e.plugin, e.sys, e.scn, e.shim, sys, file)
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := mlx5sim.RunChild(ctx, cmd, d); err != nil {
		t.Fatalf("C side (arm64): %v\nstderr:\n%s\ntrace:\n%s", err, stderr.String(), strings.Join(d.Trace(), "\n"))
	}
	return fenced{d.Trace(), d.FenceLog()}
}

// diffArm64 compares one scenario's arm64 traces, fences included, and
// returns our side's fence log.
func diffArm64(t *testing.T, e *arm64Env, file, prof string) []string {
	t.Helper()
	c := runCArm64(t, e, file, prof)
	g, err := runGoFenced(t, "arm64", e.gotest, nil, file, prof)
	if err != nil {
		t.Fatalf("Go side (arm64): %v\ntrace:\n%s", err, strings.Join(g.trace, "\n"))
	}
	checkTrace(t, "C arm64", c.trace, true)
	checkTrace(t, "Go arm64", g.trace, true)
	if err := mlx5sim.Compare(c.trace, g.trace); err != nil {
		if dir := os.Getenv("MLX5SIM_KEEP"); dir != "" {
			base := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_", "=", "-").Replace(t.Name()))
			os.WriteFile(base+".c.trace", []byte(strings.Join(c.trace, "\n")+"\n"), 0o644)
			os.WriteFile(base+".go.trace", []byte(strings.Join(g.trace, "\n")+"\n"), 0o644)
		}
		t.Fatalf("libmlx5 (arm64) and our provider (GOARCH=arm64) differ (MLX5SIM_KEEP=DIR keeps both traces):\nC barriers: %s\nGo barriers: %s\n%v",
			summarize(c.log), summarize(g.log), err)
	}
	return g.log
}

// TestDifferentialArm64 is TestDifferential for arm64, fences included:
// every scenario under every profile and the opcode scenario on every
// device id, and the mutation checks on arm64, so that a comparison that
// cannot fail there does not pass for one; then a check that every
// barrier instruction our side executed is in internal/barrier and that
// each barrier function ran.
func TestDifferentialArm64(t *testing.T) {
	e := arm64Side(t)
	t.Logf("arm64 sysroot %s: %s", e.sys.Dir, strings.Join(e.sys.Debs, " "))
	files, _ := filepath.Glob("testdata/*.scn")
	if len(files) < 10 {
		t.Fatalf("found %d scenarios in testdata, want the 10 of the matrix", len(files))
	}
	var mu sync.Mutex
	goWhere := map[string]bool{}
	diff := func(t *testing.T, file, prof string) {
		t.Parallel()
		log := diffArm64(t, e, file, prof)
		mu.Lock()
		for _, l := range log {
			goWhere[l] = true
		}
		mu.Unlock()
	}
	t.Run("matrix", func(t *testing.T) {
		for _, f := range files {
			for _, prof := range diffProfiles {
				if !scenario.FileFits(f, prof) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s", filepath.Base(f), strings.ReplaceAll(prof, " ", ",")), func(t *testing.T) {
					diff(t, f, prof)
				})
			}
		}
		for _, id := range deviceIDs {
			t.Run("devid="+id, func(t *testing.T) {
				diff(t, "testdata/send_opcodes.scn", "uar=static ece=1 iface=ioctl devid="+id)
			})
		}
		t.Run("mutants", func(t *testing.T) {
			t.Parallel()
			testMutantsArm64(t, e)
		})
	})
	if !t.Failed() {
		got := map[string]int{}
		for w := range goWhere {
			if strings.HasSuffix(w, " (not the provider's)") {
				continue
			}
			if !strings.Contains(w, " at "+modPrefix+"internal/barrier.") {
				t.Errorf("a barrier instruction outside internal/barrier: %s", w)
			}
			for f := range wantBarriers("arm64") {
				if strings.HasPrefix(w, f) {
					got[f]++
				}
			}
		}
		for f, n := range wantBarriers("arm64") {
			if got[f] != n {
				t.Errorf("%s...: %d distinct barrier instructions executed, want %d (seen: %q)", f, got[f], n, keys(goWhere))
			}
		}
		t.Logf("our arm64 barriers: %q", keys(goWhere))
	}
}

// testMutantsArm64 is TestMutantsCaught and TestFenceMutantsCaught on
// arm64: this package's arm64 tests rebuilt with -tags "mlx5mutant
// barriermutant". Without a defect the fenced trace equals libmlx5's
// arm64 trace; each defect (a changed ctrl-segment byte, mmio_wc_start
// moved after the BlueFlame copy, udma_from_device_barrier's DSB LD or
// the doorbell's final DSB ST left out of the assembly) fails the
// comparison, and the report shows where.
func testMutantsArm64(t *testing.T, e *arm64Env) {
	bin := filepath.Join(t.TempDir(), "mutant.arm64.test")
	if err := buildTestBin(bin, arm64Build, "-tags", "mlx5mutant barriermutant"); err != nil {
		t.Fatal(err)
	}
	// send_opcodes.scn rings BlueFlame doorbells; completions.scn also
	// polls (udma_from_device_barrier).
	for _, file := range []string{"testdata/send_opcodes.scn", "testdata/completions.scn"} {
		const prof = "uar=static ece=1 iface=ioctl"
		c := runCArm64(t, e, file, prof)
		mutants := []struct{ env, want string }{
			{"", ""},
			{"MLX5_FENCE_MUTANT=nolfence", "- fence dsb ld   (C)"},
			// udma_to_device_barrier before the RQ doorbell record is a
			// DSB ST here (no instruction on amd64), and the poll's
			// udma_from_device_barrier a DSB LD.
			{"MLX5_MUTANT=rqbarrier", "fence dsb st"},
			{"MLX5_MUTANT=pollbarrier", "fence dsb ld"},
		}
		if file == "testdata/send_opcodes.scn" {
			mutants = []struct{ env, want string }{
				{"", ""},
				// The WQE differs in the BlueFlame copy and the SQ buffer.
				{"MLX5_MUTANT=segbyte", "qp0.buf"},
				// The UAR is already written at the first dsb st.
				{"MLX5_MUTANT=barrier", "  fence dsb st\n+   uar6+0x0800"},
				{"MLX5_FENCE_MUTANT=nowcsfence", "- fence dsb st   (C)"},
			}
		}
		for _, m := range mutants {
			g, err := runGoFenced(t, "arm64", bin, []string{m.env}, file, prof)
			if err != nil {
				t.Fatalf("%s: arm64 mutant %q: %v", file, m.env, err)
			}
			err = mlx5sim.Compare(c.trace, g.trace)
			switch {
			case m.env == "" && err != nil:
				t.Fatalf("%s: the arm64 mutant binary without a defect differs from libmlx5:\n%v", file, err)
			case m.env != "" && err == nil:
				t.Fatalf("%s: arm64 mutant %q was not caught: the traces compare equal", file, m.env)
			case m.env != "" && !strings.Contains(err.Error(), m.want):
				t.Fatalf("%s: arm64 mutant %q caught, but the report does not show %q:\n%v", file, m.env, m.want, err)
			}
			if err != nil {
				t.Logf("%s: arm64 mutant %q caught:\n%s", file, m.env, firstLines(err.Error(), 12))
			}
		}
	}
}
