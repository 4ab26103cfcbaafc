// Package testfabric is a deterministic simulated RoCE fabric for the CM
// engine (cm/engine): several nodes, each an engine with fake QPs, joined
// by a wire with seeded faults (loss, duplication, delay, reordering),
// partitions and crashes, on one goroutine with a virtual clock. It is the
// one fault model of the repository: cm/enginetest is its public face,
// and the transcript language of testdata/*.txt (Script) and the sweeps
// drive it directly.
//
// NewInfiniBand makes the fabric one InfiniBand subnet instead: node i
// has LID i+1 (SubnetAdmin.LID), its engine's port 1 is InfiniBand, and
// a MAD goes to the node whose LID it is addressed to (a GRH, which it
// has when its address has a GID, as umad's grh_present, must name the
// same node); a misaddressed MAD is lost and recorded as an error.
//
// Every QP transition an engine emits is checked with qp.Check against the
// fake QP's state; every engine's invariants are checked after every
// input. Violations are collected in Fabric.Errors.
package testfabric

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// Epoch is the virtual clock's start.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// maxSteps bounds the loops that run the fabric, so that a livelock fails
// a test instead of hanging it.
const maxSteps = 1 << 20

// Policy makes a node answer events by itself; cm/enginetest's Policy
// documents each answer. AutoAccept echoes the REQ's ECE.
type Policy struct {
	AutoAccept, AutoEstablish, AutoDisconnect, AutoDestroy, ManageQP bool
}

// Event is an event a node reported, with its time and node number.
type Event struct {
	engine.Event
	At time.Time
	// Node is the reporting node's number, from 1.
	Node int
}

// Node is one CA on the fabric.
type Node struct {
	Index  int
	Name   string // the node's number, from 1
	IP     netip.Addr
	GID    rdma.GID
	GUID   uint64
	Engine *engine.Engine
	// LID is the node's LID on an InfiniBand fabric (Index+1); 0 on RoCE.
	LID uint16
	// Crashed nodes receive nothing and send nothing.
	Crashed  bool
	Restarts int
	// idEpoch selects the ID source's seed; RestartSameIDs keeps it, so
	// the rebooted node draws the communication IDs it drew before.
	idEpoch int
	Policy  Policy
	// OnEvent, when set, is called for every event after Policy.
	OnEvent func(n *Node, ev *engine.Event)
	// QPs holds the state of each QP the engine drives; a QP not seen
	// before is in RESET.
	QPs     map[uint32]qp.State
	nextQPN uint32
	seed    uint64
	f       *Fabric
}

type packet struct {
	at       time.Time
	seq      uint64
	from, to int
	retry    uint8
	dup      bool
	route    route
	mad      [mad.MADSize]byte
}

// route is how a MAD was addressed on an InfiniBand fabric: the DLID and
// SL its sender gave it and whether it carries a GRH.
type route struct {
	dlid uint16
	sl   uint8
	grh  bool
}

// Stats counts what happened on the wire.
type Stats struct {
	Sent, Delivered, Dropped, Lost, Duplicated, Delayed uint64
}

