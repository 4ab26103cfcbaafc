package engine

// idTable holds the IDs by local ID: open addressing with linear probing
// over a power-of-two array kept at most 3/4 full (a probe reads 16-byte
// slots in line; a smaller array stays in cache). Each slot holds the
// local ID beside the *conn, so a probe compares IDs without touching the
// conns it passes (TimeWait keeps thousands of them cold), and a hit
// reads one cache line. Local ID 0 marks an empty slot: the engine never
// uses it. The engine draws local IDs from its Source, not from the
// wire, so a multiplicative hash spreads them whatever their pattern; an
// ID named by a received MAD only probes. It does the work of a
// map[uint32]*conn without the generic map's hashing.
type idTable struct {
	slots []idSlot
	n     int
	shift uint8 // 64 - log2(len(slots)): home takes the hash's top bits
}

type idSlot struct {
	id uint32 // 0: empty
	c  *conn
}

const idTableMin = 16

func newIDTable() idTable {
	return idTable{slots: make([]idSlot, idTableMin), shift: 64 - 4}
}

// home is the slot where the probe for id starts (Fibonacci hashing).
func (t *idTable) home(id uint32) int {
	return int((uint64(id) * 0x9e3779b97f4a7c15) >> t.shift)
}

func (t *idTable) len() int { return t.n }

// get returns the ID id, or nil (always for 0).
func (t *idTable) get(id uint32) *conn {
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.id {
		case id:
			return s.c // nil for id 0: an empty slot
		case 0:
			return nil
		}
	}
}

// put adds c, whose local ID must be neither 0 nor in the table.
func (t *idTable) put(c *conn) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	t.place(c)
	t.n++
}

func (t *idTable) place(c *conn) {
	mask := len(t.slots) - 1
	i := t.home(c.localID)
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = idSlot{c.localID, c}
}

func (t *idTable) grow() {
	old := t.slots
	t.slots = make([]idSlot, 2*len(old))
	t.shift--
	for _, s := range old {
		if s.id != 0 {
			t.place(s.c)
		}
	}
}

// remove deletes id if present. The entries after it in its probe run
// move back into the gap (no tombstones), as long as that does not put
// one before its home slot.
func (t *idTable) remove(id uint32) {
	if id == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for {
		k := t.slots[i].id
		if k == 0 {
			return
		}
		if k == id {
			break
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		k := t.slots[j].id
		if k == 0 {
			break
		}
		// The entry at j may fill the gap at i unless its home lies
		// cyclically in (i, j]: it would then sit before its home.
		if (j-t.home(k))&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = idSlot{}
	t.n--
}
