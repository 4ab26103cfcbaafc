//go:build linux

package mlx5sim_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-rdma/rdmacm/internal/mlx5sim/scenario"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
)

// The differential test: every scenario runs through NVIDIA's libmlx5
// (libibverbs v44 under the shim, in a child process) and through our
// provider (uverbs in a child test process), each against a fresh
// simulated device with the same profile; the two traces — commands with
// their driver data, mmaps, after every verb the work queues, doorbell
// records and UAR/BlueFlame pages — must be identical.
//
// Fences: natively neither side records any. TestFences (fence_test.go)
// runs both sides under qemu-user with a plugin that observes every
// barrier instruction executed, and compares the same traces with the
// fences and the doorbell and UAR stores made before each.

// diffProfiles is the profile matrix every scenario runs under: static
// UARs on the ioctl and the write() interfaces, dynamic UARs on the ioctl
// interface (they exist only there: ParseProfile refuses the mix), each
// with and without ECE in the context.
var diffProfiles = []string{
	"uar=static ece=1 iface=ioctl",
	"uar=static ece=0 iface=ioctl",
	"uar=dynamic ece=1 iface=ioctl",
	"uar=dynamic ece=0 iface=ioctl",
	"uar=static ece=1 iface=write",
	"uar=static ece=0 iface=write",
}

// deviceIDs are the PCI device ids of ConnectX-4 Lx, 5, 6 Dx, 7 and
// BlueField-2 and 3 (libmlx5's hca_table), run with one scenario each.
var deviceIDs = []string{"0x1015", "0x1017", "0x101d", "0x1021", "0xa2d6", "0xa2dc"}

var (
	cBuild      sync.Once
	cShim, cScn string
	cBuildErr   error
)

// cSide builds the shim and the C interpreter once per test binary. A
// missing dependency skips outside CI and fails under CI=true.
func cSide(t testing.TB) (shim, scn string) {
	t.Helper()
	cBuild.Do(func() {
		dir, err := os.MkdirTemp("", "mlx5sim-c-")
		if err != nil {
			cBuildErr = err
			return
		}
		cShim, cScn, cBuildErr = mlx5sim.BuildC(dir)
	})
	if errors.Is(cBuildErr, mlx5sim.ErrMissingDependency) && os.Getenv("CI") != "true" {
		t.Skipf("skipping (CI=true makes this a failure; make deps installs it): %v", cBuildErr)
	}
	if cBuildErr != nil {
		t.Fatal(cBuildErr)
	}
	return cShim, cScn
}

// runC runs one scenario through libibverbs + libmlx5 and returns the
// device's trace.
func runC(t *testing.T, shim, scn, file, prof string) []string {
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
	cmd := mlx5sim.ScenarioCmd(scn, shim, sys, file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := mlx5sim.RunChild(ctx, cmd, d); err != nil {
		t.Fatalf("C side: %v\nstderr:\n%s\ntrace:\n%s", err, stderr.String(), strings.Join(d.Trace(), "\n"))
	}
	return d.Trace()
}

// checkTrace fails a trace that could make the comparison vacuous: one
// without a snapshot, with a command the device did not know, or, fenced
// (under the plugin), one that arms a CQ or posts a send but shows no
// fence: every doorbell ring has one. Natively a fence line is an error.
func checkTrace(t *testing.T, side string, tr []string, fenced bool) {
	t.Helper()
	snaps, fences, rings := 0, 0, 0
	for _, l := range tr {
		if strings.Contains(l, "UNKNOWN") {
			t.Errorf("%s: the device saw an unknown command: %s", side, l)
		}
		if strings.HasPrefix(l, "snap ") {
			snaps++
			if _, line, ok := strings.Cut(l, ": "); ok && (strings.HasPrefix(line, "send ") || strings.HasPrefix(line, "arm ")) {
				rings++
			}
		}
		if strings.HasPrefix(l, "fence ") {
			fences++
		}
	}
	if snaps == 0 {
		t.Errorf("%s: trace has no snapshot (%d lines)", side, len(tr))
	}
	if fenced && rings > 0 && fences == 0 {
		t.Errorf("%s: %d send/arm lines but no fence in the trace", side, rings)
	}
	if !fenced && fences > 0 {
		t.Errorf("%s: %d fence lines in a trace run natively", side, fences)
	}
}

func diffOne(t *testing.T, shim, scn, file, prof string) {
	t.Helper()
	c := runC(t, shim, scn, file, prof)
	g, err := runChild(t, file, prof)
	if err != nil {
		t.Fatalf("Go side: %v\ntrace:\n%s", err, strings.Join(g, "\n"))
	}
	checkTrace(t, "C", c, false)
	checkTrace(t, "Go", g, false)
	if err := mlx5sim.Compare(c, g); err != nil {
		if dir := os.Getenv("MLX5SIM_KEEP"); dir != "" {
			base := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_", "=", "-").Replace(t.Name()))
			os.WriteFile(base+".c.trace", []byte(strings.Join(c, "\n")+"\n"), 0o644)
			os.WriteFile(base+".go.trace", []byte(strings.Join(g, "\n")+"\n"), 0o644)
		}
		t.Fatalf("libmlx5 and our provider differ (MLX5SIM_KEEP=DIR keeps both traces):\n%v", err)
	}
}

// TestDifferential runs every scenario under every profile.
func TestDifferential(t *testing.T) {
	shim, scn := cSide(t)
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
				diffOne(t, shim, scn, f, prof)
			})
		}
	}
}

// TestDifferentialDeviceIDs runs the opcode scenario on every device id
// libmlx5 knows for the NICs and DPUs we claim.
func TestDifferentialDeviceIDs(t *testing.T) {
	shim, scn := cSide(t)
	for _, id := range deviceIDs {
		t.Run(id, func(t *testing.T) {
			diffOne(t, shim, scn, "testdata/send_opcodes.scn", "uar=static ece=1 iface=ioctl devid="+id)
		})
	}
}
