//go:build linux

package mlx5sim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
// GOARCH=arm64, each run under qemu-aarch64 against the simulated device
// with the same profile, must leave identical traces. The C side talks to
// a device in this (host) process through the cross-built shim; our side
// is this package's test binary cross-built for arm64, which runs the
// device in-process as runChild does natively.

type arm64Env struct {
	qemu      string
	sys       *mlx5sim.Arm64Sysroot
	shim, scn string // cross-built C side
	gotest    string // this package's test binary for GOARCH=arm64
}

var (
	arm64Once  sync.Once
	arm64Setup arm64Env
	arm64Err   error
)

// arm64Side prepares the sysroot, the cross-built C side and the arm64
// test binary once per test binary. A missing dependency skips outside CI
// and fails under CI=true.
func arm64Side(t testing.TB) *arm64Env {
	t.Helper()
	arm64Once.Do(func() {
		arm64Err = func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			e := &arm64Setup
			var err error
			if e.qemu, err = mlx5sim.QemuArm64(); err != nil {
				return err
			}
			if e.sys, err = mlx5sim.PrepareArm64Sysroot(ctx); err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "mlx5sim-arm64-")
			if err != nil {
				return err
			}
			if e.shim, e.scn, err = mlx5sim.BuildCArm64(dir, e.sys); err != nil {
				return err
			}
			// The C side's addresses reach the device unchanged only
			// with guest_base 0.
			base, err := mlx5sim.GuestBaseArm64(ctx, e.qemu, e.sys, e.scn, os.DevNull)
			if err != nil {
				return err
			}
			if !zeroBase(base) {
				return fmt.Errorf("qemu-aarch64 runs the C side at guest_base %s, not 0: the device's process_vm_readv would miss it", base)
			}
			gobin, err := exec.LookPath("go")
			if err != nil {
				return fmt.Errorf("the arm64 differential needs the go command to cross-build this package's tests: %v", err)
			}
			e.gotest = filepath.Join(dir, "mlx5sim.arm64.test")
			build := exec.CommandContext(ctx, gobin, "test", "-c", "-o", e.gotest, ".")
			build.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				return fmt.Errorf("building this package's tests for arm64: %v\n%s", err, out)
			}
			// Our side's device reads its own memory through
			// /proc/self/mem (qemu-user has no process_vm_readv), whose
			// offsets are the guest's addresses only with guest_base 0.
			if base, err = mlx5sim.GuestBaseArm64(ctx, e.qemu, e.sys, e.gotest, "-test.run=^$"); err != nil {
				return err
			}
			if !zeroBase(base) {
				return fmt.Errorf("qemu-aarch64 runs the arm64 test binary at guest_base %s, not 0", base)
			}
			return nil
		}()
	})
	if errors.Is(arm64Err, mlx5sim.ErrMissingDependency) && os.Getenv("CI") != "true" {
		t.Skipf("skipping (CI=true makes this a failure; make deps installs it): %v", arm64Err)
	}
	if arm64Err != nil {
		t.Fatal(arm64Err)
	}
	return &arm64Setup
}

// zeroBase reports whether qemu's -d page guest_base is 0 ("(nil)" as
// glibc prints a null pointer).
func zeroBase(s string) bool {
	return s == "(nil)" || strings.Trim(strings.TrimPrefix(s, "0x"), "0") == ""
}

// withoutQemuVars drops qemu-user's own variables (QEMU_LD_PREFIX,
// QEMU_STRACE, ...) from env.
func withoutQemuVars(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "QEMU_") {
			out = append(out, kv)
		}
	}
	return out
}

// runCArm64 runs one scenario through libibverbs + libmlx5 for arm64
// under qemu-aarch64 and returns the device's trace.
func runCArm64(t *testing.T, e *arm64Env, file, prof string) []string {
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
	cmd := mlx5sim.ScenarioCmdArm64(e.qemu, e.sys, e.scn, e.shim, sys, file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := mlx5sim.RunChild(ctx, cmd, d); err != nil {
		t.Fatalf("C side (arm64): %v\nstderr:\n%s\ntrace:\n%s", err, stderr.String(), strings.Join(d.Trace(), "\n"))
	}
	return d.Trace()
}

// runGoArm64 runs one scenario through our provider in the arm64 test
// binary under qemu-aarch64 (TestGoScenarioChild) and returns its trace.
func runGoArm64(e *arm64Env, file, prof string) ([]string, error) {
	return runGoArm64Bin(e, e.gotest, nil, file, prof)
}

// runGoArm64Bin is runGoArm64 with another arm64 test binary of this
// package (a mutant) and extra environment.
func runGoArm64Bin(e *arm64Env, bin string, env []string, file, prof string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.qemu, bin, "-test.run=^TestGoScenarioChild$")
	cmd.Env = append(append(withoutQemuVars(os.Environ()), "MLX5SIM_CHILD_SCN="+file, "MLX5SIM_CHILD_PROFILE="+prof), env...)
	out, err := cmd.CombinedOutput()
	var tr []string
	var runErr error
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "TRACE "):
			tr = append(tr, l[len("TRACE "):])
		case strings.HasPrefix(l, "RUNERR "):
			runErr = errors.New(l[len("RUNERR "):])
		}
	}
	if err != nil && runErr == nil {
		runErr = fmt.Errorf("arm64 child: %v\n%s", err, out)
	}
	return tr, runErr
}

