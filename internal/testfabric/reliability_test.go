package testfabric

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
)

var (
	reliabilitySeeds = flag.Int("reliability.n", 500, "reliability sweep: seeded scenarios per kind")
	reliabilitySeed  = flag.Int64("reliability.seed", -1, "reliability sweep: run only this seed (with -run ReliabilitySweep/KIND), with a trace")
)

// sweepOpts turns on the reliability faults of runScenarioWith.
type sweepOpts struct {
	// reuseIDs: every scenario crashes a node and reboots it with an ID
	// source that starts over (RestartSameIDs), and every node draws its
	// communication IDs from a space of 16 so that IDs collide; the
	// survivor must never hand out an ID that is live or in TimeWait.
	reuseIDs bool
	// crossDREQ: both sides disconnect the moment they are established,
	// so the DREQs cross on the wire.
	crossDREQ bool
	// mraStorm: passive sides MRA explicitly, and every MRA on the wire
	// is injected again up to 20 times over the next 70 s.
	mraStorm bool
	// dupREQ: every REQ on the wire is injected again up to 4 times over
	// the next 20 s: duplicates, and stale REQs that arrive in TimeWait
	// or after the IDs are gone.
	dupREQ bool
}

// mraStormMaxTimeout is the longest MRA service timeout the storm's
// passive sides ask for (the engine's delayed MRA uses 24).
const mraStormMaxTimeout = 24

// timeWait is the TimeWait of the fabric's paths: the local ACK timeout
// PacketLifeTime+1 = 19, 2^(19-8) ms (cm_enter_timewait, cm_convert_to_ms).
const timeWait = 2048 * time.Millisecond

// TestReliabilitySweep runs the fault sweep's scenarios with each
// reliability fault turned on in turn; each kind must exercise what it is
// about (the counters logged), and every scenario must pass the sweep's
// outcome, teardown, leak and invariant checks.
func TestReliabilitySweep(t *testing.T) {
	n := *reliabilitySeeds
	if testing.Short() && n > 200 {
		n = 200
	}
	kinds := []struct {
		name string
		opts sweepOpts
		tame func(r scenarioResult) bool
	}{
		{"reuse-ids", sweepOpts{reuseIDs: true}, func(r scenarioResult) bool { return r.IDReuses == 0 || r.Crashes == 0 }},
		{"cross-dreq", sweepOpts{crossDREQ: true}, func(r scenarioResult) bool { return r.CrossedDREQs == 0 }},
		{"mra-storm", sweepOpts{mraStorm: true}, func(r scenarioResult) bool { return r.Injected == 0 || r.MRAs == 0 }},
		{"dup-req", sweepOpts{dupREQ: true}, func(r scenarioResult) bool { return r.Injected == 0 }},
	}
	for k, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			if *reliabilitySeed >= 0 {
				r, err := runScenarioWith(uint64(*reliabilitySeed), kind.opts, func(s string) { t.Log(s) })
				if err != nil {
					t.Fatalf("seed %d: %v", *reliabilitySeed, err)
				}
				t.Logf("seed %d: %+v", *reliabilitySeed, r)
				return
			}
			var total scenarioResult
			for i := range n {
				seed := uint64(k+1)*1_000_000 + uint64(i)
				r, err := runScenarioWith(seed, kind.opts, nil)
				if err != nil {
					t.Fatalf("seed %d: %v\nrerun with: go test -run 'ReliabilitySweep/%s' -reliability.seed=%d -v ./internal/testfabric",
						seed, err, kind.name, seed)
				}
				total.add(r)
			}
			t.Logf("%d scenarios: %+v", n, total)
			if n >= 100 && kind.tame(total) {
				t.Fatalf("sweep too tame: %+v", total)
			}
		})
	}
}

// smallIDSource draws communication IDs from 1..16, seeded per node and ID
// epoch so that RestartSameIDs repeats the sequence.
type smallIDSource struct{ rng *rand.Rand }

func (s *smallIDSource) CommID() uint32       { return 1 + s.rng.Uint32N(16) }
func (s *smallIDSource) PSN() uint32          { return s.rng.Uint32() & 0xffffff }
func (s *smallIDSource) TID(id uint32) uint64 { return engine.KernelTID(2, id) }

