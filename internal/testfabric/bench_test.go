package testfabric

import (
	"runtime"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/rdma"
)

// newPairFabric is two nodes on a perfect link: node 2 listens, accepts
// and answers DREQs; node 1 sends the RTU; both destroy finished IDs.
// Invariant checks (O(IDs) each) are off.
func newPairFabric(tb testing.TB) *Fabric {
	f := New(2, 1)
	f.CheckInvariants = false
	f.Nodes[0].Policy = Policy{AutoEstablish: true, AutoDestroy: true}
	f.Nodes[1].Policy = Policy{AutoAccept: true, AutoDisconnect: true, AutoDestroy: true}
	if _, err := f.Nodes[1].Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
		tb.Fatal(err)
	}
	return f
}

// BenchmarkHandshake measures full connections on the simulated fabric:
// REQ → REP → RTU, then DREQ → DREP, every MAD encoded and parsed, both
// engines and the fabric on one goroutine. TimeWait (2048 ms of virtual
// time) is run out every 4096 connections. It reports handshakes/s (each
// one a connect and a teardown) and the heap retained per established
// connection, both ends counted, measured with 10,000 connections open.
// handshakes/cpu-s is the same rate per second of process CPU time, which
// other processes on a busy machine do not inflate.
func BenchmarkHandshake(b *testing.B) {
	f := newPairFabric(b)
	a := f.Nodes[0].Engine
	b.ReportAllocs()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		id, err := f.Connect(0, 1, port)
		if err != nil {
			b.Fatal(err)
		}
		f.Stabilize()
		if st, _ := a.State(id); st != engine.StateEstablished {
			b.Fatalf("connection %d in %v", n, st)
		}
		if err := a.Disconnect(f.Now, id, nil); err != nil {
			b.Fatal(err)
		}
		f.Stabilize()
		n++
		if n%4096 == 0 {
			f.Advance(3 * time.Second)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "handshakes/s")
	// The same rate per second of CPU the process used: on a shared
	// machine wall-clock time also counts other processes' turns.
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "handshakes/cpu-s")
	}
	b.StopTimer()
	if err := f.Err(); err != nil {
		b.Fatal(err)
	}
	per, err := retainedPerConn(10000)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(per, "B/conn")
}

// establishMany opens n connections from node 1 to node 2 and checks that
// every one is established at both ends.
func establishMany(f *Fabric, n int) ([]engine.ID, error) {
	ids := make([]engine.ID, 0, n)
	for i := range n {
		id, err := f.Connect(0, 1, port)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		if i%1024 == 1023 {
			f.Stabilize()
		}
	}
	f.Stabilize()
	for _, id := range ids {
		if st, _ := f.Nodes[0].Engine.State(id); st != engine.StateEstablished {
			return nil, errorf("active ID %v in %v", id, st)
		}
	}
	if got := f.Nodes[1].Engine.Len(); got != n+1 {
		return nil, errorf("passive side holds %d IDs, want %d", got, n+1)
	}
	return ids, f.Err()
}

// retainedPerConn returns the heap growth per established connection (both
// engines' state and the fabric's share), after a GC.
func retainedPerConn(n int) (float64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f := New(2, 7)
	f.CheckInvariants = false
	f.Nodes[0].Policy = Policy{AutoEstablish: true}
	f.Nodes[1].Policy = Policy{AutoAccept: true}
	if _, err := f.Nodes[1].Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
		return 0, err
	}
	ids, err := establishMany(f, n)
	if err != nil {
		return 0, err
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(f)
	runtime.KeepAlive(ids)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n), nil
}

type strErr string

func (e strErr) Error() string { return string(e) }

func errorf(format string, a ...any) error { return strErr(sprintf(format, a...)) }

// BenchmarkHandshakeEngines is BenchmarkHandshake without the fabric: two
// engines wired back to back, each Ready's MADs handed straight to the
// other's Receive and its events answered in place (no links, packet
// queues, policies, QP bookkeeping or GID lookups). It is the engine's own
// cost per handshake, both ends, MAD encode and decode included.
func BenchmarkHandshakeEngines(b *testing.B) {
	f := New(2, 1) // for the nodes' addresses and paths only
	na, nb := f.Nodes[0], f.Nodes[1]
	ea, eb := na.Engine, nb.Engine
	now := f.Now
	if _, err := eb.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
		b.Fatal(err)
	}
	p := na.ConnectParams(nb, port)
	fromA := engine.Addr{Port: 1, GID: na.GID, QPN: 1, HopLimit: 64}
	fromB := engine.Addr{Port: 1, GID: nb.GID, QPN: 1, HopLimit: 64}
	type act struct {
		typ        engine.EventType
		id         engine.ID
		resp, init uint8
	}
	var acts []act
	var failed error
	check := func(err error) {
		if err != nil && failed == nil {
			failed = err
		}
	}
	// drain hands e's MADs to peer and answers e's events.
	drain := func(e, peer *engine.Engine, from engine.Addr) {
		r := e.Ready()
		for i := range r.Messages {
			peer.Receive(now, from, r.Messages[i].MAD[:])
		}
		acts = acts[:0]
		for i := range r.Events {
			ev := &r.Events[i]
			a := act{typ: ev.Type, id: ev.ID}
			if ev.Type == engine.EventConnectRequest { // only Accept reads the rest
				a.resp, a.init = ev.Conn.ResponderResources, ev.Conn.InitiatorDepth
			}
			acts = append(acts, a)
		}
		e.Advance()
		for _, a := range acts {
			switch a.typ {
			case engine.EventConnectRequest:
				check(e.Accept(now, a.id, engine.AcceptParams{QPN: 0x22, ResponderResources: a.resp, InitiatorDepth: a.init, RNRRetryCount: 7}))
			case engine.EventConnectReply:
				check(e.Establish(now, a.id, nil))
			case engine.EventDisconnectRequest:
				check(e.Disconnect(now, a.id, nil))
			case engine.EventTimewaitExit:
				check(e.Destroy(now, a.id))
			}
		}
	}
	pump := func() {
		for ea.HasReady() || eb.HasReady() {
			if ea.HasReady() {
				drain(ea, eb, fromA)
			}
			if eb.HasReady() {
				drain(eb, ea, fromB)
			}
		}
	}
	b.ReportAllocs()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		p.QPN = 0x100 + uint32(n)&0xffff // a new QPN per connection, as the REQ's remote QPN table wants
		id, err := ea.Connect(now, p)
		if err != nil {
			b.Fatal(err)
		}
		pump()
		if st, _ := ea.State(id); st != engine.StateEstablished {
			b.Fatalf("connection %d in %v", n, st)
		}
		check(ea.Disconnect(now, id, nil))
		pump()
		n++
		if n%4096 == 0 {
			now = now.Add(3 * time.Second)
			ea.Tick(now)
			eb.Tick(now)
			pump()
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "handshakes/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "handshakes/cpu-s")
	}
	if failed != nil {
		b.Fatal(failed)
	}
}
