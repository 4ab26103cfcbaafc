//go:build linux

package mlx5sim_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
)

// TestMutantsCaught is the mutation check of the harness itself: this
// package's test binary is rebuilt with -tags mlx5mutant, in which our
// provider takes the defect MLX5_MUTANT names (uverbs/mlx5_mutant.go). Run
// without a defect, that binary's trace still equals libmlx5's; with one
// byte of a ctrl segment changed, or with mmio_wc_start moved after the
// BlueFlame copy, the comparison must fail, and say where.
func TestMutantsCaught(t *testing.T) {
	shim, scn := cSide(t)
	if testing.Short() {
		t.Skip("builds a second test binary; not in -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the mutation check needs the go command to build the mutant: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mutant.test")
	build := exec.Command(gobin, "test", "-c", "-tags", "mlx5mutant", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the mutant: %v\n%s", err, out)
	}
	const file, prof = "testdata/send_opcodes.scn", "uar=static ece=1 iface=ioctl"
	c := runC(t, shim, scn, file, prof)
	for _, m := range []struct {
		name, mutant string
		want         string // in the report of the first difference
	}{
		{"no defect", "", ""},
		// The WQE differs in the BlueFlame copy and the SQ buffer.
		{"segment byte", "segbyte", "qp0.buf"},
		// The UAR is already written at the first fence.
		{"barrier moved", "barrier", "  fence sfence\n+   uar6+0x0800"},
	} {
		t.Run(m.name, func(t *testing.T) {
			if m.mutant == "barrier" && runtime.GOARCH != "amd64" {
				t.Skip("the expected report names amd64's sfence")
			}
			c, g, err := c, []string(nil), error(nil)
			if m.mutant == "barrier" {
				// Fences are observed under qemu-user only (fence_test.go).
				var cf, gf fenced
				cf = runCFenced(t, file, prof)
				gf, err = runGoFenced(t, runtime.GOARCH, bin, []string{"MLX5_MUTANT=" + m.mutant}, file, prof)
				c, g = cf.trace, gf.trace
			} else {
				g, err = runChildBin(bin, []string{"MLX5_MUTANT=" + m.mutant}, file, prof)
			}
			if err != nil {
				t.Fatalf("mutant run: %v", err)
			}
			err = mlx5sim.Compare(c, g)
			switch {
			case m.mutant == "" && err != nil:
				t.Fatalf("the mutant binary without a defect differs from libmlx5:\n%v", err)
			case m.mutant != "" && err == nil:
				t.Fatalf("mutant %q was not caught: the traces compare equal", m.mutant)
			case m.mutant != "" && !strings.Contains(err.Error(), m.want):
				t.Fatalf("mutant %q caught, but the report does not show %q:\n%v", m.mutant, m.want, err)
			}
			if err != nil {
				t.Logf("caught:\n%s", firstLines(err.Error(), 12))
			}
		})
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}
