package testfabric

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

var (
	sweepSeeds = flag.Int("sweep.n", 10000, "fault sweep: number of seeded scenarios")
	sweepSeed  = flag.Int64("sweep.seed", -1, "fault sweep: run only this seed, with a trace")
)

// TestFaultSweep runs thousands of seeded scenarios on a lossy,
// duplicating, reordering, delaying fabric with partitions and node
// crashes. In every one: each connect ends in an established connection or
// a clean error event (REJECTED, REQ_ERROR); each established connection
// ends cleanly once disconnected (DISCONNECT_REPLY, DISCONNECT_REQUEST
// answered, DREQ_ERROR or REJECTED, then TIMEWAIT_EXIT); every passive
// request ends likewise; once everything is destroyed and idle no ID,
// timer or TimeWait entry is left; no engine invariant or QP transition
// check fails; nothing panics.
func TestFaultSweep(t *testing.T) {
	n := *sweepSeeds
	if testing.Short() && n > 2000 {
		n = 2000
	}
	if *sweepSeed >= 0 {
		r, err := runScenario(uint64(*sweepSeed), func(s string) { t.Log(s) })
		if err != nil {
			t.Fatalf("seed %d: %v", *sweepSeed, err)
		}
		t.Logf("seed %d: %+v", *sweepSeed, r)
		return
	}
	var total scenarioResult
	for seed := range n {
		r, err := runScenario(uint64(seed), nil)
		if err != nil {
			t.Fatalf("seed %d: %v\nrerun with: go test -run FaultSweep -sweep.seed=%d -v ./internal/testfabric", seed, err, seed)
		}
		total.add(r)
	}
	t.Logf("%d scenarios: %+v", n, total)
	// The sweep must exercise every outcome, or it proves little.
	if n >= 1000 && (total.Established == 0 || total.Rejected == 0 || total.ReqErrors == 0 || total.Crashes == 0 ||
		total.DreqErrors == 0 || total.RepErrors == 0 || total.MRAs == 0 || total.StaleREJs == 0) {
		t.Fatalf("sweep too tame: %+v", total)
	}
}

type scenarioResult struct {
	Connects, Established, Rejected, ReqErrors, RepErrors, DreqErrors int
	Crashes, MRAs, StaleREJs, LostToCrash                             int
	IDReuses, Injected, CrossedDREQs, NoFreeIDs                       int
	Delivered, Lost                                                   uint64
}

func (r *scenarioResult) add(o scenarioResult) {
	r.Connects += o.Connects
	r.Established += o.Established
	r.Rejected += o.Rejected
	r.ReqErrors += o.ReqErrors
	r.RepErrors += o.RepErrors
	r.DreqErrors += o.DreqErrors
	r.Crashes += o.Crashes
	r.LostToCrash += o.LostToCrash
	r.MRAs += o.MRAs
	r.StaleREJs += o.StaleREJs
	r.IDReuses += o.IDReuses
	r.Injected += o.Injected
	r.CrossedDREQs += o.CrossedDREQs
	r.NoFreeIDs += o.NoFreeIDs
	r.Delivered += o.Delivered
	r.Lost += o.Lost
}

type recKey struct {
	node, epoch int
	id          engine.ID
	// gen is 0 for the ID's current holder; a record whose ID was
	// destroyed early (reuseIDs) moves to a nonzero gen.
	gen int
}

type connRec struct {
	active      bool
	requested   bool // active: Connect called; passive: CONNECT_REQUEST seen
	exempt      bool // its node crashed
	events      []engine.EventType
	established bool
	disconnect  bool // a disconnect was scheduled
	// peerCrashed: the peer node crashed; the CM has no keepalive, so an
	// established connection stays half-open until torn down locally.
	peer        int
	peerCrashed bool
	// peerID is the peer's ID (passive side); peerGaveUp: the peer's
	// DREQ retries ran out (a partition outlasted them), which leaves
	// this side half-open as well.
	peerID     engine.ID
	peerGaveUp bool
	// connectAt and outcomeAt: when Connect was called and when its
	// first outcome arrived (Epoch until then).
	connectAt, outcomeAt time.Time
	// destroyedEarly: destroyed once finished or in TimeWait (reuseIDs).
	destroyedEarly bool
}

type action struct {
	at time.Time
	fn func()
}

