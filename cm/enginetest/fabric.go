package enginetest

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// Epoch is the time on a new Fabric's clock.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// maxSteps bounds the loops that run the fabric, so that a livelock fails
// a test instead of hanging it.
const maxSteps = 1 << 20

// Option configures NewFabric.
type Option func(*options)

type options struct {
	seed    uint64
	latency time.Duration
	config  func(node int, c *engine.Config)
	policy  Policy
}

// WithSeed seeds every random choice of the fabric and its engines
// (default 1).
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// WithLatency sets the one-way delay of every link (default 0: a MAD sent
// now is due now).
func WithLatency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// WithConfig lets the test adjust the configuration of each engine the
// fabric boots, at NewFabric and at every Restart; node is the node's
// number. The fabric's defaults are a GUID per node, a CA ACK delay of 15
// (rxe's) and a seeded Source; fn may replace any of them.
func WithConfig(fn func(node int, c *engine.Config)) Option {
	return func(o *options) { o.config = fn }
}

// WithPolicy gives every node the policy p.
func WithPolicy(p Policy) Option { return func(o *options) { o.policy = p } }

// Stats counts what happened on the wire.
type Stats struct {
	// Sent counts MADs the engines emitted.
	Sent uint64
	// Delivered counts MADs given to Engine.Receive, duplicates included.
	Delivered uint64
	// Dropped counts MADs removed by a Drop fault.
	Dropped uint64
	// Lost counts MADs lost to a partition or a crashed receiver.
	Lost uint64
	// Duplicated counts MADs a Duplicate fault sent twice.
	Duplicated uint64
	// Delayed counts MADs a Delay or Reorder fault held back.
	Delayed uint64
}

// ErrCrashed is returned by Node methods on a crashed node.
var ErrCrashed = errors.New("enginetest: node is crashed")

// Fabric is a simulated network of engines with a virtual clock.
type Fabric struct {
	opts   options
	now    time.Time
	nodes  []*Node
	byGID  map[rdma.GID]int
	rng    *rand.Rand
	seq    uint64
	queue  packetQueue
	faults []*rule
	down   map[[2]int]bool
	events []Event
	stats  Stats
	errs   []error

	onMessage func(Message)
	flushing  bool
}

type packet struct {
	at       time.Time
	seq      uint64
	from, to int // 0-based
	retry    uint8
	dup      bool
	mad      [mad.MADSize]byte
}

// NewFabric returns a fabric of n nodes, numbered 1 to n, with every link
// up and no faults. The clock reads Epoch.
func NewFabric(n int, opts ...Option) *Fabric {
	o := options{seed: 1}
	for _, fn := range opts {
		fn(&o)
	}
	f := &Fabric{
		opts:  o,
		now:   Epoch,
		byGID: map[rdma.GID]int{},
		rng:   rand.New(rand.NewPCG(o.seed, o.seed^0x656e67696e657465)),
		down:  map[[2]int]bool{},
	}
	for i := range n {
		ip := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		nd := &Node{f: f, idx: i, ip: ip, gid: rdma.GIDFromAddr(ip),
			guid: 0x525400fffe000000 | uint64(i+1), policy: o.policy}
		f.nodes = append(f.nodes, nd)
		f.byGID[nd.gid] = i
		nd.boot()
	}
	return f
}

// Node returns node number i (from 1). It panics if there is none.
func (f *Fabric) Node(i int) *Node { return f.nodes[i-1] }

// Nodes returns every node, node 1 first.
func (f *Fabric) Nodes() []*Node { return append([]*Node(nil), f.nodes...) }

// Now returns the virtual time.
func (f *Fabric) Now() time.Time { return f.now }

// Elapsed returns the virtual time since Epoch.
func (f *Fabric) Elapsed() time.Duration { return f.now.Sub(Epoch) }

// Stats returns the wire counters.
func (f *Fabric) Stats() Stats { return f.stats }

// InFlight returns how many MADs are on the wire.
func (f *Fabric) InFlight() int { return len(f.queue) }

// Events returns every event the nodes reported, in the order they
// reported them.
func (f *Fabric) Events() []Event { return append([]Event(nil), f.events...) }

// Err returns the problems the fabric found, joined, or nil: engine
// invariant violations, QP transitions qp.Check refused, MADs to unknown
// addresses, and errors from a Policy's answers.
func (f *Fabric) Err() error { return errors.Join(f.errs...) }

// OnMessage sets a function called with the fate of every MAD: once when
// it is delivered (twice for a duplicated MAD), or once when it is dropped
// or lost. nil removes it.
func (f *Fabric) OnMessage(fn func(Message)) { f.onMessage = fn }

