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
	f.Nodes[1].Policy = Policy{AutoAccept: true, AutoDREP: true, AutoDestroy: true}
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
