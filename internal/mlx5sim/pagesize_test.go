//go:build linux

package mlx5sim_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/mlx5sim/scenario"
)

// pageProfiles are the page-size profiles of TestDifferentialPageSizes:
// a simulated kernel with 16 KiB and with 64 KiB pages (arm64 DPUs and
// RHEL's arm64 kernels), one with static UARs, one with dynamic ones.
// With 4 KiB UARs several share one system page, so the bfreg counts,
// mmap offsets, UAR and doorbell-record pages all move.
var pageProfiles = []string{
	"uar=static ece=1 iface=ioctl page=16384",
	"uar=dynamic ece=1 iface=ioctl page=65536",
}

// TestDifferentialPageSizes is TestDifferential on kernels with larger
// pages: both stacks read the profile's page size (libmlx5 through the
// shim's sysconf, ours through kcall.PageSize) and must still agree byte
// for byte. To keep CI short the scenarios take the two profiles in
// turn; MLX5SIM_PAGE_MATRIX=full runs every scenario at both sizes under
// every profile of the matrix (diffProfiles).
func TestDifferentialPageSizes(t *testing.T) {
	shim, scn := cSide(t)
	files, _ := filepath.Glob("testdata/*.scn")
	full := os.Getenv("MLX5SIM_PAGE_MATRIX") == "full"
	var fullProfiles []string
	for _, page := range []string{"16384", "65536"} {
		for _, p := range diffProfiles {
			fullProfiles = append(fullProfiles, p+" page="+page)
		}
	}
	for i, f := range files {
		profs := []string{pageProfiles[i%2], pageProfiles[(i+1)%2]}
		if full {
			profs = fullProfiles
		}
		for _, prof := range profs {
			if !scenario.FileFits(f, prof) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", filepath.Base(f), strings.ReplaceAll(prof, " ", ",")), func(t *testing.T) {
				diffOne(t, shim, scn, f, prof)
			})
			if !full {
				break // one page size per scenario, the other for the next
			}
		}
	}
}

// TestPageSizeSeen checks that the page size reaches both stacks: the
// context request's bfreg count (libmlx5 asks for PAGE_SIZE/4096 * 2,
// at least 16) and the UAR mmaps' length.
func TestPageSizeSeen(t *testing.T) {
	shim, scn := cSide(t)
	for _, c := range []struct {
		page, bfregs int
	}{{4096, 16}, {16384, 16}, {65536, 32}} {
		prof := fmt.Sprintf("uar=static ece=1 iface=ioctl page=%d", c.page)
		g, err := runChild(t, "testdata/arm.scn", prof)
		if err != nil {
			t.Fatalf("%s: Go side: %v", prof, err)
		}
		for side, tr := range map[string][]string{"C": runC(t, shim, scn, "testdata/arm.scn", prof), "Go": g} {
			all := strings.Join(tr, "\n")
			if want := fmt.Sprintf("bfregs=%d ", c.bfregs); !strings.Contains(all, want) {
				t.Errorf("%s, %s side: no context request with %q", prof, side, want)
			}
			if want := fmt.Sprintf("len=%d prot=0x2 uar0 -> ok", c.page); !strings.Contains(all, want) {
				t.Errorf("%s, %s side: no UAR mmap of %d bytes (%q)", prof, side, c.page, want)
			}
		}
	}
}
