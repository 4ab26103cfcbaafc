//go:build linux

package mlx5sim_test

import (
	"strings"
	"testing"
)

// TestDifferentialAtomicNone runs the atomic scenarios on a device whose
// QUERY_DEVICE reports ATOMIC_NONE: both stacks refuse every atomic with
// EOPNOTSUPP, after writing the same half of its ctrl segment, and post
// everything else as before.
func TestDifferentialAtomicNone(t *testing.T) {
	shim, scn := cSide(t)
	for _, f := range []string{"testdata/atomic_none.scn"} {
		t.Run(f, func(t *testing.T) {
			prof := "uar=static ece=1 iface=ioctl atomic=none"
			diffOne(t, shim, scn, f, prof)
			g, err := runChild(t, f, prof)
			if err != nil {
				t.Fatal(err)
			}
			refused := 0
			for _, l := range g {
				if strings.HasPrefix(l, "rec err L") && strings.HasSuffix(l, "errno=95") {
					refused++
				}
			}
			if refused == 0 {
				t.Errorf("no atomic was refused with EOPNOTSUPP:\n%s", strings.Join(g, "\n"))
			}
		})
	}
}
