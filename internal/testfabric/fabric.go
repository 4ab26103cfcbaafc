// Package testfabric is a deterministic simulated RoCE fabric for the CM
// engine (cm/engine): several nodes, each an engine with fake QPs, joined
// by links with seeded loss, duplication, reordering, delay and partitions,
// on one goroutine with a virtual clock. Nodes can crash and restart.
//
// Every QP transition an engine emits is checked with qp.Check against the
// fake QP's state; every engine's invariants are checked after every
// input. Violations are collected in Fabric.Errors.
//
// Script runs the transcript language of testdata/*.txt.
package testfabric

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// Epoch is the virtual clock's start.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Faults describes one direction of a link.
type Faults struct {
	// Loss, Dup and Reorder are probabilities per MAD: lost, delivered
	// twice, delivered after up to Jitter+ReorderDelay extra delay.
	Loss, Dup, Reorder float64
	// Delay is the base one-way delay; Jitter adds up to that much more.
	Delay, Jitter time.Duration
	// ReorderDelay is the extra delay of a reordered MAD (default 10 ms).
	ReorderDelay time.Duration
	// Down drops everything (a partition).
	Down bool
}

func (f *Faults) immediate() bool {
	return f.Loss == 0 && f.Dup == 0 && f.Reorder == 0 && f.Delay == 0 && f.Jitter == 0 && !f.Down
}

// Policy makes a node answer events by itself.
type Policy struct {
	// AutoAccept accepts every CONNECT_REQUEST (QPN from the node's fake
	// QPs) and answers SIDR requests.
	AutoAccept bool
	// AutoEstablish sends the RTU on every CONNECT_REPLY.
	AutoEstablish bool
	// AutoDREP answers every DISCONNECT_REQUEST with a DREP.
	AutoDREP bool
	// AutoDestroy destroys IDs once they are finished (TIMEWAIT_EXIT,
	// REJECTED, REQ_ERROR, REP_ERROR, SIDR results).
	AutoDestroy bool
	// ManageQP lets the engine drive the QPs of new connections.
	ManageQP bool
}

// EventRecord is an event as the fabric keeps it.
type EventRecord struct {
	At     time.Time
	Type   engine.EventType
	ID     engine.ID
	Reason mad.RejectReason
}

// FakeQP is a QP whose state only changes through checked transitions.
type FakeQP struct {
	QPN   uint32
	Type  qp.QPType
	State qp.State
	Moves int
}

// Node is one CA on the fabric.
type Node struct {
	Index  int
	Name   string
	IP     netip.Addr
	GID    rdma.GID
	GUID   uint64
	Engine *engine.Engine
	// Crashed nodes receive nothing and send nothing.
	Crashed  bool
	Restarts int
	// idEpoch selects the ID source's seed; RestartSameIDs keeps it, so
	// the rebooted node draws the communication IDs it drew before.
	idEpoch int
	Policy  Policy
	// OnEvent, when set, is called for every event after Policy.
	OnEvent func(n *Node, ev *engine.Event)
	Events  []EventRecord
	QPs     map[uint32]*FakeQP
	nextQPN uint32
	seed    uint64
}

type packet struct {
	at       time.Time
	seq      uint64
	from, to int
	dup      bool
	mad      [mad.MADSize]byte
}