// Fabric is the simulated network.
type Fabric struct {
	Now   time.Time
	Nodes []*Node
	// Latency is every link's one-way delay.
	Latency time.Duration
	// Errors collects QP check failures, engine invariant violations and
	// the errors of policy answers.
	Errors []error
	// CheckInvariants runs Engine.CheckInvariants after every drain.
	CheckInvariants bool
	// RecordEvents keeps a copy of every event in Events.
	RecordEvents bool
	Events       []Event
	// Trace, when set, receives one line per delivery, loss, event,
	// state change and QP transition.
	Trace func(line string)
	// OnMessage, when set, sees the fate of every MAD.
	OnMessage func(Message)
	// Filter, when set, decides at delivery whether a MAD is delivered
	// (Deliver), dropped (Drop) or delivered twice (Duplicate).
	Filter func(from, to *Node, m []byte) Action
	// NameID, when set, sees every ID a node reports, before Trace does.
	NameID func(node int, id engine.ID)
	// Configure, when set, adjusts the configuration of every engine
	// booted after it is set.
	Configure func(n *Node, c *engine.Config)
	// OnState, when set, sees every state change of the engines booted
	// after it is set.
	OnState func(n *Node, s engine.StateChange)
	// Unrouted, when set, makes a MAD to a GID no node has vanish
	// (counted in Stats.Lost, never given to OnMessage) instead of being
	// an error: the answers to a flood with forged GIDs go nowhere.
	Unrouted bool
	// OnQP, when set, sees every QP transition an engine emits that
	// qp.Check accepts.
	OnQP func(n *Node, t *engine.QPTransition)

	// ib makes the fabric one InfiniBand subnet (NewInfiniBand).
	ib     bool
	stats  Stats
	faults []*rule
	down   map[[2]int]bool
	rng    *rand.Rand
	seq    uint64
	// fifo holds MADs due now while no fault or latency can reorder them;
	// heap holds the rest.
	fifo     []packet
	fifoAt   int
	heap     packetHeap
	byGID    map[rdma.GID]int
	flushing bool
	events   []Event
	arena    []byte
	scratch  packet
	sending  packet
	acts     []policyAct
}

// New returns a fabric of n nodes (192.0.2.1, .2, ...) with seeded
// randomness; node engines use seeds derived from seed.
func New(n int, seed uint64) *Fabric { return NewConfigured(n, seed, nil) }

// NewConfigured is New with Configure set before the engines boot.
func NewConfigured(n int, seed uint64, configure func(*Node, *engine.Config)) *Fabric {
	return newFabric(n, seed, configure, false)
}

// NewInfiniBand returns a fabric of n nodes on one InfiniBand subnet:
// node i has LID i+1 and the GID fe80::5254:00ff:fe00:<i+1> (port GUID
// of the link-local prefix), its engine's port 1 is InfiniBand
// (engine.Config.InfiniBandPorts), and MADs are routed by destination
// LID. configure, when not nil, adjusts every engine's configuration.
func NewInfiniBand(n int, seed uint64, configure func(*Node, *engine.Config)) *Fabric {
	return newFabric(n, seed, configure, true)
}

func newFabric(n int, seed uint64, configure func(*Node, *engine.Config), ib bool) *Fabric {
	f := &Fabric{Now: Epoch, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), down: map[[2]int]bool{},
		byGID: map[rdma.GID]int{}, CheckInvariants: true, Configure: configure, ib: ib}
	for i := range n {
		ip := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		guid := 0x525400fffe000000 | uint64(i+1)
		nd := &Node{Index: i, Name: fmt.Sprint(i + 1), IP: ip, GID: rdma.GIDFromAddr(ip),
			GUID: guid, seed: seed*1000 + uint64(i), f: f}
		if ib {
			// IPoIB keeps the IP; the GID is the port's link-local one.
			nd.LID = uint16(i + 1)
			nd.GID = rdma.GID{0: 0xfe, 1: 0x80}
			binary.BigEndian.PutUint64(nd.GID[8:], guid)
		}
		f.Nodes = append(f.Nodes, nd)
		f.byGID[nd.GID] = i
		f.boot(nd)
	}
	return f
}

