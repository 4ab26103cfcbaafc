package enginetest

import (
	"fmt"
	"time"

	"github.com/go-rdma/rdmacm/internal/testfabric"
	"github.com/go-rdma/rdmacm/mad"
)

// Any, as a Fault's From or To, matches every node.
const Any = 0

// Action is what a Fault does to a MAD it matches.
type Action uint8

const (
	// Drop removes the MAD from the wire.
	Drop = Action(testfabric.Drop)
	// Duplicate delivers the MAD twice, the copy right after the original.
	Duplicate = Action(testfabric.Duplicate)
	// Delay holds the MAD back for the Fault's Delay.
	Delay = Action(testfabric.Delay)
	// Reorder holds the MAD back for a random time, uniform between 0 and
	// the Fault's Delay (10 ms if Delay is 0), drawn from the seeded
	// generator, so that MADs sent after it can overtake it.
	Reorder = Action(testfabric.Reorder)
)

func (a Action) String() string {
	switch a {
	case Drop:
		return "drop"
	case Duplicate:
		return "duplicate"
	case Delay:
		return "delay"
	case Reorder:
		return "reorder"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Fault is a rule for the MADs the fabric sends. A MAD matches when its
// sender, receiver and kind match (the zero value of each matches
// everything). Faults are applied when a MAD is sent, in the order they
// were added; a Drop ends the list, the other actions add up.
//
// For example, Fault{Kind: mad.AttrREP, Action: Drop, Count: 1} loses the
// first REP, and Fault{From: 1, To: 2, Action: Drop, Rate: 0.3} loses 30%
// of what node 1 sends to node 2.
type Fault struct {
	// From and To are node numbers, or Any.
	From, To int
	// Kind is the MAD's attribute (mad.AttrREQ, mad.AttrREP, ...), or 0
	// for every kind.
	Kind   mad.AttributeID
	Action Action
	// Delay is the delay of Delay and the largest delay of Reorder.
	Delay time.Duration
	// Rate is the fraction of matching MADs the fault hits, decided per
	// MAD by the fabric's seeded generator; 0 (or 1) means every one.
	Rate float64
	// Count is how many MADs the fault hits at most; 0 means no limit.
	Count int
}

// AddFault installs ft and returns a function that removes it. It panics
// if ft.Action is not one of the Actions.
func (f *Fabric) AddFault(ft Fault) (remove func()) {
	if ft.Action < Drop || ft.Action > Reorder {
		panic(fmt.Sprintf("enginetest: AddFault: bad action %v", ft.Action))
	}
	// Node numbers from 1 become indexes from 0, and Any becomes -1.
	return f.f.AddFault(testfabric.Fault{From: ft.From - 1, To: ft.To - 1, Kind: ft.Kind,
		Action: testfabric.Action(ft.Action), Delay: ft.Delay, Rate: ft.Rate, Count: ft.Count})
}

// ClearFaults removes every fault. Partitions stay.
func (f *Fabric) ClearFaults() { f.f.ClearFaults() }
