package uverbs

import (
	"slices"
	"testing"
)

// TestContextQPList: the open-QP list keeps every QP's slot right
// through removals in any order, and ignores a QP it does not hold.
func TestContextQPList(t *testing.T) {
	x := &Context{}
	qs := make([]*QP, 5)
	for i := range qs {
		qs[i] = new(QP)
		x.addQP(qs[i])
	}
	check := func(want ...*QP) {
		t.Helper()
		if len(x.qps) != len(want) {
			t.Fatalf("%d QPs listed, want %d", len(x.qps), len(want))
		}
		for i, q := range x.qps {
			if q.slot != i {
				t.Errorf("QP at %d has slot %d", i, q.slot)
			}
			if !slices.Contains(want, q) {
				t.Errorf("QP at %d was removed", i)
			}
		}
	}
	x.dropQP(qs[1])
	check(qs[0], qs[2], qs[3], qs[4])
	x.dropQP(qs[1]) // twice: no change
	x.dropQP(new(QP))
	check(qs[0], qs[2], qs[3], qs[4])
	x.dropQP(qs[4])
	x.dropQP(qs[0])
	check(qs[2], qs[3])
	x.dropQP(qs[3])
	x.dropQP(qs[2])
	check()
}