func (f *Fabric) boot(n *Node) {
	cfg := engine.Config{CAGUID: n.GUID, ACKDelay: 15, RecordStates: f.Trace != nil || f.OnState != nil,
		Source: engine.NewSeededSource(n.seed+uint64(n.idEpoch)*7919, 2)}
	if f.ib {
		cfg.InfiniBandPorts = []uint8{1}
	}
	if f.Configure != nil {
		f.Configure(n, &cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		panic("testfabric: " + err.Error())
	}
	n.Engine = e
	n.QPs = map[uint32]qp.State{}
	n.nextQPN = 0x11
	n.Crashed = false
}

// Stats returns the wire counters.
func (f *Fabric) Stats() Stats { return f.stats }

// InfiniBand reports whether the fabric is an InfiniBand subnet
// (NewInfiniBand).
func (f *Fabric) InfiniBand() bool { return f.ib }

// Crash stops node i: its engine and QPs are lost, MADs to it vanish.
func (f *Fabric) Crash(i int) {
	n := f.Nodes[i]
	n.Crashed = true
	n.Engine = nil
	n.QPs = nil
	f.tracef("%s: crash", n.Name)
}

// Restart boots node i again with a fresh engine (new IDs; QPNs start
// over, as after a reboot).
func (f *Fabric) Restart(i int) {
	n := f.Nodes[i]
	n.Restarts++
	n.idEpoch++
	f.boot(n)
	f.tracef("%s: restart", n.Name)
}

// RestartSameIDs boots node i again with an ID source that starts over:
// the new engine draws the communication IDs (and PSNs) the old one drew,
// as a host whose random state repeats after a reboot. QPNs start over.
func (f *Fabric) RestartSameIDs(i int) {
	n := f.Nodes[i]
	n.Restarts++
	f.boot(n)
	f.tracef("%s: restart (same IDs)", n.Name)
}

// Inject puts a raw MAD from node i to node j on the wire, subject to the
// faults: a misbehaving or replaying peer. On InfiniBand it goes to j's
// LID without a GRH.
func (f *Fabric) Inject(i, j int, m []byte) {
	var b [mad.MADSize]byte
	copy(b[:], m)
	f.send(i, j, &b, 0, route{dlid: f.Nodes[j].LID})
}

func (f *Fabric) tracef(format string, args ...any) {
	if f.Trace != nil {
		f.Trace(fmt.Sprintf(format, args...))
	}
}

func (f *Fabric) errorf(n *Node, format string, args ...any) {
	f.Errors = append(f.Errors, fmt.Errorf("node %s: "+format, append([]any{n.Name}, args...)...))
}

// NewQP returns a new QP number on node n.
func (n *Node) NewQP() uint32 {
	qpn := n.nextQPN
	n.nextQPN = (n.nextQPN + 1) & 0xffffff
	if n.nextQPN < 0x11 {
		n.nextQPN = 0x11
	}
	return qpn
}

// ConnectParams returns rdma_connect-like parameters from n to m's port
// over the RoCE path the rdma_cm builds on rxe (Linux 6.1: P_Key 0xffff,
// MTU 1024, hop limit 64, packet lifetime 18), with a new QPN of n's. On
// an InfiniBand fabric the path is the one the fabric's SubnetAdmin with
// its defaults gives (LIDs, hop limit 0, RoCE false).
func (n *Node) ConnectParams(m *Node, port uint16) engine.ConnectParams {
	qpn := n.NewQP()
	path := engine.Path{
		PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: n.GID, DGID: m.GID, HopLimit: 64, MTU: rdma.MTU1024, PacketLifeTime: 18},
		Port:       1,
		RoCE:       true,
	}
	if n.f.ib {
		path = engine.Path{PathRecord: n.f.SubnetAdmin().Path(n, m, 0xffff).PathRecord, Port: 1}
	}
	return engine.ConnectParams{
		PortSpace: rdma.PortSpaceTCP,
		Src:       netip.AddrPortFrom(n.IP, 40000+uint16(qpn)), Dst: netip.AddrPortFrom(m.IP, port),
		Path: path,
		QPN:  qpn, ResponderResources: 1, InitiatorDepth: 1,
		RetryCount: 7, RNRRetryCount: 7, ManageQP: n.Policy.ManageQP,
	}
}

