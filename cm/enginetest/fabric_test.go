package enginetest_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/cm/enginetest"
	"github.com/go-rdma/rdmacm/mad"
)

var auto = enginetest.Policy{AutoAccept: true, AutoEstablish: true, AutoDisconnect: true, AutoDestroy: true}

// setup returns a fabric of two nodes with node 2 listening on port 7174.
func setup(t *testing.T, opts ...enginetest.Option) (*enginetest.Fabric, *enginetest.Node, *enginetest.Node) {
	t.Helper()
	f := enginetest.NewFabric(2, opts...)
	if _, err := f.Node(2).Listen(7174); err != nil {
		t.Fatal(err)
	}
	return f, f.Node(1), f.Node(2)
}

// record logs every message's fate.
func record(f *enginetest.Fabric) *[]enginetest.Message {
	var log []enginetest.Message
	f.OnMessage(func(m enginetest.Message) {
		m.MAD = nil
		log = append(log, m)
	})
	return &log
}

func count(log []enginetest.Message, kind mad.AttributeID, fate enginetest.Fate) int {
	n := 0
	for _, m := range log {
		if (kind == 0 || m.Kind == kind) && m.Fate == fate {
			n++
		}
	}
	return n
}

func types(evs []enginetest.Event) []engine.EventType {
	var ts []engine.EventType
	for _, ev := range evs {
		ts = append(ts, ev.Type)
	}
	return ts
}

func wantState(t *testing.T, n *enginetest.Node, id engine.ID, want engine.State) {
	t.Helper()
	if got, ok := n.State(id); !ok || got != want {
		t.Errorf("node %d ID %v: state %v (%v), want %v", n.Num(), id, got, ok, want)
	}
}

func noErr(t *testing.T, f *enginetest.Fabric) {
	t.Helper()
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
}