// Partition cuts both directions between nodes i and j: MADs sent while
// the link is down are lost, and so are MADs in flight that would arrive
// while it is down.
func (f *Fabric) Partition(i, j int) {
	f.down[[2]int{i - 1, j - 1}] = true
	f.down[[2]int{j - 1, i - 1}] = true
}

// Heal restores both directions between nodes i and j.
func (f *Fabric) Heal(i, j int) {
	delete(f.down, [2]int{i - 1, j - 1})
	delete(f.down, [2]int{j - 1, i - 1})
}

// Crash stops node i: its engine and every ID in it are lost, MADs to it
// vanish, and Node.Engine returns nil until Restart. MADs it sent before
// the crash are still delivered.
func (f *Fabric) Crash(i int) {
	n := f.nodes[i-1]
	n.eng, n.crashed = nil, true
	n.qps = nil
}

// Restart boots node i again with a new engine, as after a reboot: no IDs,
// a new seed for its communication IDs, QP numbers starting over. A node
// that is not crashed loses its engine as in Crash. Events already
// recorded are kept.
func (f *Fabric) Restart(i int) {
	n := f.nodes[i-1]
	n.boots++
	n.boot()
}

// Settle delivers every MAD due now, and every MAD the deliveries cause
// that is due now, without moving the clock.
func (f *Fabric) Settle() {
	f.flush()
	for f.deliverOne() {
	}
}

// Step does the next thing the simulation would do and reports whether
// there was anything to do: it delivers the oldest MAD due now; if none is
// due, it moves the clock to the next arrival or engine deadline and fires
// the timers due then, or, if no timer is due, delivers the MAD that
// arrives then. It reports false, leaving the clock alone, when nothing is
// in flight and no timer is armed.
func (f *Fabric) Step() bool {
	f.flush()
	if f.deliverOne() {
		return true
	}
	t := f.next()
	if t.IsZero() {
		return false
	}
	if t.After(f.now) {
		f.now = t
	}
	if !f.tick() {
		f.deliverOne()
	}
	return true
}

// Advance runs the fabric for d of virtual time: MADs are delivered and
// timers fire at their times, and the clock ends at Now()+d.
func (f *Fabric) Advance(d time.Duration) {
	end := f.now.Add(d)
	for range maxSteps {
		f.Settle()
		t := f.next()
		if t.IsZero() || t.After(end) {
			f.now = end
			f.Settle()
			return
		}
		if t.After(f.now) {
			f.now = t
		}
		f.tick()
	}
	f.errs = append(f.errs, errors.New("enginetest: Advance: no progress"))
}

// RunUntilIdle runs the fabric until no MAD is in flight and no timer is
// armed, and reports whether it got there (false after a million steps).
// The clock stops at the last delivery or timer.
func (f *Fabric) RunUntilIdle() bool { return f.RunUntil(nil) }

// RunUntil runs the fabric until cond returns true and reports whether it
// did; it returns false if the fabric goes idle first. cond is checked
// before the clock first moves and then each time everything due at the
// current time has been delivered. A nil cond means RunUntilIdle.
func (f *Fabric) RunUntil(cond func() bool) bool {
	for range maxSteps {
		f.Settle()
		if cond != nil && cond() {
			return true
		}
		t := f.next()
		if t.IsZero() {
			return cond == nil
		}
		if t.After(f.now) {
			f.now = t
		}
		f.tick()
	}
	return false
}

// next returns the earliest arrival or live engine deadline, or zero.
func (f *Fabric) next() time.Time {
	var t time.Time
	if len(f.queue) > 0 {
		t = f.queue[0].at
	}
	for _, n := range f.nodes {
		if n.eng == nil {
			continue
		}
		if d := n.eng.Deadline(); !d.IsZero() && (t.IsZero() || d.Before(t)) {
			t = d
		}
	}
	return t
}

// tick fires the timers due now; it reports whether any engine had one.
func (f *Fabric) tick() bool {
	fired := false
	for _, n := range f.nodes {
		if n.eng == nil {
			continue
		}
		if d := n.eng.Deadline(); !d.IsZero() && !d.After(f.now) {
			n.eng.Tick(f.now)
			fired = true
		}
	}
	f.flush()
	return fired
}

// flush drains every node's Ready until none has anything. Calls made from
// inside (policies and hooks) leave their outputs to the running flush.
func (f *Fabric) flush() {
	if f.flushing {
		return
	}
	f.flushing = true
	defer func() { f.flushing = false }()
	for range maxSteps {
		busy := false
		for _, n := range f.nodes {
			if n.eng != nil && n.eng.HasReady() {
				busy = true
				n.drain()
			}
		}
		if !busy {
			return
		}
	}
	f.errs = append(f.errs, errors.New("enginetest: engines never went quiet"))
}