// AcceptParams returns the answer to a REQ: a new QPN of n's and the
// given responder resources and initiator depth.
func (n *Node) AcceptParams(resp, init uint8) engine.AcceptParams {
	return engine.AcceptParams{QPN: n.NewQP(), ResponderResources: resp, InitiatorDepth: init,
		RNRRetryCount: 7, ManageQP: n.Policy.ManageQP}
}

// Connect starts a connection from node i to node j's port.
func (f *Fabric) Connect(i, j int, port uint16) (engine.ID, error) {
	n := f.Nodes[i]
	return n.Engine.Connect(f.Now, n.ConnectParams(f.Nodes[j], port))
}

// Flush drains every node's Ready: MADs enter the network, QP transitions
// are checked and applied, events go to the policies and hooks. It
// repeats until no node has anything ready. Called from inside a drain
// (a hook), it leaves the outputs to the running flush.
func (f *Fabric) Flush() {
	if f.flushing {
		return
	}
	f.flushing = true
	defer func() { f.flushing = false }()
	for range maxSteps {
		busy := false
		for _, n := range f.Nodes {
			if n.Crashed || !n.Engine.HasReady() {
				continue
			}
			busy = true
			f.drain(n)
		}
		if !busy {
			return
		}
	}
	f.Errors = append(f.Errors, errors.New("flush: the engines never went quiet"))
}

func (f *Fabric) drain(n *Node) {
	e := n.Engine
	r := e.Ready()
	if f.NameID != nil {
		for i := range r.StateChanges {
			f.NameID(n.Index, r.StateChanges[i].ID)
		}
		for i := range r.Events {
			f.NameID(n.Index, r.Events[i].ID)
		}
	}
	for i := range r.StateChanges {
		s := &r.StateChanges[i]
		f.tracef("%s: %v %v -> %v", n.Name, s.ID, s.From, s.To)
		if f.OnState != nil {
			f.OnState(n, *s)
		}
	}
	for i := range r.QPTransitions {
		f.applyQP(n, &r.QPTransitions[i])
	}
	for i := range r.Messages {
		o := &r.Messages[i]
		if f.ib {
			f.sendIB(n, o)
			continue
		}
		j, ok := f.nodeByGID(o.To.GID)
		if !ok && f.Unrouted && o.To.QPN == 1 {
			f.stats.Sent++
			f.stats.Lost++
			continue
		}
		if !ok || o.To.QPN != 1 {
			f.errorf(n, "MAD to %v QP %d: no such node", o.To.GID, o.To.QPN)
			continue
		}
		f.send(n.Index, j, &o.MAD, o.Retry, route{})
	}
	if n.OnEvent == nil && f.Trace == nil && !f.RecordEvents {
		// Fast path: the policies only queue typed actions, run once
		// the Ready has been acknowledged.
		f.acts = f.acts[:0]
		for i := range r.Events {
			f.policy(n, &r.Events[i])
		}
		e.Advance()
		f.checkEngine(n)
		for _, a := range f.acts {
			f.act(n, &a)
		}
		return
	}
	f.events = f.events[:0]
	f.arena = f.arena[:0]
	for _, ev := range r.Events {
		switch {
		case f.RecordEvents: // the record's own copies
			ev.PrivateData, ev.ARI, ev.SIDR.Info = clone(ev.PrivateData), clone(ev.ARI), clone(ev.SIDR.Info)
			f.Events = append(f.Events, Event{Event: ev, At: f.Now, Node: n.Index + 1})
		case f.Trace != nil:
			ev.PrivateData, ev.ARI = f.keep(ev.PrivateData), f.keep(ev.ARI)
		default:
			ev.PrivateData, ev.ARI = nil, nil
		}
		f.events = append(f.events, Event{Event: ev, At: f.Now, Node: n.Index + 1})
	}
	e.Advance()
	f.checkEngine(n)
	// Hooks cannot drain (Flush does not nest), so f.events stays put.
	for i := range f.events {
		if n.Engine != e {
			break // a hook crashed or restarted the node
		}
		f.handle(n, &f.events[i])
	}
}

