package engine_test

import (
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// newBoundedWire is newWire with b's half-open bound set to max.
func newBoundedWire(t *testing.T, max int) (*wire, *node, *node) {
	w := &wire{t: t, now: epoch}
	a := newNode(t, "a", "192.0.2.1", 1, nil)
	b := newNode(t, "b", "192.0.2.2", 2, func(c *engine.Config) { c.MaxHalfOpen = max })
	w.nodes = []*node{a, b}
	return w, a, b
}

// The half-open bound: requests the consumer has not answered fill it and
// the next REQ is dropped without a REJ; once requests are accepted, a new
// REQ evicts the oldest one still waiting for its RTU (REJ 3 to its peer,
// REP_ERROR to the consumer, no TimeWait). A duplicate REQ of a held
// request allocates nothing.
func TestHalfOpenBound(t *testing.T) {
	w, a, b := newBoundedWire(t, 3)
	l, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	if err != nil {
		t.Fatal(err)
	}
	p := w.connectParams(a, b)
	var active []engine.ID
	connect := func() engine.ID {
		t.Helper()
		p.QPN++
		id, err := a.e.Connect(w.now, p)
		if err != nil {
			t.Fatal(err)
		}
		active = append(active, id)
		w.run()
		return id
	}
	halfOpen := func() int {
		n, ok := b.e.HalfOpen(l)
		if !ok {
			t.Fatal("HalfOpen: listener unknown")
		}
		return n
	}
	for range 4 {
		connect()
	}
	if n, s := halfOpen(), b.e.Stats(); n != 3 || len(b.events) != 3 || s.BacklogDrops != 1 || s.Evicted != 0 || b.e.Len() != 4 {
		t.Fatalf("3 unanswered + 1: half-open %d, events %v, stats %+v, %d IDs", n, b.eventTypes(), s, b.e.Len())
	}
	if n := len(w.sentOf(mad.AttrREJ, 0)); n != 0 {
		t.Fatalf("dropped REQ drew %d REJs", n)
	}

	// a never sends the RTU: the two accepted wait for it, oldest first.
	for i, ev := range b.events[:2] {
		if err := b.e.Accept(w.now, ev.ID, engine.AcceptParams{QPN: 0x40 + uint32(i), RNRRetryCount: 7}); err != nil {
			t.Fatal(err)
		}
		w.run()
		if st, _ := a.e.State(active[i]); st != engine.StateMRAREPSent { // REP_RCVD, delayed MRA armed
			t.Fatalf("%v in %v\n%s", active[i], st, w.trace())
		}
	}
	oldest := b.events[0].ID

	// Duplicates of the held requests (one waiting for its RTU, one for
	// the consumer) draw no new ID.
	before, drops := b.e.Len(), b.e.Stats().BacklogDrops
	reqs := w.sentOf(mad.AttrREQ, 0)
	for _, r := range []sent{reqs[0], reqs[2]} {
		b.e.Receive(w.now, engine.Addr{Port: 1, GID: a.gid, QPN: 1, HopLimit: 64}, r.mad[:])
	}
	w.collect(b)
	if b.e.Len() != before || halfOpen() != 3 || b.e.Stats().BacklogDrops != drops || len(w.sentOf(mad.AttrMRA, 0)) != 1 {
		t.Fatalf("duplicate REQs: %d IDs (was %d), half-open %d, stats %+v\n%s", b.e.Len(), before, halfOpen(), b.e.Stats(), w.trace())
	}

	evs := len(b.events)
	id := connect()
	if s := b.e.Stats(); s.Evicted != 1 || halfOpen() != 3 {
		t.Fatalf("REQ past the bound: stats %+v, half-open %d", s, halfOpen())
	}
	got := b.events[evs:]
	if len(got) != 2 || got[0].Type != engine.EventRepError || got[0].ID != oldest || got[1].Type != engine.EventConnectRequest {
		t.Fatalf("eviction events: %v", got)
	}
	if _, ok := b.e.State(oldest); !ok {
		t.Fatal("evicted ID gone before Destroy")
	}
	if st, _ := b.e.State(oldest); st != engine.StateIdle {
		t.Fatalf("evicted ID in %v, want IDLE (no TimeWait)", st)
	}
	rej := w.sentOf(mad.AttrREJ, 0)
	if len(rej) != 1 {
		t.Fatalf("%d REJs:\n%s", len(rej), w.trace())
	}
	if r, _ := mad.ParseREJ(rej[0].mad[:]); r.Reason() != mad.RejectNoResources || r.LocalCommID() != uint32(oldest) {
		t.Fatalf("eviction REJ %s", mad.Describe(rej[0].mad[:]))
	}
	if ev := a.events[len(a.events)-1]; ev.Type != engine.EventRejected || ev.Reason != mad.RejectNoResources {
		t.Fatalf("a: %v", &ev)
	}
	if err := b.e.Destroy(w.now, oldest); err != nil {
		t.Fatal(err)
	}
	_ = id

	// Established connections leave the bound.
	if err := b.e.Accept(w.now, b.events[len(b.events)-1].ID, engine.AcceptParams{QPN: 0x42, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	w.run()
	if err := a.e.Establish(w.now, id, nil); err != nil {
		t.Fatal(err)
	}
	w.run()
	if halfOpen() != 2 {
		t.Fatalf("after ESTABLISHED: half-open %d, want 2", halfOpen())
	}
}

// A bound of -1 is none: every request is held.
func TestHalfOpenUnbounded(t *testing.T) {
	w, a, b := newBoundedWire(t, -1)
	l, _ := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	p := w.connectParams(a, b)
	for i := range 50 {
		p.QPN = 0x100 + uint32(i)
		if _, err := a.e.Connect(w.now, p); err != nil {
			t.Fatal(err)
		}
	}
	w.run()
	if n, _ := b.e.HalfOpen(l); n != 50 || b.e.Stats().BacklogDrops != 0 {
		t.Fatalf("half-open %d, stats %+v", n, b.e.Stats())
	}
}

// The half-open bound applies to SIDR requests too: they wait for the
// consumer, so one past the bound is dropped.
func TestHalfOpenSIDR(t *testing.T) {
	w, a, b := newBoundedWire(t, 1)
	l, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceUDP, Port: 9000, QPType: qp.UD})
	if err != nil {
		t.Fatal(err)
	}
	p := w.connectParams(a, b)
	sp := engine.SIDRParams{PortSpace: rdma.PortSpaceUDP, Src: p.Src, Dst: netipPort(p.Dst, 9000), Path: a.path(b)}
	for range 2 {
		if _, err := a.e.ResolveSIDR(w.now, sp); err != nil {
			t.Fatal(err)
		}
	}
	w.run()
	if n, _ := b.e.HalfOpen(l); n != 1 || len(b.events) != 1 || b.e.Stats().BacklogDrops != 1 {
		t.Fatalf("half-open %d, events %v, stats %+v", n, b.eventTypes(), b.e.Stats())
	}
	if err := b.e.ReplySIDR(w.now, b.events[0].ID, engine.SIDRReplyParams{QPN: 0x50, QKey: 1}); err != nil {
		t.Fatal(err)
	}
	w.run()
	if n, _ := b.e.HalfOpen(l); n != 0 {
		t.Fatalf("after the reply: half-open %d", n)
	}
}

// A listener destroyed under its half-open IDs leaves them consistent:
// they end normally and leave nothing behind.
func TestHalfOpenListenerDestroyed(t *testing.T) {
	w, a, b := newBoundedWire(t, 2)
	l, _ := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	p := w.connectParams(a, b)
	_, _ = a.e.Connect(w.now, p)
	w.run()
	req := b.events[0].ID
	if err := b.e.Accept(w.now, req, engine.AcceptParams{QPN: 0x40, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	if err := b.e.Destroy(w.now, l); err != nil {
		t.Fatal(err)
	}
	w.run()
	if err := b.e.Destroy(w.now, req); err != nil {
		t.Fatal(err)
	}
	w.advance(10 * time.Minute)
	if b.e.Len() != 0 || b.e.Timers() != 0 {
		t.Fatalf("left %d IDs, %d timers", b.e.Len(), b.e.Timers())
	}
}