const port = 7174

func runScenario(seed uint64, trace func(string)) (res scenarioResult, err error) {
	return runScenarioWith(seed, sweepOpts{}, trace)
}

func runScenarioWith(seed uint64, opts sweepOpts, trace func(string)) (res scenarioResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, 0xfab))
	nodes := 2 + rng.IntN(2)
	f := New(nodes, seed)
	f.Trace = trace
	if trace != nil {
		for _, n := range f.Nodes {
			f.boot(n)
		}
	}
	loss, dup, reorder := rng.Float64()*0.3, rng.Float64()*0.2, rng.Float64()*0.3
	delay := time.Duration(rng.IntN(2000)) * time.Microsecond
	jitter := time.Duration(rng.IntN(5000)) * time.Microsecond
	if rng.IntN(4) != 0 { // a clean network now and then
		addLinkFaults(f, loss, dup, reorder, delay, jitter)
	}
	var reuse *stateWatch
	if opts != (sweepOpts{}) {
		reuse = newStateWatch(f, opts, &res)
	}
	recs := map[recKey]*connRec{}
	rec := func(n *Node, id engine.ID) *connRec {
		k := recKey{n.Index, n.Restarts, id, 0}
		r := recs[k]
		if r == nil {
			r = &connRec{}
			recs[k] = r
		}
		return r
	}
	var actions []action
	at := func(d time.Duration, fn func()) { actions = append(actions, action{f.Now.Add(d), fn}) }
	// soft ignores errors a delayed action may meet because the ID moved
	// on meanwhile (rejected, timed out, destroyed).
	soft := func(n *Node, op string, e error) {
		if e != nil && !errors.Is(e, engine.ErrInvalidState) && !errors.Is(e, engine.ErrUnknownID) {
			f.Errors = append(f.Errors, fmt.Errorf("node %s: %s: %w", n.Name, op, e))
		}
	}
	retired := 0
	// destroyEarly destroys a finished ID and retires its record: the ID
	// may come round again.
	destroyEarly := func(n *Node, id engine.ID) {
		if _, ok := n.Engine.State(id); !ok {
			return
		}
		k := recKey{n.Index, n.Restarts, id, 0}
		r := rec(n, id)
		r.destroyedEarly = true
		delete(recs, k)
		retired++
		k.gen = retired
		recs[k] = r
		soft(n, "destroy", n.Engine.Destroy(f.Now, id))
	}
	if opts.reuseIDs { // half the IDs entering TimeWait are destroyed there
		reuse.onTimeWait = func(n *Node, id engine.ID) {
			if rng.IntN(2) == 0 {
				return
			}
			epoch := n.Restarts
			at(0, func() {
				if !n.Crashed && n.Restarts == epoch {
					destroyEarly(n, id)
				}
			})
		}
	}

	// Per-node passive behaviour.
	type passive struct {
		rejectProb  float64
		acceptDelay time.Duration
	}
	pol := make([]passive, nodes)
	for i, n := range f.Nodes {
		pol[i] = passive{rejectProb: []float64{0, 0, 0.1, 0.5}[rng.IntN(4)]}
		if rng.IntN(4) == 0 || opts.mraStorm { // slow accept: duplicate REQs meet the armed MRA
			pol[i].acceptDelay = time.Duration(rng.IntN(9000)) * time.Millisecond
		}
		if _, err := n.Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
			return res, err
		}
	}
	onEvent := func(n *Node, ev *engine.Event) {
		r := rec(n, ev.ID)
		r.events = append(r.events, ev.Type)
		if r.active && (ev.Type == engine.EventReqError || ev.Type == engine.EventConnectReply || ev.Type == engine.EventRejected) &&
			r.outcomeAt.Equal(Epoch) {
			r.outcomeAt = f.Now
		}
		e := n.Engine
		epoch := n.Restarts
		alive := func() bool { return !n.Crashed && n.Restarts == epoch }
		switch ev.Type {
		case engine.EventConnectRequest:
			r.requested = true
			r.peer = int(ev.Conn.Src.Addr().As4()[3]) - 1
			r.peerID = engine.ID(ev.Conn.RemoteCommID)
			p := pol[n.Index]
			id, ece := ev.ID, ev.ECE
			if opts.mraStorm && rng.IntN(2) == 0 { // an explicit MRA first
				soft(n, "mra", e.MRA(f.Now, id, uint8(16+rng.IntN(mraStormMaxTimeout-15)), nil))
			}
			do := func() {
				if !alive() {
					return
				}
				if rng.Float64() < p.rejectProb {
					reason := mad.RejectConsumerDefined
					if rng.IntN(2) == 0 {
						reason = mad.RejectVendorOptionNotSupported
					}
					soft(n, "reject", e.Reject(f.Now, id, reason, nil, nil))
					return
				}
				soft(n, "accept", e.Accept(f.Now, id, engine.AcceptParams{QPN: n.NewQP(), ResponderResources: 1,
					InitiatorDepth: 1, RNRRetryCount: 7, ECE: ece}))
			}
			if p.acceptDelay > 0 {
				at(time.Duration(rng.Int64N(int64(p.acceptDelay)+1)), do)
			} else {
				do()
			}
		case engine.EventConnectReply:
			id := ev.ID
			do := func() {
				if !alive() {
					return
				}
				if err := e.Establish(f.Now, id, nil); err == nil {
					r.established = true
					scheduleDisconnect(f, rng, n, id, r, at, soft, alive, opts.crossDREQ)
				} else {
					soft(n, "establish", err)
				}
			}
			if rng.IntN(8) == 0 { // slow RTU: duplicate REPs meet the armed MRA
				at(time.Duration(rng.IntN(5000))*time.Millisecond, do)
			} else {
				do()
			}
		case engine.EventEstablished:
			r.established = true
			if !r.active && (rng.IntN(3) == 0 || opts.crossDREQ) { // the passive side hangs up
				scheduleDisconnect(f, rng, n, ev.ID, r, at, soft, alive, opts.crossDREQ)
			}
		case engine.EventRejected, engine.EventReqError, engine.EventRepError, engine.EventTimewaitExit:
			if opts.reuseIDs { // finished: destroy it, its ID comes free
				id := ev.ID
				at(0, func() {
					if alive() && rec(n, id) == r {
						destroyEarly(n, id)
					}
				})
			}
		case engine.EventDreqError:
			for k, o := range recs {
				if k.node != n.Index && o.peer == n.Index && o.peerID == ev.ID {
					o.peerGaveUp = true
				}
			}
		case engine.EventDisconnectRequest:
			id := ev.ID
			at(time.Duration(rng.IntN(20))*time.Millisecond, func() {
				if alive() {
					soft(n, "drep", e.Disconnect(f.Now, id, nil))
				}
			})
		}
	}
	for _, n := range f.Nodes {
		n.Policy = Policy{}
		n.OnEvent = onEvent
	}
	// Count MRAs and stale REJs on the wire.
	f.Filter = func(from, to *Node, m []byte) Action {
		v, err := mad.Parse(m)
		if err != nil {
			f.Errors = append(f.Errors, fmt.Errorf("malformed MAD on the wire: %w", err))
			return Drop
		}
		if opts.mraStorm || opts.dupREQ {
			injectCopies(f, rng, opts, from, to, m, v, at, &res)
		}
		switch v := v.(type) {
		case mad.MRAView:
			res.MRAs++
		case mad.REJView:
			if v.Reason() == mad.RejectStaleConn {
				res.StaleREJs++
			}
		}
		return Deliver
	}

	// Connects at random times between random pairs.
	k, spread := 1+rng.IntN(4), 100
	if opts.reuseIDs { // more IDs over a longer time: freed IDs come round again
		k, spread = 4+rng.IntN(8), 8000
	}
	for range k {
		i := rng.IntN(nodes)
		j := (i + 1 + rng.IntN(nodes-1)) % nodes
		at(time.Duration(rng.IntN(spread))*time.Millisecond, func() {
			n := f.Nodes[i]
			if n.Crashed {
				return
			}
			id, err := f.Connect(i, j, port)
			if opts.reuseIDs && errors.Is(err, engine.ErrNoResources) {
				res.NoFreeIDs++ // every ID of the small space held: refused cleanly
				return
			}
			if err != nil {
				f.Errors = append(f.Errors, fmt.Errorf("connect: %w", err))
				return
			}
			r := rec(n, id)
			r.active, r.requested, r.peer = true, true, j
			r.connectAt, r.outcomeAt = f.Now, Epoch
			res.Connects++
		})
	}
	// Crashes and partitions.
	if rng.IntN(10) == 0 || opts.reuseIDs {
		i := rng.IntN(nodes)
		at(time.Duration(rng.IntN(200))*time.Millisecond, func() {
			for k, r := range recs {
				if k.node == i && k.epoch == f.Nodes[i].Restarts {
					r.exempt = true
				}
				if r.peer == i {
					r.peerCrashed = true
				}
			}
			f.Crash(i)
			res.Crashes++
			at(time.Duration(rng.IntN(300))*time.Millisecond, func() {
				if opts.reuseIDs {
					f.RestartSameIDs(i)
				} else {
					f.Restart(i)
				}
				f.Nodes[i].OnEvent = onEvent
				if _, err := f.Nodes[i].Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
					f.Errors = append(f.Errors, err)
				}
			})
		})
	}
	if rng.IntN(8) == 0 {
		i, j := rng.IntN(nodes), 0
		j = (i + 1) % nodes
		at(time.Duration(rng.IntN(100))*time.Millisecond, func() {
			f.Partition(i, j)
			at(time.Duration(rng.IntN(120000))*time.Millisecond, func() { f.Heal(i, j) })
		})
	}

	// Run the actions in time order; actions and events may add actions.
	for steps := 0; ; steps++ {
		if steps > 10000 {
			return res, fmt.Errorf("too many actions")
		}
		if len(actions) == 0 {
			met, idle := f.run(time.Time{}, 1<<20, func() bool { return len(actions) > 0 })
			if idle {
				break
			}
			if !met {
				return res, fmt.Errorf("fabric not idle")
			}
		}
		slices.SortStableFunc(actions, func(a, b action) int { return a.at.Compare(b.at) })
		a := actions[0]
		actions = actions[1:]
		if a.at.After(f.Now) {
			f.Advance(a.at.Sub(f.Now))
		}
		a.fn()
		f.Flush()
	}
	if !f.Run(1 << 20) {
		return res, fmt.Errorf("fabric not idle")
	}
	for _, r := range recs {
		if r.active && r.established && !r.disconnect && !r.exempt {
			return res, fmt.Errorf("established connection never disconnected")
		}
	}

	// Outcomes.
	for key, r := range recs {
		if r.exempt || !r.requested || key.epoch != f.Nodes[key.node].Restarts || f.Nodes[key.node].Crashed {
			if r.active {
				res.LostToCrash++
			}
			continue
		}
		if err := checkOutcome(r, &res); err != nil {
			return res, fmt.Errorf("node %d ID %v (active %v): %w; events %v", key.node+1, key.id, r.active, err, r.events)
		}
	}

	// Destroy everything, let TimeWait run out: nothing may be left.
	for key := range recs {
		n := f.Nodes[key.node]
		if n.Crashed || key.epoch != n.Restarts || key.gen != 0 {
			continue
		}
		if _, ok := n.Engine.State(key.id); ok {
			soft(n, "destroy", n.Engine.Destroy(f.Now, key.id))
		}
	}
	f.Flush()
	if !f.Run(1 << 20) {
		return res, fmt.Errorf("fabric not idle after cleanup")
	}
	for _, n := range f.Nodes {
		if n.Crashed {
			continue
		}
		if n.Engine.Timers() != 0 {
			return res, fmt.Errorf("node %s: %d timers left", n.Name, n.Engine.Timers())
		}
		// Only the listener may remain.
		if n.Engine.Len() != 1 {
			return res, fmt.Errorf("node %s: %d IDs left, want only the listener", n.Name, n.Engine.Len())
		}
		if err := n.Engine.CheckInvariants(); err != nil {
			return res, err
		}
	}
	if err := f.Err(); err != nil {
		return res, err
	}
	if reuse != nil {
		if err := reuse.err(); err != nil {
			return res, err
		}
	}
	if opts.mraStorm {
		// However many MRAs arrive, a connect ends within MaxCMRetries+1
		// waits of the longest MRA service timeout plus the ACK timeout.
		bound := 16*(time.Millisecond<<(mraStormMaxTimeout-8)+2048*time.Millisecond) + time.Minute
		for _, r := range recs {
			if r.active && !r.exempt && !r.outcomeAt.Equal(Epoch) && r.outcomeAt.Sub(r.connectAt) > bound {
				return res, fmt.Errorf("connect took %v to end under an MRA storm, bound %v", r.outcomeAt.Sub(r.connectAt), bound)
			}
		}
	}
	st := f.Stats()
	res.Delivered, res.Lost = st.Delivered, st.Dropped+st.Lost
	return res, nil
}