// sendIB routes an outgoing MAD of node n as an InfiniBand switch does:
// by its destination LID alone. A LID no node has, a QP other than the
// GSI QP, or a GRH whose DGID is not the LID's node is a misaddressed
// MAD: it is lost (Stats.Lost) and recorded in Errors, so the test fails.
func (f *Fabric) sendIB(n *Node, o *engine.Outbound) {
	j, ok := f.nodeByLID(o.To.LID)
	grh := o.To.GID != (rdma.GID{}) // as umad sets grh_present
	switch {
	case !ok && f.Unrouted && o.To.QPN == 1:
		f.stats.Sent++
		f.stats.Lost++
		return
	case !ok || o.To.QPN != 1:
		f.stats.Sent++
		f.stats.Lost++
		f.errorf(n, "MAD %s to LID %#x QP %d: no such node", mad.Describe(o.MAD[:]), o.To.LID, o.To.QPN)
		return
	case grh && o.To.GID != f.Nodes[j].GID:
		f.stats.Sent++
		f.stats.Lost++
		f.errorf(n, "MAD %s to LID %#x with a GRH for %v: LID %#x is node %s, GID %v",
			mad.Describe(o.MAD[:]), o.To.LID, o.To.GID, o.To.LID, f.Nodes[j].Name, f.Nodes[j].GID)
		return
	}
	f.send(n.Index, j, &o.MAD, o.Retry, route{dlid: o.To.LID, sl: o.To.SL, grh: grh})
}