// Fabric is the simulated network.
type Fabric struct {
	Now   time.Time
	Nodes []*Node
	// Default applies to links without their own Faults.
	Default Faults
	links   map[[2]int]*Faults
	rng     *rand.Rand
	seq     uint64
	// fifo holds MADs due now on fault-free links; heap the delayed ones.
	fifo   []packet
	fifoAt int
	heap   packetHeap
	byGID  map[rdma.GID]int
	// Errors collects QP check failures and engine invariant violations.
	Errors []error
	// CheckInvariants runs Engine.CheckInvariants after every flush.
	CheckInvariants bool
	// RecordEvents keeps every event in Node.Events.
	RecordEvents bool
	// Trace, when set, receives one line per delivery, drop, event,
	// state change and QP transition.
	Trace func(line string)
	// Filter, when set, decides the fate of each MAD at delivery:
	// deliver, drop or duplicate.
	Filter func(from, to *Node, m []byte) Fate
	// NameID, when set, sees every ID a node reports, before Trace does.
	NameID func(node int, id engine.ID)
	// Source, when set, gives the ID source of each engine booted after
	// it is set (Restart, RestartSameIDs); nil keeps the seeded default.
	Source func(n *Node) engine.Source
	// RecordStates makes engines booted after it is set report state
	// changes (OnState sees them).
	RecordStates bool
	// OnState, when set, sees every state change an engine reports.
	OnState func(n *Node, s engine.StateChange)
	// Stats
	Delivered, Dropped, Duplicated uint64

	events  []engine.Event
	arena   []byte
	scratch packet
	acts    []policyAct
}

// Fate is what Filter decides for a MAD.
type Fate uint8

const (
	Deliver Fate = iota
	Drop
	Duplicate
)

// New returns a fabric of n nodes (192.0.2.1, .2, ...) with seeded
// randomness; node engines use seeds derived from seed.
func New(n int, seed uint64) *Fabric {
	f := &Fabric{Now: Epoch, links: map[[2]int]*Faults{}, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)),
		byGID: map[rdma.GID]int{}, CheckInvariants: true}
	for i := range n {
		ip := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		nd := &Node{Index: i, Name: fmt.Sprint(i + 1), IP: ip, GID: rdma.GIDFromAddr(ip),
			GUID: 0x525400fffe000000 | uint64(i+1), seed: seed*1000 + uint64(i)}
		f.Nodes = append(f.Nodes, nd)
		f.byGID[nd.GID] = i
		f.boot(nd)
	}
	return f
}

func (f *Fabric) boot(n *Node) {
	src := engine.NewSeededSource(n.seed+uint64(n.idEpoch)*7919, 2)
	if f.Source != nil {
		src = f.Source(n)
	}
	e, err := engine.New(engine.Config{
		CAGUID: n.GUID, ACKDelay: 15, RecordStates: f.Trace != nil || f.RecordStates,
		Source: src,
	})
	if err != nil {
		panic(err) // the config above is valid
	}
	n.Engine = e
	n.QPs = map[uint32]*FakeQP{}
	n.nextQPN = 0x11
	n.Crashed = false
}

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
// link's faults: a misbehaving or replaying peer.
func (f *Fabric) Inject(i, j int, m []byte) {
	var b [mad.MADSize]byte
	copy(b[:], m)
	f.send(i, j, &b)
}

// Link returns the faults of the link from i to j, creating them from
// Default.
func (f *Fabric) Link(i, j int) *Faults {
	l := f.links[[2]int{i, j}]
	if l == nil {
		d := f.Default
		l = &d
		f.links[[2]int{i, j}] = l
	}
	return l
}

func (f *Fabric) faults(i, j int) *Faults {
	if l := f.links[[2]int{i, j}]; l != nil {
		return l
	}
	return &f.Default
}

func (f *Fabric) tracef(format string, args ...any) {
	if f.Trace != nil {
		f.Trace(fmt.Sprintf(format, args...))
	}
}

// NewQP returns a new QP number on node n. With Policy.ManageQP it also
// creates the fake QP the engine's transitions are checked against.
func (n *Node) NewQP(t qp.QPType) uint32 {
	qpn := n.nextQPN
	n.nextQPN = (n.nextQPN + 1) & 0xffffff
	if n.nextQPN < 0x11 {
		n.nextQPN = 0x11
	}
	if n.Policy.ManageQP {
		n.QPs[qpn] = &FakeQP{QPN: qpn, Type: t}
	}
	return qpn
}

