package engine_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// The rdma_cm values seen in the golden captures (Linux 6.1, rxe): ACK
// delay 15, RoCE packet lifetime 18, MTU 1024, hop limit 64.
const (
	rxeACKDelay    = 15
	rocePLT        = 18
	testPort       = 7174
	testSourcePort = 33805
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type node struct {
	name string
	e    *engine.Engine
	ip   netip.Addr
	gid  rdma.GID
	guid uint64
	// collected outputs
	events []engine.Event
	qps    []engine.QPTransition
	qpCur  map[uint32]qp.State
}

// wire is a two-node network delivered by hand.
type wire struct {
	t     *testing.T
	now   time.Time
	nodes []*node
	// sent records every MAD that left a node, in order.
	sent []sent
	// drop, when it returns true, loses the MAD.
	drop func(s sent) bool
	// unrouted loses a MAD to a GID no node has instead of failing the
	// test: FuzzReceive's forged REQs name GIDs the answers go to.
	unrouted bool
}

type sent struct {
	from, to *node
	mad      [256]byte
	retry    uint8
}

func (s sent) attr() mad.AttributeID {
	h, _ := mad.ParseHeader(s.mad[:])
	return h.AttributeID()
}

func (s sent) String() string {
	return fmt.Sprintf("%s>%s %s", s.from.name, s.to.name, mad.Describe(s.mad[:]))
}

func newNode(t *testing.T, name string, ip string, seed uint64, mod func(*engine.Config)) *node {
	t.Helper()
	a := netip.MustParseAddr(ip)
	n := &node{name: name, ip: a, gid: rdma.GIDFromAddr(a), guid: 0x5054_00ff_fe00_0000 | seed, qpCur: map[uint32]qp.State{}}
	cfg := engine.Config{CAGUID: n.guid, Source: engine.NewSeededSource(seed, 2), ACKDelay: rxeACKDelay, RecordStates: true}
	if mod != nil {
		mod(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.e = e
	return n
}

func newWire(t *testing.T) (*wire, *node, *node) {
	w := &wire{t: t, now: epoch}
	a := newNode(t, "a", "192.0.2.1", 1, nil)
	b := newNode(t, "b", "192.0.2.2", 2, nil)
	w.nodes = []*node{a, b}
	return w, a, b
}

func (n *node) path(to *node) engine.Path {
	return engine.Path{
		PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: n.gid, DGID: to.gid, HopLimit: 64, MTU: rdma.MTU1024, PacketLifeTime: rocePLT},
		Port:       1,
		RoCE:       true,
	}
}

func (w *wire) connectParams(from, to *node) engine.ConnectParams {
	return engine.ConnectParams{
		PortSpace: rdma.PortSpaceTCP,
		Src:       netip.AddrPortFrom(from.ip, testSourcePort), Dst: netip.AddrPortFrom(to.ip, testPort),
		Path: from.path(to), QPN: 0x11, ResponderResources: 1, InitiatorDepth: 1,
		RetryCount: 7, RNRRetryCount: 7,
	}
}

// collect takes one node's Ready: outputs go on the wire list, events and
// QP transitions are recorded (QP transitions checked with qp.Check).
func (w *wire) collect(n *node) []sent {
	w.t.Helper()
	if err := n.e.CheckInvariants(); err != nil {
		w.t.Fatalf("%s: invariant: %v", n.name, err)
	}
	if !n.e.HasReady() {
		return nil
	}
	r := n.e.Ready()
	var out []sent
	for _, o := range r.Messages {
		to := w.byGID(o.To.GID)
		if o.To.Port == 2 { // InfiniBand (FuzzReceive): to a LID, a GID only with a GRH
			if o.To.LID == 0 || o.To.HopLimit == 0 && o.To.GID != (rdma.GID{}) {
				w.t.Fatalf("%s sent on InfiniBand to LID %d, hop limit %d, GID %v", n.name, o.To.LID, o.To.HopLimit, o.To.GID)
			}
			to = w.nodes[0]
			if to == n {
				to = w.nodes[1]
			}
		}
		if _, err := mad.Parse(o.MAD[:]); err != nil {
			w.t.Fatalf("%s sent a MAD that does not parse: %v", n.name, err)
		}
		if o.To.QPN != 1 {
			w.t.Fatalf("%s sent to QP %d, not the GSI QP", n.name, o.To.QPN)
		}
		if to == nil && w.unrouted {
			continue
		}
		if to == nil {
			w.t.Fatalf("%s sent to unknown GID %v", n.name, o.To.GID)
		}
		s := sent{from: n, to: to, mad: o.MAD, retry: o.Retry}
		w.sent = append(w.sent, s)
		out = append(out, s)
	}
	for _, t := range r.QPTransitions {
		cur := n.qpCur[t.QPN]
		if cur != t.From {
			w.t.Fatalf("%s: QP %#x transition from %v but it is in %v", n.name, t.QPN, t.From, cur)
		}
		if err := qp.Check(t.Type, t.From, &t.Attr, t.Mask); err != nil {
			w.t.Fatalf("%s: QP transition %v: %v", n.name, &t, err)
		}
		n.qpCur[t.QPN] = t.To
		n.qps = append(n.qps, t)
	}
	for _, ev := range r.Events {
		ev.PrivateData = append([]byte(nil), ev.PrivateData...)
		ev.ARI = append([]byte(nil), ev.ARI...)
		n.events = append(n.events, ev)
	}
	n.e.Advance()
	return out
}

func (w *wire) byGID(g rdma.GID) *node {
	for _, n := range w.nodes {
		if n.gid == g {
			return n
		}
	}
	return nil
}

// run delivers MADs until none is left (no time passes).
func (w *wire) run() {
	w.t.Helper()
	for range 1000 {
		var batch []sent
		for _, n := range w.nodes {
			batch = append(batch, w.collect(n)...)
		}
		if len(batch) == 0 {
			return
		}
		for _, s := range batch {
			if w.drop != nil && w.drop(s) {
				continue
			}
			s.to.e.Receive(w.now, engine.Addr{Port: 1, GID: s.from.gid, QPN: 1, HopLimit: 64}, s.mad[:])
		}
	}
	w.t.Fatal("no quiescence after 1000 rounds")
}

// advance moves the clock by d, firing timers as they fall due.
func (w *wire) advance(d time.Duration) {
	w.t.Helper()
	end := w.now.Add(d)
	for {
		w.run()
		next := time.Time{}
		for _, n := range w.nodes {
			if dl := n.e.Deadline(); !dl.IsZero() && (next.IsZero() || dl.Before(next)) {
				next = dl
			}
		}
		if next.IsZero() || next.After(end) {
			break
		}
		w.now = next
		for _, n := range w.nodes {
			n.e.Tick(w.now)
		}
	}
	w.now = end
	w.run()
}

// sentOf returns the MADs of one attribute sent since index from.
func (w *wire) sentOf(attr mad.AttributeID, from int) []sent {
	var r []sent
	for _, s := range w.sent[from:] {
		if s.attr() == attr {
			r = append(r, s)
		}
	}
	return r
}

func (w *wire) trace() string {
	var b strings.Builder
	for _, s := range w.sent {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func (n *node) lastEvent(t *testing.T) engine.Event {
	t.Helper()
	if len(n.events) == 0 {
		t.Fatalf("%s: no event", n.name)
	}
	return n.events[len(n.events)-1]
}

func (n *node) eventTypes() []engine.EventType {
	var r []engine.EventType
	for _, ev := range n.events {
		r = append(r, ev.Type)
	}
	return r
}

func mustState(t *testing.T, n *node, id engine.ID, want engine.State) {
	t.Helper()
	got, ok := n.e.State(id)
	if !ok || got != want {
		t.Fatalf("%s: ID %v in %v (exists %v), want %v", n.name, id, got, ok, want)
	}
}

// establish runs a full handshake a -> b with b listening and accepting.
func establish(t *testing.T, w *wire, a, b *node) (active, passive engine.ID) {
	t.Helper()
	if _, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort}); err != nil && !errors.Is(err, engine.ErrBusy) {
		t.Fatal(err)
	}
	id, err := a.e.Connect(w.now, w.connectParams(a, b))
	if err != nil {
		t.Fatal(err)
	}
	w.run()
	req := b.lastEvent(t)
	if req.Type != engine.EventConnectRequest {
		t.Fatalf("b: %v, want CONNECT_REQUEST", req.Type)
	}
	if err := b.e.Accept(w.now, req.ID, engine.AcceptParams{QPN: 0x22, ResponderResources: 1, InitiatorDepth: 1, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	w.run()
	rep := a.lastEvent(t)
	if rep.Type != engine.EventConnectReply {
		t.Fatalf("a: %v, want CONNECT_REPLY", rep.Type)
	}
	if err := a.e.Establish(w.now, id, nil); err != nil {
		t.Fatal(err)
	}
	w.run()
	if ev := b.lastEvent(t); ev.Type != engine.EventEstablished {
		t.Fatalf("b: %v, want ESTABLISHED", ev.Type)
	}
	mustState(t, a, id, engine.StateEstablished)
	mustState(t, b, req.ID, engine.StateEstablished)
	return id, req.ID
}
