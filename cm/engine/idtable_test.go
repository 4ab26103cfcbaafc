package engine

import (
	"math/rand/v2"
	"testing"
)

// TestIDTableAgainstMap runs random puts, gets and removes against a map,
// with IDs from a small range (long probe runs, wrap-around, collisions)
// and from the whole 32-bit range, and checks every slot sits at or after
// its home with no gap between.
func TestIDTableAgainstMap(t *testing.T) {
	for _, span := range []uint32{64, 1 << 12, 0} {
		r := rand.New(rand.NewPCG(1, uint64(span)))
		draw := func() uint32 { // never 0, which the engine never uses
			if span == 0 {
				return r.Uint32N(1<<32-1) + 1
			}
			return r.Uint32N(span) + 1
		}
		tab := newIDTable()
		ref := map[uint32]*conn{}
		for step := range 200000 {
			id := draw()
			switch op := r.IntN(10); {
			case op < 5 && len(ref) < 3000:
				if ref[id] == nil {
					c := &conn{localID: id}
					ref[id] = c
					tab.put(c)
				}
			case op < 8:
				delete(ref, id)
				tab.remove(id)
			default:
				if got := tab.get(id); got != ref[id] {
					t.Fatalf("span %d step %d: get(%#x) = %p, want %p", span, step, id, got, ref[id])
				}
			}
			if tab.len() != len(ref) {
				t.Fatalf("span %d step %d: len %d, want %d", span, step, tab.len(), len(ref))
			}
			if step%997 == 0 {
				checkIDTable(t, &tab, ref)
			}
		}
		checkIDTable(t, &tab, ref)
	}
}

func checkIDTable(t *testing.T, tab *idTable, ref map[uint32]*conn) {
	t.Helper()
	mask := len(tab.slots) - 1
	n := 0
	for i, s := range tab.slots {
		c := s.c
		if c == nil {
			if s.id != 0 {
				t.Fatalf("empty slot %d keyed %#x", i, s.id)
			}
			continue
		}
		n++
		if s.id != c.localID {
			t.Fatalf("slot %d keyed %#x holds %#x", i, s.id, c.localID)
		}
		if ref[c.localID] != c {
			t.Fatalf("slot %d holds %#x, not in the reference", i, c.localID)
		}
		for j := tab.home(c.localID); j != i; j = (j + 1) & mask {
			if tab.slots[j].id == 0 {
				t.Fatalf("slot %d (%#x): gap at %d after its home", i, c.localID, j)
			}
		}
	}
	if n != len(ref) {
		t.Fatalf("table holds %d, want %d", n, len(ref))
	}
	if tab.get(0) != nil {
		t.Fatal("get(0) found an ID")
	}
	for id, c := range ref {
		if tab.get(id) != c {
			t.Fatalf("get(%#x) lost", id)
		}
	}
}
