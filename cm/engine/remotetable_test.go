package engine

import "testing"

// collidingGUID returns a GUID g2 such that (g2, id2) folds to the same
// 64 bits as (g1, id1).
func collidingGUID(g1 uint64, id1, id2 uint32) uint64 {
	const m = 0x9e3779b97f4a7c15
	inv := uint64(m) // Newton's iteration for m's inverse mod 2^64
	for range 6 {
		inv *= 2 - m*inv
	}
	return g1 - (uint64(id2)-uint64(id1))*inv
}

// TestRemoteTableCollisions drives a table through pairs whose folds
// collide: the second goes to the slow part, every pair stays reachable,
// duplicates are found in either part, and removal leaves no stale entry.
func TestRemoteTableCollisions(t *testing.T) {
	for _, qpn := range []bool{false, true} {
		e := &Engine{conns: newIDTable()}
		tab := newRemoteTable(qpn)
		mk := func(local uint32, guid uint64, id uint32) *conn {
			c := &conn{localID: local, remoteCAGUID: guid, remoteID: id, remoteQPN: id}
			e.conns.put(c)
			return c
		}
		const g1, id1, id2 = 0x0002c90300a1b2c3, 0x1234, 0x99887766
		g2 := collidingGUID(g1, id1, id2)
		if fold(remoteKey{g1, id1}) != fold(remoteKey{g2, id2}) {
			t.Fatal("test keys do not collide")
		}
		c1, c2 := mk(1, g1, id1), mk(2, g2, id2)
		slowOf := map[*conn]bool{}
		in := func(c *conn) (bool, bool) { s, ok := slowOf[c]; return ok, s }
		for _, c := range []*conn{c1, c2} {
			old, slow := tab.insert(c)
			if old != nil {
				t.Fatalf("qpn %v: insert %d found %d", qpn, c.localID, old.localID)
			}
			slowOf[c] = slow
		}
		if slowOf[c1] || !slowOf[c2] {
			t.Fatalf("qpn %v: slow parts %v %v, want false true", qpn, slowOf[c1], slowOf[c2])
		}
		if !tab.check(e, in) || tab.len() != 2 {
			t.Fatalf("qpn %v: check failed or len %d", qpn, tab.len())
		}
		if tab.get(tab.keyOf(c1)) != c1 || tab.get(tab.keyOf(c2)) != c2 || tab.get(remoteKey{g2, id1}) != nil {
			t.Fatalf("qpn %v: lookups wrong", qpn)
		}
		if old, _ := tab.insert(mk(3, g2, id2)); old != c2 {
			t.Fatalf("qpn %v: duplicate of the slow entry not found", qpn)
		}
		if old, _ := tab.insert(mk(4, g1, id1)); old != c1 {
			t.Fatalf("qpn %v: duplicate of the fast entry not found", qpn)
		}
		// With the fast slot free, the slow entry is still found, and a
		// new pair with its key is refused.
		tab.remove(c1, slowOf[c1])
		delete(slowOf, c1)
		if tab.get(tab.keyOf(c2)) != c2 || tab.get(tab.keyOf(c1)) != nil {
			t.Fatalf("qpn %v: lookups after removal wrong", qpn)
		}
		if old, _ := tab.insert(mk(5, g2, id2)); old != c2 {
			t.Fatalf("qpn %v: duplicate of the slow entry lost after the fast one left", qpn)
		}
		c6 := mk(6, g1, id1)
		old, slow := tab.insert(c6)
		if old != nil || slow {
			t.Fatalf("qpn %v: reinsert got %v slow %v", qpn, old, slow)
		}
		slowOf[c6] = slow
		if !tab.check(e, in) {
			t.Fatalf("qpn %v: check failed", qpn)
		}
		tab.remove(c2, true)
		tab.remove(c6, false)
		if tab.len() != 0 {
			t.Fatalf("qpn %v: %d entries left", qpn, tab.len())
		}
	}
}