// lossy runs 20 connections and their teardown through a fabric that
// drops, duplicates and reorders, and returns a transcript of it.
func lossy(t *testing.T, seed uint64) string {
	f, c, s := setup(t, enginetest.WithSeed(seed), enginetest.WithPolicy(auto),
		enginetest.WithLatency(100*time.Microsecond))
	f.AddFault(enginetest.Fault{Action: enginetest.Drop, Rate: 0.2})
	f.AddFault(enginetest.Fault{Action: enginetest.Duplicate, Rate: 0.1})
	f.AddFault(enginetest.Fault{Action: enginetest.Reorder, Rate: 0.3, Delay: 5 * time.Millisecond})
	var b strings.Builder
	f.OnMessage(func(m enginetest.Message) { fmt.Fprintln(&b, m) })
	var ids []engine.ID
	for range 20 {
		id, err := c.Connect(s, 7174)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	f.Advance(30 * time.Second)
	for _, id := range ids {
		if st, _ := c.State(id); st == engine.StateEstablished {
			if err := c.Disconnect(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !f.RunUntilIdle() {
		t.Fatal("not idle")
	}
	noErr(t, f)
	for _, ev := range f.Events() {
		fmt.Fprintln(&b, ev)
	}
	fmt.Fprintf(&b, "%+v\n", f.Stats())
	return b.String()
}

func TestDeterministic(t *testing.T) {
	a, b := lossy(t, 7), lossy(t, 7)
	if a != b {
		t.Fatal("same seed, different runs")
	}
	if c := lossy(t, 8); c == a {
		t.Fatal("different seeds, same run")
	}
	for _, want := range []string{"dropped", "duplicate", "resend", "ESTABLISHED", "TIMEWAIT_EXIT"} {
		if !strings.Contains(a, want) {
			t.Errorf("run has no %q:\n%s", want, a)
		}
	}
}

func TestDropKind(t *testing.T) {
	f, c, s := setup(t, enginetest.WithPolicy(auto))
	log := record(f)
	f.AddFault(enginetest.Fault{From: 1, To: 2, Kind: mad.AttrREQ, Action: enginetest.Drop, Count: 1})
	id, err := c.Connect(s, 7174)
	if err != nil {
		t.Fatal(err)
	}
	if !f.RunUntilIdle() {
		t.Fatal("not idle")
	}
	noErr(t, f)
	wantState(t, c, id, engine.StateEstablished)
	if n := count(*log, mad.AttrREQ, enginetest.Dropped); n != 1 {
		t.Errorf("%d REQs dropped, want 1", n)
	}
	// The resent REQ went out after 2 × 2^(18-8) + 2^(20-8) ms.
	if got := c.Events()[0].At.Sub(enginetest.Epoch); got != 6144*time.Millisecond {
		t.Errorf("CONNECT_REPLY at %v, want 6.144s", got)
	}
	if st := f.Stats(); st.Dropped != 1 || st.Lost != 0 || st.Duplicated != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestDropRate(t *testing.T) {
	f, c, s := setup(t, enginetest.WithSeed(3))
	log := record(f)
	f.AddFault(enginetest.Fault{Kind: mad.AttrREQ, Action: enginetest.Drop, Rate: 0.5})
	for range 400 {
		if _, err := c.Connect(s, 7174); err != nil {
			t.Fatal(err)
		}
	}
	f.Settle()
	dropped := count(*log, mad.AttrREQ, enginetest.Dropped)
	delivered := count(*log, mad.AttrREQ, enginetest.Delivered)
	if dropped+delivered != 400 || dropped < 150 || dropped > 250 {
		t.Errorf("%d dropped, %d delivered of 400 at rate 0.5", dropped, delivered)
	}
}

func TestDuplicate(t *testing.T) {
	f, c, s := setup(t, enginetest.WithPolicy(auto))
	log := record(f)
	f.AddFault(enginetest.Fault{Kind: mad.AttrREQ, Action: enginetest.Duplicate})
	id, err := c.Connect(s, 7174)
	if err != nil {
		t.Fatal(err)
	}
	f.RunUntilIdle()
	noErr(t, f)
	wantState(t, c, id, engine.StateEstablished)
	if n := count(*log, mad.AttrREQ, enginetest.Delivered); n != 2 || !(*log)[1].Duplicate {
		t.Errorf("REQ delivered %d times, log %v", n, *log)
	}
	if got := types(s.Events()); !slices.Equal(got, []engine.EventType{engine.EventConnectRequest, engine.EventEstablished}) {
		t.Errorf("server events %v: the duplicate REQ made a second request", got)
	}
	if f.Stats().Duplicated != 1 {
		t.Errorf("stats %+v", f.Stats())
	}
}

func TestDelay(t *testing.T) {
	f, c, s := setup(t, enginetest.WithPolicy(auto))
	f.AddFault(enginetest.Fault{Kind: mad.AttrREP, Action: enginetest.Delay, Delay: 5 * time.Millisecond})
	if _, err := c.Connect(s, 7174); err != nil {
		t.Fatal(err)
	}
	f.Settle()
	if f.InFlight() != 1 || len(c.Events()) != 0 {
		t.Fatalf("in flight %d, client events %v", f.InFlight(), c.Events())
	}
	f.Advance(5*time.Millisecond - 1)
	if len(c.Events()) != 0 {
		t.Fatalf("REP arrived early: %v", c.Events())
	}
	f.Advance(1)
	if evs := c.Events(); len(evs) != 1 || evs[0].Type != engine.EventConnectReply || evs[0].At.Sub(enginetest.Epoch) != 5*time.Millisecond {
		t.Fatalf("client events %v", evs)
	}
	if f.Stats().Delayed != 1 {
		t.Errorf("stats %+v", f.Stats())
	}
}

func TestReorder(t *testing.T) {
	f, c, s := setup(t)
	log := record(f)
	f.AddFault(enginetest.Fault{Kind: mad.AttrREQ, Action: enginetest.Reorder, Count: 1, Delay: time.Millisecond})
	first, _ := c.Connect(s, 7174)
	second, _ := c.Connect(s, 7174)
	f.RunUntil(func() bool { return len(s.Events()) == 2 })
	evs := s.Events()
	if len(evs) != 2 {
		t.Fatalf("server events %v", evs)
	}
	// The requests arrive in the reverse order: the first REQ's remote
	// ID, seen by the server, is the client's first ID.
	if engine.ID(evs[0].Conn.RemoteCommID) != second || engine.ID(evs[1].Conn.RemoteCommID) != first {
		t.Errorf("requests arrived in order %v, %v; sent %v, %v",
			engine.ID(evs[0].Conn.RemoteCommID), engine.ID(evs[1].Conn.RemoteCommID), first, second)
	}
	if !evs[1].At.After(evs[0].At) || evs[1].At.Sub(enginetest.Epoch) > time.Millisecond {
		t.Errorf("second arrival at %v", evs[1].At.Sub(enginetest.Epoch))
	}
	if count(*log, mad.AttrREQ, enginetest.Delivered) != 2 {
		t.Errorf("log %v", *log)
	}
}

func TestRemoveFault(t *testing.T) {
	f, c, s := setup(t, enginetest.WithPolicy(auto))
	remove := f.AddFault(enginetest.Fault{Action: enginetest.Drop})
	remove()
	id, _ := c.Connect(s, 7174)
	f.Settle()
	wantState(t, c, id, engine.StateEstablished)

	f.AddFault(enginetest.Fault{Action: enginetest.Drop})
	f.ClearFaults()
	id, _ = c.Connect(s, 7174)
	f.Settle()
	wantState(t, c, id, engine.StateEstablished)

	defer func() {
		if recover() == nil {
			t.Error("AddFault took a bad action")
		}
	}()
	f.AddFault(enginetest.Fault{})
}

func TestPartitionHeal(t *testing.T) {
	f, c, s := setup(t, enginetest.WithPolicy(auto))
	log := record(f)
	f.Partition(1, 2)
	id, err := c.Connect(s, 7174)
	if err != nil {
		t.Fatal(err)
	}
	f.Advance(7 * time.Second) // the first resend, at 6.144 s, is lost too
	f.Heal(2, 1)
	if !f.RunUntilIdle() {
		t.Fatal("not idle")
	}
	noErr(t, f)
	wantState(t, c, id, engine.StateEstablished)
	if n := count(*log, mad.AttrREQ, enginetest.Lost); n != 2 {
		t.Errorf("%d REQs lost, want 2", n)
	}
	if f.Stats().Lost != 2 {
		t.Errorf("stats %+v", f.Stats())
	}
}

func TestPartitionInFlight(t *testing.T) {
	f, c, s := setup(t, enginetest.WithLatency(time.Millisecond))
	log := record(f)
	if _, err := c.Connect(s, 7174); err != nil {
		t.Fatal(err)
	}
	f.Partition(1, 2) // the REQ is on the wire
	f.Advance(time.Millisecond)
	if n := count(*log, mad.AttrREQ, enginetest.Lost); n != 1 || len(s.Events()) != 0 {
		t.Errorf("%d REQs lost, server events %v", n, s.Events())
	}
}

func TestCrashRestart(t *testing.T) {
	f, c, s := setup(t, enginetest.WithPolicy(auto))
	id, _ := c.Connect(s, 7174)
	f.Settle()
	wantState(t, c, id, engine.StateEstablished)

	f.Crash(2)
	if !s.Crashed() || s.Engine() != nil {
		t.Fatal("node 2 not crashed")
	}
	if _, err := s.Listen(1); !errors.Is(err, enginetest.ErrCrashed) {
		t.Errorf("Listen on a crashed node: %v", err)
	}
	if err := c.Disconnect(id); err != nil {
		t.Fatal(err)
	}
	f.RunUntilIdle()
	noErr(t, f)
	if got := types(c.Events()); !slices.Contains(got, engine.EventDreqError) {
		t.Errorf("client events %v, want DREQ_ERROR", got)
	}
	if f.Stats().Lost == 0 {
		t.Errorf("stats %+v", f.Stats())
	}

	f.Restart(2)
	if s.Crashed() || s.Engine() == nil || s.Engine().Len() != 0 {
		t.Fatal("node 2 did not restart empty")
	}
	if _, err := s.Listen(7174); err != nil {
		t.Fatal(err)
	}
	id, _ = c.Connect(s, 7174)
	f.Settle()
	noErr(t, f)
	wantState(t, c, id, engine.StateEstablished)
}

func TestStep(t *testing.T) {
	f, c, s := setup(t, enginetest.WithLatency(time.Millisecond))
	if f.Step() {
		t.Fatal("Step on an idle fabric")
	}
	id, _ := c.Connect(s, 7174)
	if f.InFlight() != 1 {
		t.Fatalf("in flight %d", f.InFlight())
	}
	// One step: the clock moves to the REQ's arrival and delivers it.
	if !f.Step() || f.Elapsed() != time.Millisecond || len(s.Events()) != 1 {
		t.Fatalf("after a step: %v, server events %v", f.Elapsed(), s.Events())
	}
	req := s.Events()[0]
	if req.Type != engine.EventConnectRequest || req.Node != 2 {
		t.Fatalf("event %v", req)
	}
	if err := s.Accept(req.ID); err != nil {
		t.Fatal(err)
	}
	f.Step()
	if evs := c.Events(); len(evs) != 1 || evs[0].Type != engine.EventConnectReply {
		t.Fatalf("client events %v", evs)
	}
	if err := c.Establish(id); err != nil {
		t.Fatal(err)
	}
	f.Step()
	wantState(t, s, req.ID, engine.StateEstablished)
	if f.Step() {
		t.Error("Step after the handshake")
	}
	noErr(t, f)
}

func TestStepFiresTimers(t *testing.T) {
	f, c, s := setup(t)
	f.Partition(1, 2)
	if _, err := c.Connect(s, 7174); err != nil {
		t.Fatal(err)
	}
	steps := 0
	for f.Step() {
		steps++
	}
	// 15 resends, then REQ_ERROR with the 16th timer.
	if steps != 16 || f.Elapsed() != 16*6144*time.Millisecond {
		t.Errorf("%d steps, ended at %v", steps, f.Elapsed())
	}
	if got := types(c.Events()); !slices.Equal(got, []engine.EventType{engine.EventReqError}) {
		t.Errorf("client events %v", got)
	}
}

func TestAdvanceClock(t *testing.T) {
	f := enginetest.NewFabric(1)
	f.Advance(1500 * time.Millisecond)
	if f.Elapsed() != 1500*time.Millisecond || !f.Now().Equal(enginetest.Epoch.Add(1500*time.Millisecond)) {
		t.Errorf("clock at %v", f.Elapsed())
	}
	if !f.RunUntilIdle() || f.Elapsed() != 1500*time.Millisecond {
		t.Errorf("RunUntilIdle moved an idle clock to %v", f.Elapsed())
	}
}

func TestOnEventHook(t *testing.T) {
	f, c, s := setup(t)
	c.SetPolicy(enginetest.Policy{AutoEstablish: true})
	var pd []byte
	s.OnEvent(func(n *enginetest.Node, ev enginetest.Event) {
		if ev.Type == engine.EventConnectRequest {
			pd = ev.PrivateData
			if err := n.Accept(ev.ID); err != nil {
				t.Error(err)
			}
		}
	})
	p := c.ConnectParams(s, 7174)
	p.PrivateData = []byte("hello")
	id, err := c.ConnectWith(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Settle()
	noErr(t, f)
	wantState(t, c, id, engine.StateEstablished)
	if !strings.HasPrefix(string(pd), "hello") {
		t.Errorf("private data %q", pd)
	}
	// The node's copy outlives the engine's Ready.
	if got := s.Events()[0].PrivateData; !strings.HasPrefix(string(got), "hello") {
		t.Errorf("recorded private data %q", got)
	}
}

func TestManageQP(t *testing.T) {
	p := auto
	p.ManageQP = true
	f, c, s := setup(t, enginetest.WithPolicy(p))
	id, _ := c.Connect(s, 7174)
	f.RunUntilIdle()
	noErr(t, f) // every transition passed qp.Check
	wantState(t, c, id, engine.StateEstablished)
	if got := types(c.Events()); !slices.Equal(got, []engine.EventType{engine.EventEstablished}) {
		t.Errorf("client events %v", got)
	}
}

func TestWithConfig(t *testing.T) {
	var seen []int
	f := enginetest.NewFabric(2, enginetest.WithConfig(func(node int, cfg *engine.Config) {
		seen = append(seen, node)
		cfg.MaxCMRetries = 1
	}))
	f.Partition(1, 2)
	f.Node(1).Connect(f.Node(2), 1)
	f.RunUntilIdle()
	if !slices.Equal(seen, []int{1, 2}) || f.Elapsed() != 2*6144*time.Millisecond {
		t.Errorf("config for %v; REQ_ERROR at %v", seen, f.Elapsed())
	}
	f.Restart(2)
	if !slices.Equal(seen, []int{1, 2, 2}) {
		t.Errorf("config for %v after restart", seen)
	}
}

// Independent fabrics share nothing: run them in parallel under -race.
func TestParallel(t *testing.T) {
	out := make([]string, 8)
	t.Run("group", func(t *testing.T) {
		for i := range out {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				out[i] = lossy(t, 42)
			})
		}
	})
	for i := range out {
		if out[i] != out[0] {
			t.Fatalf("run %d differs", i)
		}
	}
}
