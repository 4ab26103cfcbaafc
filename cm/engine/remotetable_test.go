package engine

import (
	"math/rand/v2"
	"testing"
)

// TestRemoteTableAgainstMap runs random inserts, gets and removes against
// a map, over few GUIDs and a small number range (long probe runs,
// wrap-around) and over whole 64- and 32-bit values, checking the table
// after every hundred steps.
func TestRemoteTableAgainstMap(t *testing.T) {
	for _, qpn := range []bool{false, true} {
		for _, span := range []uint32{64, 0} {
			r := rand.New(rand.NewPCG(7, uint64(span)))
			draw := func() remoteKey {
				if span == 0 {
					return remoteKey{r.Uint64(), r.Uint32()}
				}
				return remoteKey{uint64(r.IntN(3)) << 40, r.Uint32N(span)}
			}
			runRemoteTable(t, newRemoteTable(qpn), draw, r, 100000)
		}
	}
}

// TestRemoteTableFullCollisions gives a table the seed that makes every
// pair with one GUID hash alike (mum's zero operand): the pairs then share
// one probe run, and each is still told apart by its key.
func TestRemoteTableFullCollisions(t *testing.T) {
	const g = 0x0002c90300a1b2c3
	for _, qpn := range []bool{false, true} {
		tab := newRemoteTable(qpn)
		tab.seed[0] = g ^ 0xe7037ed1a0b428db
		if tab.hash(remoteKey{g, 1}) != tab.hash(remoteKey{g, 2}) {
			t.Fatal("the crafted seed does not make the pairs collide")
		}
		r := rand.New(rand.NewPCG(3, 4))
		draw := func() remoteKey { return remoteKey{g, r.Uint32N(200)} }
		runRemoteTable(t, tab, draw, r, 20000)
	}
}

func runRemoteTable(t *testing.T, tab remoteTable, draw func() remoteKey, r *rand.Rand, steps int) {
	t.Helper()
	e := &Engine{conns: newIDTable()}
	ref := map[remoteKey]*conn{}
	in := map[*conn]bool{}
	next := uint32(1)
	for step := range steps {
		k := draw()
		switch op := r.IntN(10); {
		case op < 4 && len(ref) < 2000:
			c := &conn{localID: next, remoteCAGUID: k.guid, remoteID: k.id, remoteQPN: k.id}
			next++
			e.conns.put(c)
			old := tab.insert(c)
			if old != ref[k] {
				t.Fatalf("qpn %v step %d: insert %v found %p, want %p", tab.qpn, step, k, old, ref[k])
			}
			if old == nil {
				ref[k], in[c] = c, true
			}
		case op < 7:
			if c := ref[k]; c != nil {
				tab.remove(c)
				delete(ref, k)
				delete(in, c)
				e.conns.remove(c.localID)
			}
		default:
			if got := tab.get(k); got != ref[k] {
				t.Fatalf("qpn %v step %d: get(%v) = %p, want %p", tab.qpn, step, k, got, ref[k])
			}
		}
		if tab.len() != len(ref) {
			t.Fatalf("qpn %v step %d: len %d, want %d", tab.qpn, step, tab.len(), len(ref))
		}
		if step%100 == 0 && !tab.check(e, func(c *conn) bool { return in[c] }) {
			t.Fatalf("qpn %v step %d: check failed", tab.qpn, step)
		}
	}
	for k, c := range ref {
		if tab.get(k) != c {
			t.Fatalf("qpn %v: %v lost", tab.qpn, k)
		}
		tab.remove(c)
	}
	if tab.len() != 0 {
		t.Fatalf("qpn %v: %d entries left", tab.qpn, tab.len())
	}
}
