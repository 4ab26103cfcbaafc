package enginetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/testfabric"
	"github.com/go-rdma/rdmacm/mad"
)

// Epoch is the time on a new Fabric's clock.
var Epoch = testfabric.Epoch

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
	f     *testfabric.Fabric
	nodes []*Node
}

// NewFabric returns a fabric of n nodes, numbered 1 to n, with every link
// up and no faults. The clock reads Epoch.
func NewFabric(n int, opts ...Option) *Fabric {
	o := options{seed: 1}
	for _, fn := range opts {
		fn(&o)
	}
	var configure func(*testfabric.Node, *engine.Config)
	if o.config != nil {
		configure = func(n *testfabric.Node, c *engine.Config) { o.config(n.Index+1, c) }
	}
	fab := &Fabric{f: testfabric.NewConfigured(n, o.seed, configure)}
	fab.f.Latency = o.latency
	fab.f.RecordEvents = true
	for _, tn := range fab.f.Nodes {
		tn.Policy = testfabric.Policy(o.policy)
		fab.nodes = append(fab.nodes, &Node{fab: fab, n: tn})
	}
	return fab
}

// Node returns node number i (from 1). It panics if there is none.
func (f *Fabric) Node(i int) *Node { return f.nodes[i-1] }

// Now returns the virtual time.
func (f *Fabric) Now() time.Time { return f.f.Now }

// Elapsed returns the virtual time since Epoch.
func (f *Fabric) Elapsed() time.Duration { return f.f.Now.Sub(Epoch) }

// Stats returns the wire counters.
func (f *Fabric) Stats() Stats { return Stats(f.f.Stats()) }

// InFlight returns how many MADs are on the wire.
func (f *Fabric) InFlight() int { return f.f.InFlight() }

// Events returns every event the nodes reported, in the order they
// reported them.
func (f *Fabric) Events() []Event { return f.events(0) }

// events returns the events of node number i, or of every node for 0.
func (f *Fabric) events(i int) []Event {
	var evs []Event
	for _, ev := range f.f.Events {
		if i == 0 || ev.Node == i {
			evs = append(evs, Event(ev))
		}
	}
	return evs
}

// Err returns the problems the fabric found, joined, or nil: engine
// invariant violations, QP transitions qp.Check refused, MADs to unknown
// addresses, and errors from a Policy's answers.
func (f *Fabric) Err() error { return f.f.Err() }

// OnMessage sets a function called with the fate of every MAD: once when
// it is delivered (twice for a duplicated MAD), or once when it is dropped
// or lost. nil removes it.
func (f *Fabric) OnMessage(fn func(Message)) {
	if fn == nil {
		f.f.OnMessage = nil
		return
	}
	f.f.OnMessage = func(m testfabric.Message) {
		fn(Message{At: m.At, From: m.From + 1, To: m.To + 1, Kind: m.Kind, Retry: m.Retry,
			Duplicate: m.Duplicate, Fate: Fate(m.Fate), MAD: m.MAD})
	}
}

// Partition cuts both directions between nodes i and j: MADs sent while
// the link is down are lost, and so are MADs in flight that would arrive
// while it is down.
func (f *Fabric) Partition(i, j int) { f.f.Partition(i-1, j-1) }

// Heal restores both directions between nodes i and j.
func (f *Fabric) Heal(i, j int) { f.f.Heal(i-1, j-1) }

// Crash stops node i: its engine and every ID in it are lost, MADs to it
// vanish, and Node.Engine returns nil until Restart. MADs it sent before
// the crash are still delivered.
func (f *Fabric) Crash(i int) { f.f.Crash(i - 1) }

// Restart boots node i again with a new engine, as after a reboot: no IDs,
// a new seed for its communication IDs, QP numbers starting over. A node
// that is not crashed loses its engine as in Crash. Events already
// recorded are kept.
func (f *Fabric) Restart(i int) { f.f.Restart(i - 1) }

// Settle delivers every MAD due now, and every MAD the deliveries cause
// that is due now, without moving the clock.
func (f *Fabric) Settle() { f.f.Stabilize() }

// Step does the next thing the simulation would do and reports whether
// there was anything to do: it delivers the oldest MAD due now; if none is
// due, it moves the clock to the next arrival or engine deadline and fires
// the timers due then, or, if no timer is due, delivers the MAD that
// arrives then. It reports false, leaving the clock alone, when nothing is
// in flight and no timer is armed.
func (f *Fabric) Step() bool { return f.f.Step() }

// Advance runs the fabric for d of virtual time: MADs are delivered and
// timers fire at their times, and the clock ends at Now()+d.
func (f *Fabric) Advance(d time.Duration) { f.f.Advance(d) }

// RunUntilIdle runs the fabric until no MAD is in flight and no timer is
// armed, and reports whether it got there (false after a million steps).
// The clock stops at the last delivery or timer.
func (f *Fabric) RunUntilIdle() bool { return f.f.RunUntil(nil, maxSteps) }

// RunUntil runs the fabric until cond returns true and reports whether it
// did; it returns false if the fabric goes idle first. cond is checked
// before the clock first moves and then each time everything due at the
// current time has been delivered. A nil cond means RunUntilIdle.
func (f *Fabric) RunUntil(cond func() bool) bool { return f.f.RunUntil(cond, maxSteps) }

// Fate is what became of a MAD.
type Fate uint8

const (
	// Delivered: given to the receiver's engine.
	Delivered = Fate(testfabric.Delivered)
	// Dropped: removed by a Drop fault.
	Dropped = Fate(testfabric.Dropped)
	// Lost: sent into a partition, or to a crashed node.
	Lost = Fate(testfabric.Lost)
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