// addLinkFaults makes every link lose, duplicate and reorder MADs with the
// given probabilities, and delay each by delay plus up to jitter.
func addLinkFaults(f *Fabric, loss, dup, reorder float64, delay, jitter time.Duration) {
	add := func(on bool, ft Fault) {
		if on {
			ft.From, ft.To = Any, Any
			f.AddFault(ft)
		}
	}
	add(loss > 0, Fault{Action: Drop, Rate: loss})
	add(dup > 0, Fault{Action: Duplicate, Rate: dup})
	add(delay > 0, Fault{Action: Delay, Delay: delay})
	add(jitter > 0, Fault{Action: Reorder, Delay: jitter}) // every MAD: the jitter
	add(reorder > 0, Fault{Action: Reorder, Rate: reorder})
}

func scheduleDisconnect(f *Fabric, rng *rand.Rand, n *Node, id engine.ID, r *connRec,
	at func(time.Duration, func()), soft func(*Node, string, error), alive func() bool, now bool) {
	if r.disconnect {
		return
	}
	r.disconnect = true
	d := time.Duration(rng.IntN(50)) * time.Millisecond
	if now { // both sides hang up at once: the DREQs cross
		d = 0
	}
	at(d, func() {
		if alive() {
			soft(n, "disconnect", n.Engine.Disconnect(f.Now, id, nil))
		}
	})
}