// PathTo returns the RoCE path from n to m as the rdma_cm builds it on rxe
// (Linux 6.1): P_Key 0xffff, MTU 1024, hop limit 64, packet lifetime 18.
func (n *Node) PathTo(m *Node) engine.Path {
	return engine.Path{
		PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: n.GID, DGID: m.GID, HopLimit: 64, MTU: rdma.MTU1024, PacketLifeTime: 18},
		Port:       1,
		RoCE:       true,
	}
}

// ConnectParams returns rdma_connect-like parameters from n to m's port.
func (n *Node) ConnectParams(m *Node, port uint16) engine.ConnectParams {
	return engine.ConnectParams{
		PortSpace: rdma.PortSpaceTCP,
		Src:       netip.AddrPortFrom(n.IP, 40000+uint16(n.nextQPN)), Dst: netip.AddrPortFrom(m.IP, port),
		Path: n.PathTo(m), QPN: n.NewQP(qp.RC), ResponderResources: 1, InitiatorDepth: 1,
		RetryCount: 7, RNRRetryCount: 7, ManageQP: n.Policy.ManageQP,
	}
}

// Connect starts a connection from node i to node j's port.
func (f *Fabric) Connect(i, j int, port uint16) (engine.ID, error) {
	n := f.Nodes[i]
	p := n.ConnectParams(f.Nodes[j], port)
	return n.Engine.Connect(f.Now, p)
}

// Flush drains every node's Ready: MADs enter the network, QP transitions
// are checked and applied, events go to the policies. It repeats until no
// node has anything ready.
func (f *Fabric) Flush() {
	for range 1 << 20 {
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
	f.Errors = append(f.Errors, fmt.Errorf("flush: no quiescence"))
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
		if f.Trace != nil {
			f.tracef("%s: %v %v -> %v", n.Name, s.ID, s.From, s.To)
		}
		if f.OnState != nil {
			f.OnState(n, *s)
		}
	}
	for i := range r.QPTransitions {
		f.applyQP(n, &r.QPTransitions[i])
	}
	for i := range r.Messages {
		o := &r.Messages[i]
		j, ok := f.byGID[o.To.GID]
		if !ok || o.To.QPN != 1 {
			f.Errors = append(f.Errors, fmt.Errorf("%s sent to %v QP %d", n.Name, o.To.GID, o.To.QPN))
			continue
		}
		f.send(n.Index, j, &o.MAD)
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
		if f.Trace != nil {
			ev.PrivateData = f.keep(ev.PrivateData)
			ev.ARI = f.keep(ev.ARI)
		} else {
			ev.PrivateData, ev.ARI = nil, nil
		}
		f.events = append(f.events, ev)
	}
	e.Advance()
	f.checkEngine(n)
	evs := f.events
	f.events = nil // hooks may flush recursively
	for i := range evs {
		f.handle(n, &evs[i])
		if n.Crashed {
			break
		}
	}
	f.events = evs[:0]
}

