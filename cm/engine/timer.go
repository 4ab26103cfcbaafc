package engine

import "time"

// timerHeap is a 4-ary min-heap of connections by deadline. Each
// connection has at most one timer: its outstanding MAD's
// retransmission, or TimeWait. heapIdx makes removal O(log n). Each entry
// carries its deadline, so sifting compares entries without reading the
// conns (TimeWait keeps thousands of them cold); a conn is written only
// when its entry moves, and four children per node halve the levels an
// entry moves through.
type timerHeap []timerEntry

const heapArity = 4

type timerEntry struct {
	deadline int64 // Engine.now scale
	c        *conn
}

func (h timerHeap) less(i, j int) bool { return h[i].deadline < h[j].deadline }

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].c.heapIdx = int32(i)
	h[j].c.heapIdx = int32(j)
}

func (h timerHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / heapArity
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h timerHeap) down(i int) bool {
	i0, n := i, len(h)
	for {
		l := heapArity*i + 1
		if l >= n {
			break
		}
		j := l // the earliest child
		for k := l + 1; k < min(l+heapArity, n); k++ {
			if h.less(k, j) {
				j = k
			}
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *timerHeap) push(c *conn, deadline int64) {
	c.heapIdx = int32(len(*h))
	*h = append(*h, timerEntry{deadline, c})
	h.up(len(*h) - 1)
}

func (h *timerHeap) remove(c *conn) {
	i := int(c.heapIdx)
	old := *h
	n := len(old) - 1
	if i != n {
		old.swap(i, n)
	}
	old[n] = timerEntry{}
	*h = old[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	c.heapIdx = -1
}

// arm sets c's timer to fire d from now. Every change to the heap goes
// through arm and disarm, which note when the earliest timer may have
// changed (Deadline): only when c's entry is, or becomes, the root. A
// removal elsewhere cannot make a new root: the entry moved into the gap
// is not earlier than the root.
func (e *Engine) arm(c *conn, d time.Duration) {
	t := e.now + int64(d)
	if c.heapIdx >= 0 {
		i := int(c.heapIdx)
		if i == 0 {
			e.rootMoved = true
		}
		e.timers[i].deadline = t
		if !e.timers.down(i) {
			e.timers.up(i)
		}
	} else {
		e.timers.push(c, t)
	}
	if c.heapIdx == 0 {
		e.rootMoved = true
	}
}

func (e *Engine) disarm(c *conn) {
	if c.heapIdx >= 0 {
		if c.heapIdx == 0 {
			e.rootMoved = true
		}
		e.timers.remove(c)
	}
}