// checkOutcome checks one ID's event history.
func checkOutcome(r *connRec, res *scenarioResult) error {
	ev := r.events
	has := func(t ...engine.EventType) bool {
		return slices.ContainsFunc(ev, func(e engine.EventType) bool { return slices.Contains(t, e) })
	}
	count := func(t engine.EventType) int {
		c := 0
		for _, e := range ev {
			if e == t {
				c++
			}
		}
		return c
	}
	if r.active {
		// First outcome: CONNECT_REPLY, REJECTED or REQ_ERROR.
		first := slices.IndexFunc(ev, func(e engine.EventType) bool {
			return e == engine.EventConnectReply || e == engine.EventRejected || e == engine.EventReqError
		})
		if first < 0 {
			return fmt.Errorf("connect ended without an outcome")
		}
		switch ev[first] {
		case engine.EventRejected:
			res.Rejected++
		case engine.EventReqError:
			res.ReqErrors++
		}
		if count(engine.EventConnectReply) > 1 || count(engine.EventReqError) > 1 {
			return fmt.Errorf("outcome reported twice")
		}
		if ev[first] == engine.EventConnectReply && !r.established && !slices.Contains(ev[first:], engine.EventRejected) {
			return fmt.Errorf("reply never established nor rejected")
		}
	} else {
		if count(engine.EventConnectRequest) != 1 {
			return fmt.Errorf("%d CONNECT_REQUESTs for one ID", count(engine.EventConnectRequest))
		}
		if !r.established {
			// Rejected by us, or the peer gave up (REJ), or our REP was
			// never answered (REP_ERROR): all clean. A request we never
			// answered cannot be, the policy always answers.
			if has(engine.EventRepError) {
				res.RepErrors++
			}
			return nil
		}
	}
	if r.established {
		if r.active {
			res.Established++
		}
		if (r.peerCrashed || r.peerGaveUp) && !r.disconnect {
			return nil // half-open: cleaned up by Destroy below
		}
		// Teardown: DISCONNECT_REPLY, DISCONNECT_REQUEST (answered),
		// DREQ_ERROR or REJECTED, then TIMEWAIT_EXIT.
		if !has(engine.EventDisconnectReply, engine.EventDisconnectRequest, engine.EventDreqError, engine.EventRejected) {
			return fmt.Errorf("established connection without a teardown event")
		}
		if has(engine.EventDreqError) {
			res.DreqErrors++
		}
		if !has(engine.EventTimewaitExit) && !r.destroyedEarly {
			return fmt.Errorf("established connection never left TimeWait")
		}
	}
	return nil
}
