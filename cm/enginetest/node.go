package enginetest

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/testfabric"
	"github.com/go-rdma/rdmacm/rdma"
)

// Node is one CA on the fabric: an engine and its addresses.
type Node struct {
	fab *Fabric
	n   *testfabric.Node
}

// Policy makes a node answer events by itself. The zero Policy answers
// nothing.
type Policy struct {
	// AutoAccept accepts every CONNECT_REQUEST (with a QP number of the
	// node's, the requested responder resources and initiator depth, and
	// the REQ's ECE) and answers every SIDR_REQUEST.
	AutoAccept bool
	// AutoEstablish sends the RTU on every CONNECT_REPLY.
	AutoEstablish bool
	// AutoDisconnect answers every DISCONNECT_REQUEST with a DREP.
	AutoDisconnect bool
	// AutoDestroy destroys IDs once they are finished: TIMEWAIT_EXIT,
	// REJECTED, REQ_ERROR, REP_ERROR, SIDR_REPLY and SIDR_ERROR.
	AutoDestroy bool
	// ManageQP lets the engine drive the QPs of the connections this node
	// makes or accepts through Node's helpers and AutoAccept; the fabric
	// checks each transition with qp.Check.
	ManageQP bool
}

// Event is an event a node reported. Its slices are the node's own copies.
type Event struct {
	engine.Event
	// At is the virtual time of the report.
	At time.Time
	// Node is the number of the node that reported it.
	Node int
}

// String gives the time since Epoch, the node and the event, e.g.
// "4.096s 1: CONNECT_REPLY id=0x6b8b4567".
func (ev Event) String() string {
	return fmt.Sprintf("%v %d: %v", ev.At.Sub(Epoch), ev.Node, &ev.Event)
}

// Num returns the node's number, from 1.
func (n *Node) Num() int { return n.n.Index + 1 }

// IP returns the node's address, 192.0.2.<number>.
func (n *Node) IP() netip.Addr { return n.n.IP }

// GID returns the node's RoCE v2 GID (its IPv4-mapped address).
func (n *Node) GID() rdma.GID { return n.n.GID }

// Engine returns the node's engine, or nil while it is crashed. A test
// may call any of its methods with Fabric.Now; the fabric collects the
// outputs at its next Settle, Step, Advance or Run (or use Do, which
// collects them at once).
func (n *Node) Engine() *engine.Engine { return n.n.Engine }

// Crashed reports whether the node is crashed.
func (n *Node) Crashed() bool { return n.n.Crashed }

// SetPolicy sets the node's policy.
func (n *Node) SetPolicy(p Policy) { n.n.Policy = testfabric.Policy(p) }

// OnEvent sets a function called with every event the node reports,
// after the node's Policy has answered it. It may call the node's
// methods. nil removes it.
func (n *Node) OnEvent(fn func(n *Node, ev Event)) {
	if fn == nil {
		n.n.OnEvent = nil
		return
	}
	n.n.OnEvent = func(_ *testfabric.Node, ev *engine.Event) {
		fn(n, Event{Event: *ev, At: n.fab.f.Now, Node: n.Num()})
	}
}

// Events returns the events the node reported, oldest first.
func (n *Node) Events() []Event { return n.fab.events(n.Num()) }

// State returns the state of one of the node's IDs.
func (n *Node) State(id engine.ID) (engine.State, bool) {
	if n.n.Engine == nil {
		return 0, false
	}
	return n.n.Engine.State(id)
}

// Do calls fn with the node's engine and the virtual time, then collects
// the engine's outputs (MADs go on the wire, events are recorded and
// answered). It returns fn's error, or ErrCrashed.
func (n *Node) Do(fn func(e *engine.Engine, now time.Time) error) error {
	if n.n.Engine == nil {
		return ErrCrashed
	}
	err := fn(n.n.Engine, n.fab.f.Now)
	n.fab.f.Flush()
	return err
}

// Listen makes an rdma_cm listener on TCP port space port (any address,
// RC).
func (n *Node) Listen(port uint16) (engine.ID, error) {
	var id engine.ID
	err := n.Do(func(e *engine.Engine, now time.Time) (err error) {
		id, err = e.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port})
		return err
	})
	return id, err
}

// ConnectParams returns what rdma_connect would ask for from n to port on
// node to, over the RoCE path the rdma_cm builds on rxe (Linux 6.1: MTU
// 1024, hop limit 64, packet lifetime 18), with a new QP number of n's.
// Tests change fields and pass it to ConnectWith.
func (n *Node) ConnectParams(to *Node, port uint16) engine.ConnectParams {
	return n.n.ConnectParams(to.n, port)
}

// Connect sends a REQ from n to port on node to, with ConnectParams.
func (n *Node) Connect(to *Node, port uint16) (engine.ID, error) {
	return n.ConnectWith(n.ConnectParams(to, port))
}

// ConnectWith sends a REQ with p.
func (n *Node) ConnectWith(p engine.ConnectParams) (engine.ID, error) {
	var id engine.ID
	err := n.Do(func(e *engine.Engine, now time.Time) (err error) {
		id, err = e.Connect(now, p)
		return err
	})
	return id, err
}

// Accept answers a CONNECT_REQUEST with a REP: a new QP number of n's,
// one responder resource and initiator depth of one.
func (n *Node) Accept(id engine.ID) error {
	return n.Do(func(e *engine.Engine, now time.Time) error {
		return e.Accept(now, id, n.n.AcceptParams(1, 1))
	})
}

// Establish sends the RTU of a connection whose REP arrived.
func (n *Node) Establish(id engine.ID) error {
	return n.Do(func(e *engine.Engine, now time.Time) error { return e.Establish(now, id, nil) })
}

// Disconnect sends a DREQ, or the DREP that answers one.
func (n *Node) Disconnect(id engine.ID) error {
	return n.Do(func(e *engine.Engine, now time.Time) error { return e.Disconnect(now, id, nil) })
}

// Destroy destroys an ID.
func (n *Node) Destroy(id engine.ID) error {
	return n.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, id) })
}
