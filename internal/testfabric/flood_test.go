package testfabric

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// floodConfig shapes TestREQFlood: reqs REQs from the hostile node, batch
// of them every gap of virtual time, legit connections spread evenly.
type floodConfig struct {
	reqs, batch, legit int
	gap                time.Duration
	maxHalfOpen        int
	// keep leaves the flood's requests in place: no teardown, no drain.
	keep bool
	// slowAccept, when not 0, makes the server a slow consumer: it
	// accepts the requests it was given only every slowAccept batches.
	slowAccept int
}

// floodResult is what a flood left and cost.
type floodResult struct {
	maxIDs, maxHalfOpen int
	// retained is the heap the flood left live, measured at its end.
	retained    int64
	connectTime []time.Duration // virtual time from Connect to the REP
	established int             // legitimate connections ESTABLISHED at the server
	staleREJs   int
	stats       engine.Stats
	wall        time.Duration
}

// floodREQ is a REQ as a hostile node forges it: random communication
// ID, CA GUID, QPN, PSN and GIDs, random timeouts and retry count (so
// some answers would wait hours), a valid IP header for the listener.
func floodREQ(rng *rand.Rand, dst netip.Addr) [mad.MADSize]byte {
	var gid rdma.GID
	for i := range gid {
		gid[i] = byte(rng.Uint32())
	}
	src := netip.AddrFrom4([4]byte{10, byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())})
	r := mad.REQ{Header: mad.Header{TransactionID: rng.Uint64()},
		LocalCommID: rng.Uint32() | 1, ServiceID: mad.ServiceID(rdma.PortSpaceTCP, port),
		LocalCAGUID: rng.Uint64(), LocalQPN: rng.Uint32() & 0xffffff, StartingPSN: rng.Uint32() & 0xffffff,
		LocalCMResponseTimeout: uint8(rng.UintN(32)), RemoteCMResponseTimeout: 20, MaxCMRetries: uint8(rng.UintN(16)),
		PathMTU: rdma.MTU1024, TransportServiceType: mad.TransportRC, ResponderResources: 1, InitiatorDepth: 1,
		RetryCount: 7, RNRRetryCount: 7}
	r.Primary.LocalGID, r.Primary.RemoteGID = gid, rdma.GIDFromAddr(dst)
	r.Primary.LocalLID, r.Primary.RemoteLID = 0xffff, 0xffff
	r.Primary.LocalACKTimeout = uint8(rng.UintN(32))
	h := mad.IPHeader{IPVersion: 4, SrcPort: uint16(rng.Uint32()), Src: src, Dst: dst}
	_ = h.MarshalWithData(r.PrivateData[:], nil)
	var b [mad.MADSize]byte
	if _, err := r.MarshalTo(b[:]); err != nil {
		panic(err)
	}
	return b
}

