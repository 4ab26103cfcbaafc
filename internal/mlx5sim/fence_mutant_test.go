//go:build linux

package mlx5sim_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
)

// TestFenceMutantsCaught proves the fenced comparison bites on the
// instructions themselves: this package's test binary is rebuilt with
// -tags barriermutant, where MLX5_FENCE_MUTANT makes internal/barrier's
// assembly leave out one fence instruction on the production path
// (barrier_mutant.go). Without a defect its fenced trace equals
// libmlx5's; without udma_from_device_barrier's LFENCE, or without
// doorbellWC's final SFENCE (mmio_flush_writes), the comparison fails
// and the report names the missing fence.
func TestFenceMutantsCaught(t *testing.T) {
	fenceTools(t)
	if testing.Short() {
		t.Skip("builds a second test binary; not in -short")
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the fence mutants exist for amd64 and arm64, not %s", runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "fencemutant.test")
	if err := buildTestBin(bin, nil, "-tags", "barriermutant"); err != nil {
		t.Fatal(err)
	}
	// completions.scn polls (udma_from_device_barrier) and rings
	// BlueFlame doorbells (doorbellWC).
	const file, prof = "testdata/completions.scn", "uar=static ece=1 iface=ioctl"
	c := runCFenced(t, file, prof)
	lfence, sfence := "- fence lfence   (C)", "- fence sfence   (C)"
	if runtime.GOARCH == "arm64" {
		lfence, sfence = "- fence dsb ld   (C)", "- fence dsb st   (C)"
	}
	for _, m := range []struct{ mutant, want string }{
		{"", ""},
		{"nolfence", lfence},
		{"nowcsfence", sfence},
	} {
		t.Run("mutant="+m.mutant, func(t *testing.T) {
			g, err := runGoFenced(t, runtime.GOARCH, bin, []string{"MLX5_FENCE_MUTANT=" + m.mutant}, file, prof)
			if err != nil {
				t.Fatalf("mutant run: %v", err)
			}
			err = mlx5sim.Compare(c.trace, g.trace)
			switch {
			case m.mutant == "" && err != nil:
				t.Fatalf("the mutant binary without a defect differs from libmlx5:\n%v", err)
			case m.mutant != "" && err == nil:
				t.Fatalf("fence mutant %q was not caught: the traces compare equal", m.mutant)
			case m.mutant != "" && !strings.Contains(err.Error(), m.want):
				t.Fatalf("fence mutant %q caught, but the report does not show %q:\n%v", m.mutant, m.want, err)
			}
			if err != nil {
				t.Logf("caught:\n%s", firstLines(err.Error(), 14))
			}
		})
	}
}
