//go:build linux

package mlx5sim_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
	"github.com/go-rdma/rdmacm/internal/mlx5sim/scenario"
	"github.com/go-rdma/rdmacm/uverbs"
)

// TestGoScenarios runs every testdata scenario through the Go
// interpreter (uverbs and its mlx5 provider, in-process through the
// kcall.TestDevice seam) under each profile, and checks that the device
// saw no unknown command.
func TestGoScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.scn")
	if len(files) == 0 {
		t.Skip("no scenarios")
	}
	profiles := []string{"uar=static ece=1 iface=ioctl", "uar=dynamic ece=1 iface=ioctl", "uar=static ece=0 iface=write"}
	for _, f := range files {
		for _, prof := range profiles {
			if !scenario.FileFits(f, prof) {
				continue
			}
			t.Run(filepath.Base(f)+"/"+strings.ReplaceAll(prof, " ", ","), func(t *testing.T) {
				tr, err := runChild(t, f, prof)
				if os.Getenv("MLX5SIM_TRACE") != "" {
					t.Logf("trace:\n%s", strings.Join(tr, "\n"))
				}
				if err != nil && strings.Contains(err.Error(), "device refused") && strings.Contains(err.Error(), "scatter=64") {
					// The HCA scatters 64 bytes only into 128-byte CQEs
					// (mlx5_ib configure_responder_scat_cqe); the
					// scenario's CQ has 64-byte CQEs.
					t.Skipf("scenario asks for scatter=64 on a 64-byte-CQE CQ: %v", err)
				}
				if err != nil {
					t.Fatalf("run: %v\ntrace:\n%s", err, strings.Join(tr, "\n"))
				}
				for _, l := range tr {
					if strings.Contains(l, "UNKNOWN") {
						t.Errorf("device saw an unknown command: %s", l)
					}
				}
			})
		}
	}
}

// runChild runs one scenario in a fresh test process (MR buffers sit at
// fixed addresses, so every run needs its own address space).
func runChild(t *testing.T, file, prof string) ([]string, error) {
	return runChildBin(os.Args[0], nil, file, prof)
}

// runChildBin is runChild with another test binary of this package (the
// mutants of TestMutantsCaught) and extra environment.
func runChildBin(bin string, env []string, file, prof string) ([]string, error) {
	cmd := exec.Command(bin, "-test.run=^TestGoScenarioChild$")
	cmd.Env = append(append(os.Environ(), "MLX5SIM_CHILD_SCN="+file, "MLX5SIM_CHILD_PROFILE="+prof), env...)
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
		runErr = fmt.Errorf("child: %v\n%s", err, out)
	}
	return tr, runErr
}

// TestGoScenarioChild is the child of runChild.
func TestGoScenarioChild(t *testing.T) {
	file := os.Getenv("MLX5SIM_CHILD_SCN")
	if file == "" {
		t.Skip("only as a child of TestGoScenarios")
	}
	lines, err := scenario.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mlx5sim.ParseProfile(os.Getenv("MLX5SIM_CHILD_PROFILE"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := runGo(t, p, lines)
	for _, l := range tr {
		fmt.Printf("TRACE %s\n", l)
	}
	if err != nil {
		fmt.Printf("RUNERR %v\n", err)
	}
}

func runGo(t *testing.T, p mlx5sim.Profile, lines []scenario.Line) ([]string, error) {
	dir := t.TempDir()
	sys, dev := filepath.Join(dir, "sys"), filepath.Join(dir, "dev")
	if err := mlx5sim.WriteSysfs(sys, p); err != nil {
		t.Fatal(err)
	}
	if err := mlx5sim.WriteDevRoot(dev); err != nil {
		t.Fatal(err)
	}
	d := mlx5sim.New(p)
	restore := d.Install()
	defer restore()
	r := &scenario.Runner{Dev: d.Local(), Discovery: uverbs.Discovery{SysRoot: sys, DevRoot: dev}}
	err := r.Run(lines)
	return d.Trace(), err
}

func TestDiscovery(t *testing.T) {
	dir := t.TempDir()
	p := mlx5sim.DefaultProfile()
	if err := mlx5sim.WriteSysfs(filepath.Join(dir, "sys"), p); err != nil {
		t.Fatal(err)
	}
	if err := mlx5sim.WriteDevRoot(filepath.Join(dir, "dev")); err != nil {
		t.Fatal(err)
	}
	disc := uverbs.Discovery{SysRoot: filepath.Join(dir, "sys"), DevRoot: filepath.Join(dir, "dev")}
	dev, err := disc.Device("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if dev.Verbs.Name != "uverbs0" || len(dev.Ports) != 1 || len(dev.Ports[0].GIDs) != 2 {
		t.Errorf("device %+v", dev)
	}
	fd, err := os.OpenFile(dev.Verbs.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if !mlx5sim.IsUverbsFD(int(fd.Fd())) {
		t.Error("node is not a simulated uverbs fd")
	}
}
