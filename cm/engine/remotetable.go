package engine

import (
	"math/bits"
	"math/rand/v2"
)

// remoteTable is one of the kernel's remote tables: IDs by (remote CA
// GUID, remote ID) or by (remote CA GUID, remote QPN). It is open
// addressing with linear probing over a power-of-two array kept at most
// 3/4 full, with backward-shift removal. The keys come from the wire, so
// a slot's home is a hash keyed by two random words of the table's: a
// peer that cannot learn them cannot aim its pairs at one probe run. Each
// slot holds the full 64-bit hash beside the *conn, so a probe reads only
// the slot array; a conn is read only when its hash matches, to confirm
// the pair. Unlike a Go map it does not reseed whenever it empties, which
// a lone connection at a time would make it do on every handshake.
type remoteTable struct {
	slots []remoteSlot
	n     int
	shift uint8 // 64 - log2(len(slots)): home takes the hash's top bits
	qpn   bool  // keyed by remote QPN, not remote ID
	seed  [2]uint64
}

type remoteSlot struct {
	h uint64
	c *conn // nil: empty
}

const remoteTableMin = 8

func newRemoteTable(qpn bool) remoteTable {
	return remoteTable{slots: make([]remoteSlot, remoteTableMin), shift: 64 - 3, qpn: qpn,
		seed: [2]uint64{rand.Uint64(), rand.Uint64()}}
}

// mix is wyhash's mum: the halves of the 128-bit product folded together.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hash is the runtime's fallback map hash for a 64-bit key (two mum rounds
// with wyhash's constants), keyed by both seed words and taking the whole
// pair.
func (t *remoteTable) hash(k remoteKey) uint64 {
	const m1, m2, m5 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x1d8e4e27c47d124f
	return mix(m5^12, mix(k.guid^t.seed[0]^m2, uint64(k.id)^t.seed[1]^m1))
}

func (t *remoteTable) home(h uint64) int { return int(h >> t.shift) }

func (t *remoteTable) keyOf(c *conn) remoteKey {
	if t.qpn {
		return c.qpnKey()
	}
	return c.key()
}

func (t *remoteTable) len() int { return t.n }

func (t *remoteTable) get(k remoteKey) *conn {
	h := t.hash(k)
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.c == nil {
			return nil
		}
		if s.h == h && t.keyOf(s.c) == k {
			return s.c
		}
	}
}

// insert records c under its key, or returns the ID the key already
// names.
func (t *remoteTable) insert(c *conn) (old *conn) {
	k := t.keyOf(c)
	h := t.hash(k)
	mask := len(t.slots) - 1
	i := t.home(h)
	for ; t.slots[i].c != nil; i = (i + 1) & mask {
		if s := &t.slots[i]; s.h == h && t.keyOf(s.c) == k {
			return s.c
		}
	}
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
		i = t.home(h)
		for mask = len(t.slots) - 1; t.slots[i].c != nil; i = (i + 1) & mask {
		}
	}
	t.slots[i] = remoteSlot{h, c}
	t.n++
	return nil
}

func (t *remoteTable) grow() {
	old := t.slots
	t.slots = make([]remoteSlot, 2*len(old))
	t.shift--
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.c != nil {
			i := t.home(s.h)
			for t.slots[i].c != nil {
				i = (i + 1) & mask
			}
			t.slots[i] = s
		}
	}
}

// remove deletes c, which insert recorded. The entries after it in its
// probe run move back into the gap (no tombstones), as long as that does
// not put one before its home slot.
func (t *remoteTable) remove(c *conn) {
	h := t.hash(t.keyOf(c))
	mask := len(t.slots) - 1
	i := t.home(h)
	for t.slots[i].c != c {
		if t.slots[i].c == nil {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].c != nil; j = (j + 1) & mask {
		if (j-t.home(t.slots[j].h))&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = remoteSlot{}
	t.n--
}

// check verifies that every entry is an ID that in reports as in, under
// the hash of the ID's own key, with no gap between its home and its
// slot, and that the count is right.
func (t *remoteTable) check(e *Engine, in func(*conn) bool) bool {
	mask := len(t.slots) - 1
	n := 0
	for i, s := range t.slots {
		if s.c == nil {
			continue
		}
		n++
		if !in(s.c) || s.h != t.hash(t.keyOf(s.c)) || e.conns.get(s.c.localID) != s.c {
			return false
		}
		for j := t.home(s.h); j != i; j = (j + 1) & mask {
			if t.slots[j].c == nil {
				return false
			}
		}
	}
	return n == t.n
}