// stateWatch follows every node's state changes: it counts crossing DREQs
// and, with reuseIDs, checks that no node allocates an ID that is live or
// was in TimeWait less than timeWait ago.
type stateWatch struct {
	f       *Fabric
	res     *scenarioResult
	epochs  []int
	live    []map[engine.ID]bool
	twSince []map[engine.ID]time.Time
	used    []map[engine.ID]bool
	errs    []error
	// onTimeWait, when set, sees every ID entering TimeWait.
	onTimeWait func(n *Node, id engine.ID)
}

func newStateWatch(f *Fabric, opts sweepOpts, res *scenarioResult) *stateWatch {
	w := &stateWatch{f: f, res: res}
	for range f.Nodes {
		w.epochs = append(w.epochs, 0)
		w.live = append(w.live, map[engine.ID]bool{})
		w.twSince = append(w.twSince, map[engine.ID]time.Time{})
		w.used = append(w.used, map[engine.ID]bool{})
	}
	if opts.reuseIDs {
		f.Configure = func(n *Node, c *engine.Config) {
			c.Source = &smallIDSource{rng: rand.New(rand.NewPCG(n.seed, uint64(n.idEpoch)))}
		}
	}
	f.OnState = w.onState
	for _, n := range f.Nodes { // boot again with the source and records
		f.boot(n)
	}
	return w
}

func (w *stateWatch) onState(n *Node, s engine.StateChange) {
	i := n.Index
	if w.epochs[i] != n.Restarts { // a new incarnation knows nothing
		w.epochs[i] = n.Restarts
		w.live[i], w.twSince[i] = map[engine.ID]bool{}, map[engine.ID]time.Time{}
	}
	switch {
	case s.From == engine.StateIdle && s.To != engine.StateIdle: // a new ID
		if w.live[i][s.ID] {
			w.errs = append(w.errs, fmt.Errorf("node %s: ID %v allocated while live", n.Name, s.ID))
		}
		if t, ok := w.twSince[i][s.ID]; ok && w.f.Now.Sub(t) < timeWait {
			w.errs = append(w.errs, fmt.Errorf("node %s: ID %v allocated %v after entering TimeWait", n.Name, s.ID, w.f.Now.Sub(t)))
		}
		if w.used[i][s.ID] { // used before, by this incarnation or an earlier one
			w.res.IDReuses++
		}
		w.live[i][s.ID], w.used[i][s.ID] = true, true
		delete(w.twSince[i], s.ID)
	case s.To == engine.StateTimeWait:
		w.twSince[i][s.ID] = w.f.Now
		w.live[i][s.ID] = false
		if w.onTimeWait != nil {
			w.onTimeWait(n, s.ID)
		}
	case s.To == engine.StateIdle:
		w.live[i][s.ID] = false
	case s.From == engine.StateDREQSent && s.To == engine.StateDREQRcvd:
		w.res.CrossedDREQs++
	}
}

func (w *stateWatch) err() error { return errors.Join(w.errs...) }

// maxInjectedMRAs and maxInjectedREQs bound the copies one scenario
// injects (copies pass the filter again and would otherwise multiply).
const maxInjectedMRAs, maxInjectedREQs = 300, 60

// injectCopies puts copies of an MRA (mraStorm) or a REQ (dupREQ) back on
// the wire at random later times.
func injectCopies(f *Fabric, rng *rand.Rand, opts sweepOpts, from, to *Node, m []byte, v mad.View,
	at func(time.Duration, func()), res *scenarioResult) {
	var k, limit int
	var within time.Duration
	switch v.(type) {
	case mad.MRAView:
		if opts.mraStorm {
			k, limit, within = 1+rng.IntN(20), maxInjectedMRAs, 70*time.Second
		}
	case mad.REQView:
		if opts.dupREQ {
			k, limit, within = 1+rng.IntN(4), maxInjectedREQs, 20*time.Second
		}
	}
	cp := append([]byte(nil), m...)
	for range k {
		if res.Injected >= limit {
			return
		}
		res.Injected++
		i, j := from.Index, to.Index
		at(time.Duration(rng.Int64N(int64(within))), func() {
			if !f.Nodes[i].Crashed { // a crashed sender sends nothing
				f.Inject(i, j, cp)
			}
		})
	}
}
