package testfabric

import (
	"fmt"
	"time"

	"github.com/go-rdma/rdmacm/mad"
)

// Action is what a Fault (or Filter) does to a MAD.
type Action uint8

const (
	// Deliver lets the MAD through (Filter's answer).
	Deliver Action = iota
	// Drop removes the MAD from the wire.
	Drop
	// Duplicate delivers the MAD twice, the copy right after the original.
	Duplicate
	// Delay holds the MAD back for the Fault's Delay.
	Delay
	// Reorder holds the MAD back for a random time, uniform between 0 and
	// the Fault's Delay (10 ms if Delay is 0).
	Reorder
)

// Any, as a Fault's From or To, matches every node.
const Any = -1

// Fault is a rule for the MADs the fabric sends, as cm/enginetest's Fault
// documents it, except that From and To are node indexes (or Any). Faults
// apply when a MAD is sent, in the order they were added; a Drop ends the
// list, the other actions add up.
type Fault struct {
	From, To int
	Kind     mad.AttributeID
	Action   Action
	Delay    time.Duration
	Rate     float64
	Count    int
}

type rule struct {
	Fault
	hits int
}

func (r *rule) matches(from, to int, kind mad.AttributeID) bool {
	return (r.From == Any || r.From == from) && (r.To == Any || r.To == to) &&
		(r.Kind == 0 || r.Kind == kind) && (r.Count == 0 || r.hits < r.Count)
}

// AddFault installs ft and returns a function that removes it.
func (f *Fabric) AddFault(ft Fault) (remove func()) {
	r := &rule{Fault: ft}
	f.faults = append(f.faults, r)
	return func() {
		for i, o := range f.faults {
			if o == r {
				f.faults = append(f.faults[:i:i], f.faults[i+1:]...)
				return
			}
		}
	}
}

// ClearFaults removes every fault. Partitions stay.
func (f *Fabric) ClearFaults() { f.faults = nil }

// Partition cuts both directions between nodes i and j: MADs sent while
// the link is down are lost, and so are MADs in flight that would arrive
// while it is down.
func (f *Fabric) Partition(i, j int) {
	f.down[[2]int{i, j}] = true
	f.down[[2]int{j, i}] = true
}

// Heal restores both directions between nodes i and j.
func (f *Fabric) Heal(i, j int) {
	delete(f.down, [2]int{i, j})
	delete(f.down, [2]int{j, i})
}

// Fate is what became of a MAD.
type Fate uint8

const (
	// Delivered: given to the receiver's engine.
	Delivered Fate = iota + 1
	// Dropped: removed by a Drop fault or Filter.
	Dropped
	// Lost: sent into a partition, or to a crashed node.
	Lost
)

// Message is one MAD's fate, as cm/enginetest's Message documents it,
// except that From and To are node indexes.
type Message struct {
	At        time.Time
	From, To  int
	Kind      mad.AttributeID
	Retry     uint8
	Duplicate bool
	Fate      Fate
	MAD       []byte
	// DLID, SL and GRH are how the sender addressed the MAD on an
	// InfiniBand fabric (zero on RoCE): the fabric routed it by DLID.
	DLID uint16
	SL   uint8
	GRH  bool
}

var fateTrace = [...]string{Delivered: "", Dropped: " DROPPED", Lost: " LOST"}

func (f *Fabric) report(p *packet, fate Fate) {
	if f.Trace != nil {
		extra := fateTrace[fate]
		if p.dup && fate == Delivered {
			extra = " (duplicate)"
		}
		if f.ib {
			extra = routeTrace(p.route) + extra
		}
		f.tracef("%s>%s %s%s", f.Nodes[p.from].Name, f.Nodes[p.to].Name, mad.Describe(p.mad[:]), extra)
	}
	if f.OnMessage != nil {
		f.OnMessage(Message{At: f.Now, From: p.from, To: p.to, Kind: attrOf(p.mad[:]), Retry: p.retry,
			Duplicate: p.dup, Fate: fate, MAD: p.mad[:], DLID: p.route.dlid, SL: p.route.sl, GRH: p.route.grh})
	}
}

// routeTrace is the addressing a trace line shows on InfiniBand.
func routeTrace(r route) string {
	g := ""
	if r.grh {
		g = " grh"
	}
	return fmt.Sprintf(" [dlid=%d sl=%d%s]", r.dlid, r.sl, g)
}
