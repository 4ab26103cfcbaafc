package engine

// remoteTable is one of the kernel's remote tables: IDs by (remote CA
// GUID, remote ID) or by (remote CA GUID, remote QPN). Most entries sit in
// fast under a 64-bit fold of the pair, which takes the map's 64-bit
// path; an entry whose fold another pair already holds goes to slow,
// keyed by the pair itself. The keys come from the wire, so a crafted
// collision costs a generic map operation (both maps are seeded), never
// a chain.
type remoteTable struct {
	fast map[uint64]*conn
	slow map[remoteKey]*conn
	qpn  bool // keyed by remote QPN, not remote ID
}

func newRemoteTable(qpn bool) remoteTable {
	return remoteTable{fast: make(map[uint64]*conn), slow: make(map[remoteKey]*conn), qpn: qpn}
}

// fold maps a pair to 64 bits: distinct GUIDs stay distinct under the odd
// multiplier, so pairs of honest peers rarely meet.
func fold(k remoteKey) uint64 { return k.guid*0x9e3779b97f4a7c15 + uint64(k.id) }

func (t *remoteTable) keyOf(c *conn) remoteKey {
	if t.qpn {
		return c.qpnKey()
	}
	return c.key()
}

func (t *remoteTable) len() int { return len(t.fast) + len(t.slow) }

func (t *remoteTable) get(k remoteKey) *conn {
	if c := t.fast[fold(k)]; c != nil && t.keyOf(c) == k {
		return c
	}
	if len(t.slow) > 0 {
		return t.slow[k]
	}
	return nil
}

// insert records c under its key and reports whether it went to slow, or
// returns the ID the key already names.
func (t *remoteTable) insert(c *conn) (old *conn, slow bool) {
	k := t.keyOf(c)
	f := fold(k)
	o := t.fast[f]
	if o != nil && t.keyOf(o) == k {
		return o, false
	}
	if len(t.slow) > 0 {
		if o := t.slow[k]; o != nil {
			return o, false
		}
	}
	if o == nil {
		t.fast[f] = c
		return nil, false
	}
	t.slow[k] = c
	return nil, true
}

// remove deletes c, which insert recorded (in slow if slow).
func (t *remoteTable) remove(c *conn, slow bool) {
	if slow {
		delete(t.slow, t.keyOf(c))
	} else {
		delete(t.fast, fold(t.keyOf(c)))
	}
}

// check verifies that every entry is its ID's under the ID's own key, in
// the part the ID says, and that in reports whether an ID is in.
func (t *remoteTable) check(e *Engine, in func(*conn) (bool, bool)) bool {
	for f, c := range t.fast {
		if ok, slow := in(c); !ok || slow || fold(t.keyOf(c)) != f || e.conns.get(c.localID) != c {
			return false
		}
	}
	for k, c := range t.slow {
		if ok, slow := in(c); !ok || !slow || t.keyOf(c) != k || e.conns.get(c.localID) != c {
			return false
		}
	}
	return true
}