// nodeByLID finds the node with LID l on an InfiniBand fabric.
func (f *Fabric) nodeByLID(l uint16) (int, bool) {
	if l == 0 || int(l) > len(f.Nodes) {
		return 0, false
	}
	return int(l) - 1, true
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func (f *Fabric) checkEngine(n *Node) {
	if f.CheckInvariants {
		if err := n.Engine.CheckInvariants(); err != nil {
			f.errorf(n, "%w", err)
		}
	}
}

func (f *Fabric) keep(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	s := len(f.arena)
	f.arena = append(f.arena, b...)
	return f.arena[s:len(f.arena):len(f.arena)]
}

func (f *Fabric) applyQP(n *Node, t *engine.QPTransition) {
	cur := n.QPs[t.QPN]
	if cur != t.From {
		f.errorf(n, "QP %#x in %v, transition from %v", t.QPN, cur, t.From)
	}
	if err := qp.Check(t.Type, cur, &t.Attr, t.Mask); err != nil {
		f.errorf(n, "QP %#x %v->%v: %w", t.QPN, t.From, t.To, err)
		return
	}
	if f.ib && t.Mask&qp.MaskAV != 0 {
		// The QP's packets are routed as the CM's are: by DLID.
		ah := &t.Attr.AH
		if j, ok := f.nodeByLID(ah.DLID); !ok {
			f.errorf(n, "QP %#x %v->%v: address vector DLID %#x: no such node", t.QPN, t.From, t.To, ah.DLID)
		} else if ah.IsGlobal && ah.GRH.DGID != f.Nodes[j].GID {
			f.errorf(n, "QP %#x %v->%v: address vector DLID %#x with a GRH for %v, not node %s's GID",
				t.QPN, t.From, t.To, ah.DLID, ah.GRH.DGID, f.Nodes[j].Name)
		}
	}
	n.QPs[t.QPN] = t.To
	if f.ib && t.Mask&qp.MaskAV != 0 && f.Trace != nil {
		ah := &t.Attr.AH
		f.tracef("%s: %v av=[dlid=%d sl=%d global=%v]", n.Name, t, ah.DLID, ah.SL, ah.IsGlobal)
	} else {
		f.tracef("%s: %v", n.Name, t)
	}
	if f.OnQP != nil {
		f.OnQP(n, t)
	}
}

// policyAct is one thing a Policy does in answer to an event.
type policyAct struct {
	kind       engine.EventType
	id         engine.ID
	resp, init uint8
	ece        ece.ECE
}

// policy queues what n's Policy does about ev, if anything.
func (f *Fabric) policy(n *Node, ev *engine.Event) {
	p := n.Policy
	switch ev.Type {
	case engine.EventConnectRequest, engine.EventSIDRRequest:
		if !p.AutoAccept {
			return
		}
	case engine.EventConnectReply:
		if !p.AutoEstablish {
			return
		}
	case engine.EventDisconnectRequest:
		if !p.AutoDisconnect {
			return
		}
	case engine.EventTimewaitExit, engine.EventRejected, engine.EventReqError, engine.EventRepError,
		engine.EventSIDRReply, engine.EventSIDRError:
		if !p.AutoDestroy {
			return
		}
	default:
		return
	}
	a := policyAct{kind: ev.Type, id: ev.ID}
	if ev.Type == engine.EventConnectRequest { // only Accept reads the rest
		a.resp, a.init, a.ece = ev.Conn.ResponderResources, ev.Conn.InitiatorDepth, ev.ECE
	}
	f.acts = append(f.acts, a)
}

// act carries out a queued policy action.
func (f *Fabric) act(n *Node, a *policyAct) {
	e := n.Engine
	var err error
	switch a.kind {
	case engine.EventConnectRequest:
		p := n.AcceptParams(a.resp, a.init)
		p.ECE = a.ece
		err = e.Accept(f.Now, a.id, p)
	case engine.EventSIDRRequest:
		err = e.ReplySIDR(f.Now, a.id, engine.SIDRReplyParams{QPN: n.NewQP(), QKey: 0x01234567})
	case engine.EventConnectReply:
		err = e.Establish(f.Now, a.id, nil)
	case engine.EventDisconnectRequest:
		err = e.Disconnect(f.Now, a.id, nil)
	default:
		err = e.Destroy(f.Now, a.id)
	}
	if err != nil {
		f.errorf(n, "answering %v %v: %w", a.kind, a.id, err)
	}
}

func (f *Fabric) handle(n *Node, ev *Event) {
	f.tracef("%s: %v", n.Name, &ev.Event)
	if f.ib && ev.Type == engine.EventConnectRequest && f.Trace != nil {
		p := &ev.Conn.Path
		f.tracef("%s: path slid=%d dlid=%d sl=%d hop-limit=%d roce=%v", n.Name, p.SLID, p.DLID, p.SL, p.HopLimit, p.RoCE)
	}
	f.acts = f.acts[:0]
	f.policy(n, &ev.Event)
	for _, a := range f.acts {
		f.act(n, &a)
	}
	if n.OnEvent != nil {
		n.OnEvent(n, &ev.Event)
	}
}

// send puts a MAD from node i to node j on the wire, applying partitions
// and faults; rt is its InfiniBand addressing (zero on RoCE).
func (f *Fabric) send(i, j int, m *[mad.MADSize]byte, retry uint8, rt route) {
	f.stats.Sent++
	down := f.linkDown(i, j)
	if !down && len(f.faults) == 0 && f.Latency == 0 && (len(f.heap) == 0 || f.heap[0].at.After(f.Now)) {
		// Filled in place, every field: one copy of the MAD, no zeroing.
		if n := len(f.fifo); n < cap(f.fifo) {
			f.fifo = f.fifo[:n+1]
		} else {
			f.fifo = append(f.fifo, packet{})
		}
		q := &f.fifo[len(f.fifo)-1]
		q.at, q.seq, q.from, q.to, q.retry, q.dup, q.route = f.Now, f.seq, i, j, retry, false, rt
		q.mad = *m // alone: in a tuple assignment it would be copied twice
		f.seq++
		return
	}
	// p is the fabric's own: a local would escape through report.
	p := &f.sending
	*p = packet{at: f.Now.Add(f.Latency), from: i, to: j, retry: retry, route: rt, mad: *m}
	if down {
		f.stats.Lost++
		f.report(p, Lost)
		return
	}
	copies, delayed := 1, false
	kind := attrOf(m[:])
	for _, r := range f.faults {
		if !r.matches(i, j, kind) {
			continue
		}
		if r.Rate > 0 && r.Rate < 1 && f.rng.Float64() >= r.Rate {
			continue
		}
		r.hits++
		switch r.Action {
		case Drop:
			f.stats.Dropped++
			f.report(p, Dropped)
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
		f.heap.push(*p)
	}
}

// linkDown reports whether the link from node i to node j is cut; the
// common case, no link cut, costs no map lookup.
func (f *Fabric) linkDown(i, j int) bool {
	return len(f.down) > 0 && f.down[[2]int{i, j}]
}

// nodeByGID finds the node with GID g: a small fabric scans its nodes,
// which is cheaper than hashing a 16-byte key.
func (f *Fabric) nodeByGID(g rdma.GID) (int, bool) {
	if len(f.Nodes) <= 8 {
		for i, n := range f.Nodes {
			if n.GID == g {
				return i, true
			}
		}
		return 0, false
	}
	j, ok := f.byGID[g]
	return j, ok
}

func attrOf(m []byte) mad.AttributeID {
	h, err := mad.ParseHeader(m)
	if err != nil {
		return 0
	}
	return h.AttributeID()
}

// deliverOne delivers the oldest MAD due now, if any, and flushes.
func (f *Fabric) deliverOne() bool {
	switch {
	case f.fifoAt < len(f.fifo):
		// Delivered in place: what the delivery sends is appended after
		// it, and the FIFO is reset only once the delivery is done.
		p := &f.fifo[f.fifoAt]
		f.fifoAt++
		f.deliver(p)
		if f.fifoAt == len(f.fifo) {
			f.fifo, f.fifoAt = f.fifo[:0], 0
		}
		f.Flush()
		return true
	case len(f.heap) > 0 && !f.heap[0].at.After(f.Now):
		f.scratch = f.heap.pop()
	default:
		return false
	}
	f.deliver(&f.scratch)
	f.Flush()
	return true
}

func (f *Fabric) deliver(p *packet) {
	from, to := f.Nodes[p.from], f.Nodes[p.to]
	var a Action
	if f.Filter != nil {
		a = f.Filter(from, to, p.mad[:])
	}
	switch {
	case to.Crashed || f.linkDown(p.from, p.to):
		f.stats.Lost++
		f.report(p, Lost)
		return
	case a == Drop:
		f.stats.Dropped++
		f.report(p, Dropped)
		return
	}
	n := 1
	if a == Duplicate {
		n = 2
		f.stats.Duplicated++
	}
	for k := range n {
		f.stats.Delivered++
		dup := p.dup
		p.dup = p.dup || k == 1
		f.report(p, Delivered)
		p.dup = dup
		to.Engine.Receive(f.Now, f.source(from, p), p.mad[:])
		if k == 0 && n == 2 {
			f.Flush()
		}
	}
}

// source is the address a received MAD reports, as umad gives it: on
// RoCE the sender's GID and hop limit 64; on InfiniBand its LID and the
// packet's SL, and the GID and a hop limit (ib_init_ah_attr_from_wc's
// 0xff) only with a GRH.
func (f *Fabric) source(from *Node, p *packet) engine.Addr {
	if !f.ib {
		return engine.Addr{Port: 1, GID: from.GID, QPN: 1, HopLimit: 64}
	}
	a := engine.Addr{Port: 1, LID: from.LID, SL: p.route.sl, QPN: 1}
	if p.route.grh {
		a.GID, a.HopLimit = from.GID, 0xff
	}
	return a
}

// Stabilize delivers every MAD due now, and every MAD the deliveries cause
// that is due now, without moving the clock.
func (f *Fabric) Stabilize() {
	f.Flush()
	for f.deliverOne() {
	}
}

// Step does the next thing the simulation would do and reports whether
// there was anything to do: it delivers the oldest MAD due now; if none is
// due, it moves the clock to the next arrival or engine deadline and fires
// the timers due then, or, if no timer is due, delivers the MAD that
// arrives then.
func (f *Fabric) Step() bool {
	f.Flush()
	if f.deliverOne() {
		return true
	}
	t := f.next()
	if t.IsZero() {
		return false
	}
	if t.After(f.Now) {
		f.Now = t
	}
	if !f.tick() {
		f.deliverOne()
	}
	return true
}

// next returns the earliest pending MAD or live engine deadline, or zero.
func (f *Fabric) next() time.Time {
	var t time.Time
	if f.fifoAt < len(f.fifo) {
		t = f.Now
	} else if len(f.heap) > 0 {
		t = f.heap[0].at
	}
	for _, n := range f.Nodes {
		if n.Crashed {
			continue
		}
		if d := n.Engine.Deadline(); !d.IsZero() && (t.IsZero() || d.Before(t)) {
			t = d
		}
	}
	return t
}

// tick fires the timers due now; it reports whether any engine had one.
func (f *Fabric) tick() bool {
	fired := false
	for _, n := range f.Nodes {
		if n.Crashed {
			continue
		}
		if d := n.Engine.Deadline(); !d.IsZero() && !d.After(f.Now) {
			n.Engine.Tick(f.Now)
			fired = true
		}
	}
	f.Flush()
	return fired
}

// Advance runs the fabric for d of virtual time, firing timers and
// delivering MADs at their times; the clock ends at Now+d.
func (f *Fabric) Advance(d time.Duration) {
	if _, idle := f.run(f.Now.Add(d), maxSteps, nil); !idle {
		f.Errors = append(f.Errors, errors.New("advance: no progress"))
	}
}

// Run runs until no MAD is in flight and no timer is armed, or for at most
// steps moves of the clock; it reports whether the fabric went idle.
func (f *Fabric) Run(steps int) bool {
	_, idle := f.run(time.Time{}, steps, nil)
	return idle
}

// RunUntil runs like Run but stops as soon as cond holds, checked each
// time everything due at the current time has been delivered; it reports
// whether cond held, or, for a nil cond, whether the fabric went idle.
func (f *Fabric) RunUntil(cond func() bool, steps int) bool {
	met, idle := f.run(time.Time{}, steps, cond)
	return met || cond == nil && idle
}

// run runs until cond holds, the fabric is idle, or the clock would pass
// end (a zero end: no limit); on end the clock is set to it.
func (f *Fabric) run(end time.Time, steps int, cond func() bool) (met, idle bool) {
	for range steps {
		f.Stabilize()
		if cond != nil && cond() {
			return true, false
		}
		t := f.next()
		if t.IsZero() || !end.IsZero() && t.After(end) {
			if !end.IsZero() {
				f.Now = end
				f.Stabilize()
			}
			return false, true
		}
		if t.After(f.Now) {
			f.Now = t
		}
		f.tick()
	}
	return false, false
}

// InFlight returns how many MADs are in the network.
func (f *Fabric) InFlight() int { return len(f.heap) + len(f.fifo) - f.fifoAt }

// Err joins the collected errors, or returns nil.
func (f *Fabric) Err() error { return errors.Join(f.Errors...) }

// packetHeap orders packets by time, then by send order.
type packetHeap []packet

func (h packetHeap) less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}

func (h *packetHeap) push(p packet) {
	*h = append(*h, p)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2
		if !s.less(j, i) {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

func (h *packetHeap) pop() packet {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && s.less(r, l) {
			j = r
		}
		if !s.less(j, i) {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	*h = s
	return top
}