// checkArm64Trace fails a trace that could make the comparison vacuous:
// one without a snapshot or with a command the device did not know.
func checkArm64Trace(t *testing.T, side string, tr []string) {
	t.Helper()
	snaps := 0
	for _, l := range tr {
		if strings.Contains(l, "UNKNOWN") {
			t.Errorf("%s: the device saw an unknown command: %s", side, l)
		}
		if strings.HasPrefix(l, "snap ") {
			snaps++
		}
	}
	if snaps == 0 {
		t.Errorf("%s: trace has no snapshot (%d lines)", side, len(tr))
	}
}

func diffArm64(t *testing.T, e *arm64Env, file, prof string) {
	t.Helper()
	c := runCArm64(t, e, file, prof)
	g, err := runGoArm64(e, file, prof)
	if err != nil {
		t.Fatalf("Go side (arm64): %v\ntrace:\n%s", err, strings.Join(g, "\n"))
	}
	checkArm64Trace(t, "C arm64", c)
	checkArm64Trace(t, "Go arm64", g)
	c, g = mlx5sim.DropFences(c), mlx5sim.DropFences(g)
	if err := mlx5sim.Compare(c, g); err != nil {
		if dir := os.Getenv("MLX5SIM_KEEP"); dir != "" {
			base := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_", "=", "-").Replace(t.Name()))
			os.WriteFile(base+".c.trace", []byte(strings.Join(c, "\n")+"\n"), 0o644)
			os.WriteFile(base+".go.trace", []byte(strings.Join(g, "\n")+"\n"), 0o644)
		}
		t.Fatalf("libmlx5 (arm64) and our provider (GOARCH=arm64) differ (MLX5SIM_KEEP=DIR keeps both traces):\n%v", err)
	}
}

// TestDifferentialArm64 is TestDifferential for arm64: every scenario
// under every profile, and the opcode scenario on every device id; then
// the mutation check of TestMutantsCaught on arm64, so that a comparison
// that cannot fail there does not pass for one.
func TestDifferentialArm64(t *testing.T) {
	e := arm64Side(t)
	t.Logf("arm64 sysroot %s: %s", e.sys.Dir, strings.Join(e.sys.Debs, " "))
	files, _ := filepath.Glob("testdata/*.scn")
	if len(files) < 10 {
		t.Fatalf("found %d scenarios in testdata, want the 10 of the matrix", len(files))
	}
	for _, f := range files {
		for _, prof := range diffProfiles {
			if !scenario.FileFits(f, prof) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", filepath.Base(f), strings.ReplaceAll(prof, " ", ",")), func(t *testing.T) {
				t.Parallel()
				diffArm64(t, e, f, prof)
			})
		}
	}
	for _, id := range deviceIDs {
		t.Run("devid="+id, func(t *testing.T) {
			t.Parallel()
			diffArm64(t, e, "testdata/send_opcodes.scn", "uar=static ece=1 iface=ioctl devid="+id)
		})
	}
	t.Run("mutants", func(t *testing.T) {
		t.Parallel()
		testMutantsArm64(t, e)
	})
}

// testMutantsArm64 builds this package's arm64 tests with -tags
// mlx5mutant and checks that the mutant binary without a defect equals
// libmlx5's arm64 trace and that a changed ctrl-segment byte differs,
// where TestMutantsCaught says it does.
func testMutantsArm64(t *testing.T, e *arm64Env) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the mutation check needs the go command to build the mutant: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mutant.arm64.test")
	build := exec.Command(gobin, "test", "-c", "-tags", "mlx5mutant", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the arm64 mutant: %v\n%s", err, out)
	}
	const file, prof = "testdata/send_opcodes.scn", "uar=static ece=1 iface=ioctl"
	c := mlx5sim.DropFences(runCArm64(t, e, file, prof))
	for _, m := range []struct{ mutant, want string }{
		{"", ""},
		{"segbyte", "qp0.buf"},
	} {
		g, err := runGoArm64Bin(e, bin, []string{"MLX5_MUTANT=" + m.mutant}, file, prof)
		if err != nil {
			t.Fatalf("arm64 mutant %q: %v", m.mutant, err)
		}
		err = mlx5sim.Compare(c, mlx5sim.DropFences(g))
		switch {
		case m.mutant == "" && err != nil:
			t.Fatalf("the arm64 mutant binary without a defect differs from libmlx5:\n%v", err)
		case m.mutant != "" && err == nil:
			t.Fatalf("arm64 mutant %q was not caught: the traces compare equal", m.mutant)
		case m.mutant != "" && !strings.Contains(err.Error(), m.want):
			t.Fatalf("arm64 mutant %q caught, but the report does not show %q:\n%v", m.mutant, m.want, err)
		}
		if err != nil {
			t.Logf("arm64 mutant %q caught:\n%s", m.mutant, firstLines(err.Error(), 8))
		}
	}
}