// send puts a MAD on the wire from node i to node j (0-based), applying
// partitions and faults.
func (f *Fabric) send(i, j int, m *[mad.MADSize]byte, retry uint8) {
	f.stats.Sent++
	p := packet{at: f.now.Add(f.opts.latency), from: i, to: j, retry: retry, mad: *m}
	kind := kindOf(m[:])
	if f.down[[2]int{i, j}] {
		f.stats.Lost++
		f.report(&p, Lost)
		return
	}
	copies, delayed := 1, false
	for _, r := range f.faults {
		if !r.matches(i+1, j+1, kind) {
			continue
		}
		if r.Rate > 0 && r.Rate < 1 && f.rng.Float64() >= r.Rate {
			continue
		}
		r.hits++
		switch r.Action {
		case Drop:
			f.stats.Dropped++
			f.report(&p, Dropped)
			return
		case Duplicate:
			copies = 2
		case Delay:
			p.at = p.at.Add(r.Delay)
			delayed = true
		case Reorder:
			limit := r.Delay
			if limit <= 0 {
				limit = 10 * time.Millisecond
			}
			p.at = p.at.Add(time.Duration(f.rng.Int64N(int64(limit) + 1)))
			delayed = true
		}
	}
	if delayed {
		f.stats.Delayed++
	}
	if copies == 2 {
		f.stats.Duplicated++
	}
	for c := range copies {
		p.seq, p.dup = f.seq, c == 1
		f.seq++
		heap.Push(&f.queue, p)
	}
}

// deliverOne delivers the oldest MAD due now, if any.
func (f *Fabric) deliverOne() bool {
	if len(f.queue) == 0 || f.queue[0].at.After(f.now) {
		return false
	}
	p := heap.Pop(&f.queue).(packet)
	to, from := f.nodes[p.to], f.nodes[p.from]
	if to.eng == nil || f.down[[2]int{p.from, p.to}] {
		f.stats.Lost++
		f.report(&p, Lost)
		return true
	}
	f.stats.Delivered++
	f.report(&p, Delivered)
	to.eng.Receive(f.now, engine.Addr{Port: 1, GID: from.gid, QPN: 1, HopLimit: 64}, p.mad[:])
	f.flush()
	return true
}

func (f *Fabric) report(p *packet, fate Fate) {
	if f.onMessage == nil {
		return
	}
	f.onMessage(Message{At: f.now, From: p.from + 1, To: p.to + 1, Kind: kindOf(p.mad[:]),
		Retry: p.retry, Duplicate: p.dup, Fate: fate, MAD: p.mad[:]})
}

func kindOf(m []byte) mad.AttributeID {
	h, err := mad.ParseHeader(m)
	if err != nil {
		return 0
	}
	return h.AttributeID()
}

// Fate is what became of a MAD.
type Fate uint8

const (
	// Delivered: given to the receiver's engine.
	Delivered Fate = iota + 1
	// Dropped: removed by a Drop fault.
	Dropped
	// Lost: sent into a partition, or to a crashed node.
	Lost
)

func (f Fate) String() string {
	switch f {
	case Delivered:
		return "delivered"
	case Dropped:
		return "dropped"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("Fate(%d)", uint8(f))
}

// Message is one MAD's fate, as OnMessage reports it.
type Message struct {
	// At is the virtual time of the delivery or the loss.
	At time.Time
	// From and To are node numbers.
	From, To int
	// Kind is the MAD's attribute: mad.AttrREQ, mad.AttrREP, ...
	Kind mad.AttributeID
	// Retry counts the sender's earlier sends of the same MAD
	// (engine.Outbound.Retry): 0 for a first send.
	Retry uint8
	// Duplicate marks the second copy made by a Duplicate fault.
	Duplicate bool
	Fate      Fate
	// MAD is the 256-byte MAD; it is valid only during the call.
	MAD []byte
}

// String gives the time since Epoch, the link, the kind, the fate unless
// delivered, and whether it was a resend or a duplicate, e.g.
// "4.096s 2>1 REP resend 1".
func (m Message) String() string {
	s := fmt.Sprintf("%v %d>%d %v", m.At.Sub(Epoch), m.From, m.To, m.Kind)
	if m.Fate != Delivered {
		s += " " + m.Fate.String()
	}
	if m.Retry > 0 {
		s += fmt.Sprintf(" resend %d", m.Retry)
	}
	if m.Duplicate {
		s += " duplicate"
	}
	return s
}

// packetQueue orders MADs by arrival time, then by send order.
type packetQueue []packet

func (q packetQueue) Len() int { return len(q) }
func (q packetQueue) Less(i, j int) bool {
	if q[i].at.Equal(q[j].at) {
		return q[i].seq < q[j].seq
	}
	return q[i].at.Before(q[j].at)
}
func (q packetQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *packetQueue) Push(x any)   { *q = append(*q, x.(packet)) }
func (q *packetQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}
