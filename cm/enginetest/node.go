package enginetest

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// Node is one CA on the fabric: an engine and its addresses.
type Node struct {
	f       *Fabric
	idx     int
	ip      netip.Addr
	gid     rdma.GID
	guid    uint64
	eng     *engine.Engine
	crashed bool
	boots   int
	policy  Policy
	onEvent func(*Node, Event)
	nextQPN uint32
	// qps holds the state of each QP the engine drives (ManageQP).
	qps map[uint32]qp.State
}

// Policy makes a node answer events by itself. The zero Policy answers
// nothing.
type Policy struct {
	// AutoAccept accepts every CONNECT_REQUEST (with a QP number of the
	// node's and the requested responder resources and initiator depth)
	// and answers every SIDR_REQUEST.
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

func (n *Node) boot() {
	f := n.f
	cfg := engine.Config{
		CAGUID:   n.guid,
		ACKDelay: 15,
		Source:   engine.NewSeededSource(f.opts.seed*1000+uint64(n.idx)+uint64(n.boots)*7919, 2),
	}
	if f.opts.config != nil {
		f.opts.config(n.idx+1, &cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		panic("enginetest: " + err.Error())
	}
	n.eng, n.crashed = e, false
	n.qps = map[uint32]qp.State{}
	n.nextQPN = 0x11
}

// Num returns the node's number, from 1.
func (n *Node) Num() int { return n.idx + 1 }

// Fabric returns the fabric the node is on.
func (n *Node) Fabric() *Fabric { return n.f }

// IP returns the node's address, 192.0.2.<number>.
func (n *Node) IP() netip.Addr { return n.ip }

// GID returns the node's RoCE v2 GID (its IPv4-mapped address).
func (n *Node) GID() rdma.GID { return n.gid }

// GUID returns the node's CA GUID.
func (n *Node) GUID() uint64 { return n.guid }

// Engine returns the node's engine, or nil while it is crashed. A test
// may call any of its methods with Fabric.Now; the fabric collects the
// outputs at its next Settle, Step, Advance or Run (or use Do, which
// collects them at once).
func (n *Node) Engine() *engine.Engine { return n.eng }

// Crashed reports whether the node is crashed.
func (n *Node) Crashed() bool { return n.crashed }

// Policy returns the node's policy.
func (n *Node) Policy() Policy { return n.policy }

// SetPolicy sets the node's policy.
func (n *Node) SetPolicy(p Policy) { n.policy = p }

// OnEvent sets a function called with every event the node reports,
// after the node's Policy has answered it. It may call the node's
// methods. nil removes it.
func (n *Node) OnEvent(fn func(n *Node, ev Event)) { n.onEvent = fn }

// Events returns the events the node reported, oldest first.
func (n *Node) Events() []Event {
	var evs []Event
	for _, ev := range n.f.events {
		if ev.Node == n.idx+1 {
			evs = append(evs, ev)
		}
	}
	return evs
}

// State returns the state of one of the node's IDs.
func (n *Node) State(id engine.ID) (engine.State, bool) {
	if n.eng == nil {
		return 0, false
	}
	return n.eng.State(id)
}

// Do calls fn with the node's engine and the virtual time, then collects
// the engine's outputs (MADs go on the wire, events are recorded and
// answered). It returns fn's error, or ErrCrashed.
func (n *Node) Do(fn func(e *engine.Engine, now time.Time) error) error {
	if n.eng == nil {
		return ErrCrashed
	}
	err := fn(n.eng, n.f.now)
	n.f.flush()
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
	qpn := n.newQPN()
	return engine.ConnectParams{
		PortSpace: rdma.PortSpaceTCP,
		Src:       netip.AddrPortFrom(n.ip, 40000+uint16(qpn)),
		Dst:       netip.AddrPortFrom(to.ip, port),
		Path: engine.Path{
			PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: n.gid, DGID: to.gid, HopLimit: 64,
				MTU: rdma.MTU1024, PacketLifeTime: 18},
			Port: 1,
			RoCE: true,
		},
		QPN:                qpn,
		ResponderResources: 1,
		InitiatorDepth:     1,
		RetryCount:         7,
		RNRRetryCount:      7,
		ManageQP:           n.policy.ManageQP,
	}
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
	return n.accept(id, 1, 1)
}

func (n *Node) accept(id engine.ID, resp, init uint8) error {
	return n.Do(func(e *engine.Engine, now time.Time) error {
		return e.Accept(now, id, engine.AcceptParams{QPN: n.newQPN(), ResponderResources: resp,
			InitiatorDepth: init, RNRRetryCount: 7, ManageQP: n.policy.ManageQP})
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

func (n *Node) newQPN() uint32 {
	q := n.nextQPN
	n.nextQPN++
	if n.nextQPN >= 1<<24 {
		n.nextQPN = 0x11
	}
	return q
}

// drain acts on the engine's Ready, as the engine's documentation asks of
// a driver.
func (n *Node) drain() {
	f, e := n.f, n.eng
	r := e.Ready()
	for i := range r.QPTransitions {
		n.applyQP(&r.QPTransitions[i])
	}
	for i := range r.Messages {
		o := &r.Messages[i]
		j, ok := f.byGID[o.To.GID]
		if !ok || o.To.QPN != 1 {
			f.errs = append(f.errs, fmt.Errorf("node %d: MAD to %v QP %d: no such node", n.idx+1, o.To.GID, o.To.QPN))
			continue
		}
		f.send(n.idx, j, &o.MAD, o.Retry)
	}
	start := len(f.events)
	for _, ev := range r.Events {
		ev.PrivateData = clone(ev.PrivateData)
		ev.ARI = clone(ev.ARI)
		ev.SIDR.Info = clone(ev.SIDR.Info)
		f.events = append(f.events, Event{Event: ev, At: f.now, Node: n.idx + 1})
	}
	e.Advance()
	if err := e.CheckInvariants(); err != nil {
		f.errs = append(f.errs, fmt.Errorf("node %d: %w", n.idx+1, err))
	}
	evs := f.events[start:len(f.events):len(f.events)]
	for _, ev := range evs {
		if n.eng != e {
			break // a hook crashed or restarted the node
		}
		n.answer(&ev)
		if n.onEvent != nil {
			n.onEvent(n, ev)
		}
	}
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func (n *Node) applyQP(t *engine.QPTransition) {
	f := n.f
	cur := n.qps[t.QPN] // a QP not seen before is in RESET
	if cur != t.From {
		f.errs = append(f.errs, fmt.Errorf("node %d: QP %#x in %v, transition from %v", n.idx+1, t.QPN, cur, t.From))
	}
	if err := qp.Check(t.Type, cur, &t.Attr, t.Mask); err != nil {
		f.errs = append(f.errs, fmt.Errorf("node %d: QP %#x %v->%v: %w", n.idx+1, t.QPN, t.From, t.To, err))
		return
	}
	n.qps[t.QPN] = t.To
}

// answer carries out the node's Policy for ev.
func (n *Node) answer(ev *Event) {
	p := n.policy
	var err error
	switch ev.Type {
	case engine.EventConnectRequest:
		if p.AutoAccept {
			err = n.accept(ev.ID, ev.Conn.ResponderResources, ev.Conn.InitiatorDepth)
		}
	case engine.EventSIDRRequest:
		if p.AutoAccept {
			err = n.Do(func(e *engine.Engine, now time.Time) error {
				return e.ReplySIDR(now, ev.ID, engine.SIDRReplyParams{QPN: n.newQPN(), QKey: 0x01234567})
			})
		}
	case engine.EventConnectReply:
		if p.AutoEstablish {
			err = n.Establish(ev.ID)
		}
	case engine.EventDisconnectRequest:
		if p.AutoDisconnect {
			err = n.Disconnect(ev.ID)
		}
	case engine.EventTimewaitExit, engine.EventRejected, engine.EventReqError, engine.EventRepError,
		engine.EventSIDRReply, engine.EventSIDRError:
		if p.AutoDestroy {
			err = n.Destroy(ev.ID)
		}
	}
	if err != nil {
		n.f.errs = append(n.f.errs, fmt.Errorf("node %d: answering %v: %w", n.idx+1, &ev.Event, err))
	}
}