func (f *Fabric) checkEngine(n *Node) {
	if f.CheckInvariants {
		if err := n.Engine.CheckInvariants(); err != nil {
			f.Errors = append(f.Errors, fmt.Errorf("%s: %w", n.Name, err))
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
	q := n.QPs[t.QPN]
	if q == nil {
		f.Errors = append(f.Errors, fmt.Errorf("%s: transition for unknown QP %#x", n.Name, t.QPN))
		return
	}
	if q.State != t.From {
		f.Errors = append(f.Errors, fmt.Errorf("%s: QP %#x in %v, transition from %v", n.Name, t.QPN, q.State, t.From))
	}
	if err := qp.Check(q.Type, q.State, &t.Attr, t.Mask); err != nil {
		f.Errors = append(f.Errors, fmt.Errorf("%s: QP %#x %v->%v: %w", n.Name, t.QPN, t.From, t.To, err))
		return
	}
	q.State = t.To
	q.Moves++
	if f.Trace != nil {
		f.tracef("%s: %v", n.Name, t)
	}
}

// policyAct is one thing a Policy does in answer to an event.
type policyAct struct {
	kind       engine.EventType
	id         engine.ID
	resp, init uint8
	ece        ece.ECE
}

// policy queues what n's Policy does about ev.
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
		if !p.AutoDREP {
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
	f.acts = append(f.acts, policyAct{kind: ev.Type, id: ev.ID, resp: ev.Conn.ResponderResources,
		init: ev.Conn.InitiatorDepth, ece: ev.ECE})
}

// act carries out a queued policy action.
func (f *Fabric) act(n *Node, a *policyAct) {
	e, p := n.Engine, n.Policy
	switch a.kind {
	case engine.EventConnectRequest:
		qpn := n.NewQP(qp.RC)
		f.check(n, "accept", e.Accept(f.Now, a.id, engine.AcceptParams{QPN: qpn, ResponderResources: a.resp,
			InitiatorDepth: a.init, RNRRetryCount: 7, ECE: a.ece, ManageQP: p.ManageQP}))
	case engine.EventSIDRRequest:
		f.check(n, "sidr reply", e.ReplySIDR(f.Now, a.id, engine.SIDRReplyParams{QPN: n.NewQP(qp.UD), QKey: 0x01234567}))
	case engine.EventConnectReply:
		f.check(n, "establish", e.Establish(f.Now, a.id, nil))
	case engine.EventDisconnectRequest:
		f.check(n, "disconnect", e.Disconnect(f.Now, a.id, nil))
	default:
		f.check(n, "destroy", e.Destroy(f.Now, a.id))
	}
}

func (f *Fabric) handle(n *Node, ev *engine.Event) {
	if f.RecordEvents {
		n.Events = append(n.Events, EventRecord{At: f.Now, Type: ev.Type, ID: ev.ID, Reason: ev.Reason})
	}
	if f.Trace != nil {
		f.tracef("%s: %v", n.Name, ev)
	}
	f.acts = f.acts[:0]
	f.policy(n, ev)
	for _, a := range f.acts {
		f.act(n, &a)
	}
	if n.OnEvent != nil {
		n.OnEvent(n, ev)
	}
}

func (f *Fabric) check(n *Node, op string, err error) {
	if err != nil {
		f.Errors = append(f.Errors, fmt.Errorf("%s: %s: %w", n.Name, op, err))
	}
}

func (f *Fabric) send(i, j int, m *[mad.MADSize]byte) {
	l := f.faults(i, j)
	if l.immediate() {
		f.fifo = append(f.fifo, packet{at: f.Now, seq: f.seq, from: i, to: j, mad: *m})
		f.seq++
		return
	}
	if l.Down || l.Loss > 0 && f.rng.Float64() < l.Loss {
		f.Dropped++
		if f.Trace != nil {
			f.tracef("%s>%s %s LOST", f.Nodes[i].Name, f.Nodes[j].Name, mad.Describe(m[:]))
		}
		return
	}
	copies := 1
	if l.Dup > 0 && f.rng.Float64() < l.Dup {
		copies = 2
	}
	for c := range copies {
		d := l.Delay
		if l.Jitter > 0 {
			d += time.Duration(f.rng.Int64N(int64(l.Jitter) + 1))
		}
		if l.Reorder > 0 && f.rng.Float64() < l.Reorder {
			rd := l.ReorderDelay
			if rd == 0 {
				rd = 10 * time.Millisecond
			}
			d += time.Duration(f.rng.Int64N(int64(rd) + 1))
		}
		f.heap.push(packet{at: f.Now.Add(d), seq: f.seq, from: i, to: j, dup: c == 1, mad: *m})
		f.seq++
	}
}

// deliverDue delivers every MAD due now; it reports whether it delivered
// anything.
func (f *Fabric) deliverDue() bool {
	did := false
	for {
		var p *packet
		if f.fifoAt < len(f.fifo) {
			p = &f.fifo[f.fifoAt]
			f.fifoAt++
		} else if len(f.heap) > 0 && !f.heap[0].at.After(f.Now) {
			f.scratch = f.heap.pop()
			p = &f.scratch
		} else {
			break
		}
		did = true
		f.deliver(p)
		f.Flush()
	}
	f.fifo = f.fifo[:0]
	f.fifoAt = 0
	return did
}

func (f *Fabric) deliver(p *packet) {
	from, to := f.Nodes[p.from], f.Nodes[p.to]
	fate := Deliver
	if f.Filter != nil {
		fate = f.Filter(from, to, p.mad[:])
	}
	if to.Crashed || fate == Drop {
		f.Dropped++
		if f.Trace != nil {
			f.tracef("%s>%s %s DROPPED", from.Name, to.Name, mad.Describe(p.mad[:]))
		}
		return
	}
	n := 1
	if fate == Duplicate {
		n = 2
		f.Duplicated++
	}
	for k := range n {
		if f.Trace != nil {
			extra := ""
			if k == 1 || p.dup {
				extra = " (duplicate)"
			}
			f.tracef("%s>%s %s%s", from.Name, to.Name, mad.Describe(p.mad[:]), extra)
		}
		f.Delivered++
		to.Engine.Receive(f.Now, engine.Addr{Port: 1, GID: from.GID, QPN: 1, HopLimit: 64}, p.mad[:])
		if k == 0 && n == 2 {
			f.Flush()
		}
	}
}

// Stabilize delivers MADs and handles events until nothing is due at the
// current time. The clock does not move.
func (f *Fabric) Stabilize() {
	f.Flush()
	for f.deliverDue() {
	}
}

// next returns the earliest pending packet or timer, or zero.
func (f *Fabric) next() time.Time {
	var t time.Time
	if len(f.heap) > 0 {
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

// Advance runs the fabric for d of virtual time, firing timers and
// delivering MADs at their times.
func (f *Fabric) Advance(d time.Duration) {
	f.runUntil(f.Now.Add(d), -1)
	f.Stabilize()
}

// Run runs until no MAD is in flight and no timer is armed, or for at most
// maxSteps time steps; it reports whether the fabric went idle.
func (f *Fabric) Run(maxSteps int) bool {
	return f.runUntil(time.Time{}, maxSteps)
}

// RunWhile runs like Run but stops as soon as stop returns true after a
// step; it reports whether the fabric went idle.
func (f *Fabric) RunWhile(stop func() bool, maxSteps int) (idle bool) {
	return f.run(time.Time{}, maxSteps, stop)
}

func (f *Fabric) runUntil(end time.Time, maxSteps int) bool {
	return f.run(end, maxSteps, nil)
}

func (f *Fabric) run(end time.Time, maxSteps int, stop func() bool) bool {
	for steps := 0; maxSteps < 0 || steps < maxSteps; steps++ {
		f.Stabilize()
		if stop != nil && stop() {
			return false
		}
		t := f.next()
		if t.IsZero() {
			if !end.IsZero() {
				f.Now = end
			}
			return true
		}
		if !end.IsZero() && t.After(end) {
			f.Now = end
			return true
		}
		if t.After(f.Now) {
			f.Now = t
		}
		for _, n := range f.Nodes {
			if !n.Crashed {
				n.Engine.Tick(f.Now)
			}
		}
	}
	return false
}

// InFlight returns how many MADs are in the network.
func (f *Fabric) InFlight() int { return len(f.heap) + len(f.fifo) - f.fifoAt }

// Err joins the collected errors, or returns nil.
func (f *Fabric) Err() error {
	if len(f.Errors) == 0 {
		return nil
	}
	var b strings.Builder
	for i, e := range f.Errors {
		if i == 8 {
			fmt.Fprintf(&b, "\n... and %d more", len(f.Errors)-8)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return fmt.Errorf("%s", b.String())
}

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
