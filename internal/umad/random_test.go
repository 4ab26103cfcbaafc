package umad

import "testing"

func TestRandomSourceDraws(t *testing.T) {
	a, b := NewRandomSource(7), NewRandomSource(7)
	ids := map[uint32]bool{}
	for range 1000 {
		ids[a.CommID()] = true
		if psn := a.PSN(); psn > 0xffffff {
			t.Fatalf("PSN %#x has more than 24 bits", psn)
		}
	}
	if len(ids) < 999 {
		t.Errorf("%d distinct communication IDs in 1000 draws", len(ids))
	}
	// Two sources are seeded independently: their streams differ.
	a1, a2, b1, b2 := a.CommID(), a.CommID(), b.CommID(), b.CommID()
	if a1 == b1 && a2 == b2 {
		t.Errorf("two sources drew the same IDs: %#x %#x", a1, a2)
	}
	if got := a.TID(5) >> 32; got != 7 {
		t.Errorf("TID high half %d, want 7", got)
	}
}