// runFlood floods node 2's listener from node 3 (a node that only sends)
// while node 1 connects cfg.legit times, then disconnects them and runs
// the fabric until it is idle. Every 8th flood REQ repeats a recent one
// (a duplicate), every 8th another reuses a recent one's CA GUID and QPN
// under a new communication ID (stale).
func runFlood(t testing.TB, cfg floodConfig) floodResult {
	f := NewConfigured(3, 42, func(n *Node, c *engine.Config) {
		if n.Index == 1 {
			c.MaxHalfOpen = cfg.maxHalfOpen
		}
	})
	f.CheckInvariants = false // O(IDs) per drain: checked every batch below
	f.Unrouted = true
	f.Latency = 20 * time.Microsecond
	f.Crash(2) // the hostile node: sends, receives nothing
	client, server := f.Nodes[0], f.Nodes[1]
	client.Policy = Policy{AutoEstablish: true, AutoDestroy: true}
	server.Policy = Policy{AutoAccept: cfg.slowAccept == 0, AutoDisconnect: true, AutoDestroy: true}
	l, err := server.Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	started := map[engine.ID]time.Time{}
	var res floodResult
	client.OnEvent = func(n *Node, ev *engine.Event) {
		switch ev.Type {
		case engine.EventConnectReply: // AutoEstablish sends the RTU
			res.connectTime = append(res.connectTime, f.Now.Sub(started[ev.ID]))
		case engine.EventRejected, engine.EventReqError:
			f.errorf(n, "legitimate connection %v: %v (reason %d)", ev.ID, ev.Type, ev.Reason)
		}
	}
	var waiting []engine.ID // requests the slow consumer has yet to answer
	server.OnEvent = func(n *Node, ev *engine.Event) {
		switch ev.Type {
		case engine.EventEstablished: // only a legitimate client sends an RTU
			res.established++
		case engine.EventConnectRequest:
			if cfg.slowAccept != 0 {
				waiting = append(waiting, ev.ID)
			}
		}
	}
	acceptWaiting := func() {
		for _, id := range waiting {
			if err := server.Engine.Accept(f.Now, id, server.AcceptParams(1, 1)); err != nil {
				t.Fatalf("accept %v: %v", id, err)
			}
		}
		waiting = waiting[:0]
		f.Flush()
	}
	// The stale REQs' REJ 10 go back to the hostile node (the eviction
	// REJs go to forged GIDs, which OnMessage does not see).
	f.OnMessage = func(m Message) {
		if m.From == 1 && m.Kind == mad.AttrREJ {
			if r, err := mad.ParseREJ(m.MAD); err == nil && r.Reason() == mad.RejectStaleConn {
				res.staleREJs++
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var recent [64][mad.MADSize]byte // the latest new REQs
	var fresh uint
	var legit []engine.ID
	every := cfg.reqs / cfg.legit

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for i := 0; i < cfg.reqs; {
		for k := 0; k < cfg.batch && i < cfg.reqs; k, i = k+1, i+1 {
			var m [mad.MADSize]byte
			switch {
			case i%8 == 3 && fresh > 0:
				m = recent[rng.UintN(min(fresh, 64))]
			case i%8 == 7 && fresh > 0:
				m = recent[rng.UintN(min(fresh, 64))]
				binary.BigEndian.PutUint32(m[24:28], rng.Uint32()|1) // LocalCommID
			default:
				m = floodREQ(rng, server.IP)
				recent[fresh%64] = m
				fresh++
			}
			f.Inject(2, 1, m[:])
			if i%every == every/2 {
				id, err := f.Connect(0, 1, port)
				if err != nil {
					t.Fatal(err)
				}
				started[id] = f.Now
				legit = append(legit, id)
			}
		}
		if cfg.slowAccept != 0 && (i/cfg.batch)%cfg.slowAccept == 0 {
			acceptWaiting()
		}
		f.Advance(cfg.gap)
		if n := server.Engine.Len(); n > res.maxIDs {
			res.maxIDs = n
		}
		if h, _ := server.Engine.HalfOpen(l); h > res.maxHalfOpen {
			res.maxHalfOpen = h
		}
		if i%(16*cfg.batch) == 0 {
			if err := server.Engine.CheckInvariants(); err != nil {
				t.Fatalf("after %d REQs: %v", i, err)
			}
		}
	}
	f.Advance(time.Millisecond) // the last handshakes finish
	if cfg.slowAccept != 0 {
		// Requests dropped while the consumer lagged come back with
		// the client's REQ retransmission.
		done := func() bool { acceptWaiting(); return res.established == cfg.legit }
		if !f.RunUntil(done, maxSteps) {
			t.Fatalf("%d of %d legitimate connections established", res.established, cfg.legit)
		}
	}
	res.wall = time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	res.retained = int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	runtime.KeepAlive(f)
	res.stats = server.Engine.Stats()

	for _, id := range legit {
		if st, _ := client.Engine.State(id); st != engine.StateEstablished {
			t.Fatalf("legitimate connection %v in %v after the flood", id, st)
		}
		if cfg.keep {
			continue
		}
		if err := client.Engine.Disconnect(f.Now, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := server.Engine.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if cfg.keep {
		return res
	}
	// Every forged request ends (REP retries run out, at most 16 × 2^23
	// ms later) and every ID is destroyed.
	if !f.Run(maxSteps) {
		t.Fatal("fabric not idle after the flood")
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if server.Engine.Len() != 1 || server.Engine.Timers() != 0 || client.Engine.Len() != 0 {
		t.Fatalf("left: server %d IDs, %d timers; client %d IDs", server.Engine.Len(), server.Engine.Timers(), client.Engine.Len())
	}
	if err := server.Engine.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestREQFlood floods a listener with 100,000 forged REQs (1,000,000
// with REQFLOOD_N=1000000; 20,000 with -short), 100 every 100 µs, while a
// legitimate client connects 8 times: every legitimate connection is
// established at its first REQ, the server never holds more than its
// half-open bound (plus the listener and the legitimate connections),
// the heap the flood leaves is within the bound's worth of IDs, and
// duplicate and stale REQs allocate nothing.
func TestREQFlood(t *testing.T) {
	cfg := floodConfig{reqs: 100000, batch: 100, legit: 8, gap: 100 * time.Microsecond,
		maxHalfOpen: engine.DefaultMaxHalfOpen}
	if testing.Short() {
		cfg.reqs = 20000
	}
	if s := os.Getenv("REQFLOOD_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < cfg.legit*cfg.batch {
			t.Fatalf("REQFLOOD_N=%q: want a count of at least %d", s, cfg.legit*cfg.batch)
		}
		cfg.reqs = n
	}
	res := runFlood(t, cfg)
	if len(res.connectTime) != cfg.legit || res.established != cfg.legit {
		t.Fatalf("%d of %d legitimate connections answered, %d established at the server", len(res.connectTime), cfg.legit, res.established)
	}
	for _, d := range res.connectTime {
		// One round trip plus the wait for the next batch: no REQ was
		// dropped or resent.
		if d > 2*cfg.gap {
			t.Errorf("legitimate connect took %v of virtual time", d)
		}
	}
	if limit := 1 + cfg.maxHalfOpen + cfg.legit; res.maxIDs > limit || res.maxHalfOpen > cfg.maxHalfOpen {
		t.Fatalf("server held up to %d IDs, %d half-open; bound %d IDs", res.maxIDs, res.maxHalfOpen, limit)
	}
	// A live ID costs about 1 KiB (conn, REP buffer, table and timer
	// slots): 4 KiB each leaves room for the fabric's own buffers, and is
	// far below what 100,000 held requests would take.
	if limit := int64(4096 * (cfg.maxHalfOpen + cfg.legit)); res.retained > limit {
		t.Fatalf("flood left %d heap bytes, bound %d", res.retained, limit)
	}
	s := res.stats
	if s.Malformed != 0 || s.Received != uint64(cfg.reqs)+2*uint64(cfg.legit) {
		t.Fatalf("server stats %+v: want every REQ and the legitimate REQs and RTUs received, none malformed", s)
	}
	// 1 in 8 REQs is a duplicate and 1 in 8 stale, of one of the latest
	// 64 new requests, nearly always still held: dropped, or REJ 10.
	if s.Dropped < uint64(cfg.reqs)/10 || res.staleREJs < cfg.reqs/10 {
		t.Fatalf("%d duplicates dropped, %d stale REQs rejected: want each near 1 in 8", s.Dropped, res.staleREJs)
	}
	// 3 in 4 REQs are new requests; nearly all end evicted.
	if s.Evicted < uint64(cfg.reqs)/2 {
		t.Fatalf("stats %+v: too few evictions for %d REQs", s, cfg.reqs)
	}
	t.Logf("%d REQs in %v wall: server held at most %d IDs (%d half-open, bound %d), %d KiB of heap at the end; "+
		"legitimate connects (virtual time to the REP): %v; %d stale REQs rejected; server stats %+v",
		cfg.reqs, res.wall.Round(time.Millisecond), res.maxIDs, res.maxHalfOpen, cfg.maxHalfOpen, res.retained>>10,
		res.connectTime, res.staleREJs, s)
}

// TestREQFloodSlowConsumer floods 20,000 REQs at a server that answers
// requests only every 10,000 (every 10 ms of virtual time): the bound fills
// with requests waiting for it, so later REQs, the legitimate client's
// among them, are dropped without a REJ. A legitimate REQ admitted waits
// for the consumer's next round; one dropped gets in with the client's
// REQ retransmission, 6.144 s later.
func TestREQFloodSlowConsumer(t *testing.T) {
	cfg := floodConfig{reqs: 20000, batch: 100, legit: 4, gap: 100 * time.Microsecond,
		maxHalfOpen: engine.DefaultMaxHalfOpen, slowAccept: 100}
	res := runFlood(t, cfg)
	if res.established != cfg.legit {
		t.Fatalf("%d of %d legitimate connections established", res.established, cfg.legit)
	}
	if res.maxHalfOpen > cfg.maxHalfOpen || res.stats.BacklogDrops == 0 {
		t.Fatalf("half-open up to %d (bound %d), stats %+v: want drops", res.maxHalfOpen, cfg.maxHalfOpen, res.stats)
	}
	resent := 0
	for _, d := range res.connectTime {
		if d >= 6144*time.Millisecond {
			resent++
		}
	}
	if resent == 0 || resent == cfg.legit {
		t.Fatalf("legitimate connects %v: want some through the lagging consumer, some by retransmission", res.connectTime)
	}
	t.Logf("server held at most %d IDs (%d half-open); %d REQs dropped for the bound, %d evicted; legitimate connects (virtual time to the REP): %v",
		res.maxIDs, res.maxHalfOpen, res.stats.BacklogDrops, res.stats.Evicted, res.connectTime)
}

// BenchmarkREQFlood runs TestREQFlood's flood of 100,000 REQs once per
// iteration (-benchtime=1x is enough) against the default half-open bound
// and against none (MaxHalfOpen -1), and reports the
// most IDs the server held, the heap the flood left and the REQs handled
// per second of wall time.
func BenchmarkREQFlood(b *testing.B) {
	for _, bc := range []struct {
		name  string
		bound int
	}{{"bound", engine.DefaultMaxHalfOpen}, {"unbounded", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := floodConfig{reqs: 100000, batch: 100, legit: 8, gap: 100 * time.Microsecond, maxHalfOpen: bc.bound, keep: true}
			var res floodResult
			for b.Loop() {
				res = runFlood(b, cfg)
			}
			b.ReportMetric(float64(res.maxIDs), "max-IDs")
			b.ReportMetric(float64(res.retained)/1024, "heap-KiB")
			b.ReportMetric(float64(cfg.reqs)/res.wall.Seconds(), "REQs/s")
		})
	}
}
