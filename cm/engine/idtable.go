package engine

// idTable holds the IDs by local ID: open addressing with linear probing
// over a power-of-two array kept at most half full, each slot a *conn
// whose localID is the key. The engine draws local IDs from its Source,
// not from the wire, so a multiplicative hash spreads them whatever their
// pattern; an ID named by a received MAD only probes. It does the work
// of a map[uint32]*conn without the generic map's hashing.
type idTable struct {
	slots []*conn
	n     int
	shift uint8 // 64 - log2(len(slots)): home takes the hash's top bits
}

const idTableMin = 16

func newIDTable() idTable {
	return idTable{slots: make([]*conn, idTableMin), shift: 64 - 4}
}

// home is the slot where the probe for id starts (Fibonacci hashing).
func (t *idTable) home(id uint32) int {
	return int((uint64(id) * 0x9e3779b97f4a7c15) >> t.shift)
}

func (t *idTable) len() int { return t.n }

func (t *idTable) get(id uint32) *conn {
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		if c := t.slots[i]; c == nil || c.localID == id {
			return c
		}
	}
}

// put adds c, whose local ID must not be in the table.
func (t *idTable) put(c *conn) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.place(c)
	t.n++
}

func (t *idTable) place(c *conn) {
	mask := len(t.slots) - 1
	i := t.home(c.localID)
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = c
}

func (t *idTable) grow() {
	old := t.slots
	t.slots = make([]*conn, 2*len(old))
	t.shift--
	for _, c := range old {
		if c != nil {
			t.place(c)
		}
	}
}

// remove deletes id if present. The entries after it in its probe run
// move back into the gap (no tombstones), as long as that does not put
// one before its home slot.
func (t *idTable) remove(id uint32) {
	mask := len(t.slots) - 1
	i := t.home(id)
	for {
		c := t.slots[i]
		if c == nil {
			return
		}
		if c.localID == id {
			break
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		c := t.slots[j]
		if c == nil {
			break
		}
		// c may fill the gap at i unless its home lies cyclically in
		// (i, j]: it would then sit before its home.
		if (j-t.home(c.localID))&mask >= (j-i)&mask {
			t.slots[i] = c
			i = j
		}
	}
	t.slots[i] = nil
	t.n--
}
