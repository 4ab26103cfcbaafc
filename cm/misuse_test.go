package cm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Calling an operation of an ID in a state where it is not
// allowed returns a typed error, leaves the ID exactly as it was and
// sends nothing to the backend. The fake backend of channel_test.go
// records every command.

// misuseOp is one exported operation of *ID.
type misuseOp struct {
	name string
	// call is the backend command an allowed call issues ("" if none).
	call string
	// allowed reports whether the state machine admits the call; nil
	// means opEdges (state_test.go) decides.
	allowed func(s State, sync bool) bool
	run     func(ctx context.Context, id *ID) error
}

// notDestroyed: operations the state machine does not restrict; the
// kernel decides (QUERY ADDR/PATH and SET_OPTION answer in any state).
func notDestroyed(s State, _ bool) bool { return s != StateDestroyed }

func never(State, bool) bool { return false }

var misuseOps = []misuseOp{
	{name: "Bind", call: "bind", run: func(_ context.Context, id *ID) error {
		return id.Bind(netip.MustParseAddrPort("192.0.2.1:0"))
	}},
	{name: "ResolveAddr", call: "resolveAddr", run: func(ctx context.Context, id *ID) error {
		return id.ResolveAddr(ctx, netip.AddrPort{}, netip.MustParseAddrPort("192.0.2.2:7174"), 0)
	}},
	{name: "ResolveRoute", call: "resolveRoute", run: func(ctx context.Context, id *ID) error {
		return id.ResolveRoute(ctx, 0)
	}},
	{name: "Listen", call: "listen", run: func(_ context.Context, id *ID) error { return id.Listen(0) }},
	{name: "GetRequest",
		// Synchronous listeners only; an asynchronous ID is refused in
		// every state (its requests come from Channel.GetEvent).
		allowed: func(s State, sync bool) bool { return sync && s == StateListen },
		run: func(ctx context.Context, id *ID) error {
			_, err := id.GetRequest(ctx)
			return err
		}},
	{name: "Connect", call: "connect", run: func(ctx context.Context, id *ID) error { return id.Connect(ctx, nil) }},
	{name: "Accept", call: "accept", run: func(ctx context.Context, id *ID) error { return id.Accept(ctx, nil) }},
	{name: "Establish", call: "accept", run: func(_ context.Context, id *ID) error { return id.Establish() }},
	{name: "Reject", call: "reject", run: func(_ context.Context, id *ID) error { return id.Reject([]byte("no")) }},
	{name: "RejectECE", call: "reject", run: func(_ context.Context, id *ID) error { return id.RejectECE(nil) }},
	{name: "Disconnect", call: "disconnect", run: func(ctx context.Context, id *ID) error { return id.Disconnect(ctx) }},
	{name: "SetLocalECE", run: func(_ context.Context, id *ID) error { return id.SetLocalECE(mlx) }},
	{name: "RemoteECE", allowed: notDestroyed, run: func(_ context.Context, id *ID) error {
		_, err := id.RemoteECE()
		return err
	}},
	// CreateQP in an allowed state asks the backend for the ID's device
	// (QUERY ADDR); the fake has none, so it stops there with ErrNoDevice.
	{name: "CreateQP", call: "queryAddr", run: func(_ context.Context, id *ID) error {
		_, err := id.CreateQP(QPInit{})
		return err
	}},
	{name: "Notify", call: "notify", allowed: func(s State, _ bool) bool { return notifyAllowed(s) },
		run: func(_ context.Context, id *ID) error { return id.Notify(uverbs.EventCommEst) }},
	{name: "InitQPAttr", call: "initQPAttr", allowed: func(s State, _ bool) bool { return initQPAttrAllowed(s) },
		run: func(_ context.Context, id *ID) error {
			_, _, err := id.InitQPAttr(qp.Init)
			return err
		}},
	{name: "Query", call: "queryAddr", allowed: notDestroyed, run: func(_ context.Context, id *ID) error {
		_, err := id.Query()
		return err
	}},
	{name: "Route", call: "queryPath", allowed: notDestroyed, run: func(_ context.Context, id *ID) error {
		_, err := id.Route()
		return err
	}},
	{name: "SetTOS", call: "setOption", allowed: notDestroyed, run: func(_ context.Context, id *ID) error {
		return id.SetTOS(32)
	}},
	// JoinMulticast is for UD IDs: refused on these RC IDs in every state.
	{name: "JoinMulticast", allowed: never, run: func(ctx context.Context, id *ID) error {
		_, err := id.JoinMulticast(ctx, netip.MustParseAddr("239.1.2.3"), false, nil)
		return err
	}},
}

// notifyAllowed: rdma_notify needs the ID's IB CM connection (kernel
// cma.c: no cm_id.ib → EINVAL), which exists from the REQ on.
func notifyAllowed(s State) bool {
	switch s {
	case StateIdle, StateAddrBound, StateAddrQuery, StateAddrResolved, StateRouteQuery,
		StateRouteResolved, StateListen, StateDestroyed:
		return false
	}
	return true
}

// initQPAttrAllowed: an idle ID has no device (ucma_get_ctx_dev → EINVAL)
// and a listener has no QP.
func initQPAttrAllowed(s State) bool {
	return s != StateIdle && s != StateListen && s != StateDestroyed
}

// opRun returns the run function of the named operation.
func opRun(name string) func(context.Context, *ID) error {
	for _, o := range misuseOps {
		if o.name == name {
			return o.run
		}
	}
	panic("no op " + name)
}

func (o misuseOp) isAllowed(s State, sync bool) bool {
	if o.allowed != nil {
		return o.allowed(s, sync)
	}
	_, ok := lookup(opEdges[o.name], s)
	if o.name == "RejectECE" {
		_, ok = lookup(opEdges["Reject"], s)
	}
	return ok
}

// roleOf is the role an ID has in s on the way a real connection gets
// there.
func roleOf(s State) Role {
	switch s {
	case StateListen:
		return RoleListener
	case StateRequestReceived, StateAcceptSent:
		return RolePassive
	case StateConnectSent, StateConnectResponse, StateEstablished, StateDisconnectSent,
		StateDisconnected, StateRejected, StateFailed:
		return RoleActive
	}
	return RoleNone
}

// idIn returns an ID of a fresh fake channel placed in state s (Destroy
// for StateDestroyed), and the number of backend calls made so far.
func idIn(t *testing.T, s State, sync bool) (*ID, *fakeBackend) {
	t.Helper()
	f := newFake()
	c := newChannel(f)
	t.Cleanup(func() { c.Close() })
	id, err := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: sync})
	if err != nil {
		t.Fatal(err)
	}
	if s == StateDestroyed {
		if err := id.Destroy(); err != nil {
			t.Fatal(err)
		}
	} else {
		id.mu.Lock()
		id.st.state = s
		id.st.role = roleOf(s)
		id.mu.Unlock()
	}
	return id, f
}

func (f *fakeBackend) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (id *ID) snapshot() idState {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.st
}

// checkMisuseErr checks that err is the typed error documented for op in
// state from.
func checkMisuseErr(op string, from State, sync bool, err error) error {
	switch {
	case err == nil:
		return errors.New("succeeded, want an error")
	case op == "JoinMulticast" || (op == "GetRequest" && !sync):
		// A property of the ID, not of its state.
		if !errors.Is(err, ErrInvalidState) {
			return fmt.Errorf("%v, want ErrInvalidState", err)
		}
	case from == StateDestroyed:
		if !errors.Is(err, ErrClosed) {
			return fmt.Errorf("%v, want ErrClosed", err)
		}
	case op == "SetLocalECE":
		var oe *ECEOrderError
		if !errors.As(err, &oe) || !errors.Is(err, ErrECEOrder) || oe.State != from || oe.Role != roleOf(from) {
			return fmt.Errorf("%v, want *ECEOrderError{State: %v}", err, from)
		}
	default:
		var se *StateError
		if !errors.As(err, &se) || !errors.Is(err, ErrInvalidState) || se.Op != op || se.State != from {
			return fmt.Errorf("%v (%T), want *StateError{%s, %v}", err, err, op, from)
		}
	}
	return nil
}

// TestMisuseEveryStateEveryOp calls every operation in every state. Where
// the state machine refuses it: a typed error, the ID's state unchanged
// (all of it: state, role, ECE), no backend command. Where it admits it
// (asynchronous IDs, so nothing waits): exactly the expected command
// reaches the backend — which shows the refusals are not vacuous.
func TestMisuseEveryStateEveryOp(t *testing.T) {
	refused := 0
	for _, op := range misuseOps {
		for _, from := range allStates {
			for _, sync := range []bool{false, true} {
				name := fmt.Sprintf("%s/%v/sync=%v", op.name, from, sync)
				ok := t.Run(name, func(t *testing.T) {
					id, f := idIn(t, from, sync)
					before, calls := id.snapshot(), len(f.callLog())
					allowed := op.isAllowed(from, sync)
					if allowed && sync {
						return // it would wait for its completion event
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					err := op.run(ctx, id)
					got := f.callLog()[calls:]
					if allowed {
						if errors.Is(err, ErrInvalidState) || errors.Is(err, ErrECEOrder) || errors.Is(err, ErrClosed) {
							t.Fatalf("allowed call refused: %v", err)
						}
						want := []string{}
						if op.call != "" {
							want = []string{op.call}
						}
						if strings.Join(got, ",") != strings.Join(want, ",") {
							t.Fatalf("backend got %q, want %q", got, want)
						}
						return
					}
					if e := checkMisuseErr(op.name, from, sync, err); e != nil {
						t.Fatal(e)
					}
					if after := id.snapshot(); after != before {
						t.Fatalf("refused call changed the ID: %+v → %+v", before, after)
					}
					if len(got) != 0 {
						t.Fatalf("refused call reached the backend: %q", got)
					}
					if id.QP() != nil {
						t.Fatal("refused call left a QP")
					}
				})
				if !ok {
					continue
				}
				if !op.isAllowed(from, sync) {
					refused++
				}
			}
		}
	}
	t.Logf("%d refused (op, state, sync) combinations checked", refused)
}

// DestroyQP is never refused: without a QP it does nothing, in any state.
func TestDestroyQPWithoutQPIsNoOp(t *testing.T) {
	for _, from := range allStates {
		id, f := idIn(t, from, false)
		before, calls := id.snapshot(), len(f.callLog())
		if err := id.DestroyQP(); err != nil {
			t.Fatalf("DestroyQP in %v: %v", from, err)
		}
		if id.snapshot() != before || len(f.callLog()) != calls {
			t.Fatalf("DestroyQP in %v changed the ID or called the backend", from)
		}
	}
}

// The misuse scenarios, spelled out.
func TestMisuseScenarios(t *testing.T) {
	ctx := testCtx(t)

	t.Run("accept before a request", func(t *testing.T) {
		for _, s := range []State{StateIdle, StateRouteResolved, StateListen} {
			id, f := idIn(t, s, false)
			err := id.Accept(ctx, nil)
			var se *StateError
			if !errors.As(err, &se) || se.Op != "Accept" || se.State != s {
				t.Fatalf("Accept in %v: %v", s, err)
			}
			if len(f.accepts) != 0 || id.State() != s {
				t.Fatalf("Accept in %v reached the backend or moved to %v", s, id.State())
			}
		}
	})

	t.Run("connect twice", func(t *testing.T) {
		id, f := idIn(t, StateRouteResolved, false)
		if err := id.Connect(ctx, nil); err != nil {
			t.Fatal(err)
		}
		err := id.Connect(ctx, nil)
		var se *StateError
		if !errors.As(err, &se) || se.State != StateConnectSent {
			t.Fatalf("second Connect: %v", err)
		}
		if len(f.connects) != 1 || id.State() != StateConnectSent {
			t.Fatalf("second Connect: %d REQs sent, state %v", len(f.connects), id.State())
		}
	})

	t.Run("SetLocalECE late", func(t *testing.T) {
		id, f := idIn(t, StateRouteResolved, false)
		first := mlx
		first.Options = 1
		if err := id.SetLocalECE(first); err != nil {
			t.Fatal(err)
		}
		if err := id.Connect(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// Late: the REQ has left (connect-sent), and still after the REP
		// came back (connect-response).
		for _, s := range []State{StateConnectSent, StateConnectResponse} {
			if s == StateConnectResponse {
				f.push(rawEvent{uid: id.uid, typ: EventConnectResponse, ece: mlx})
				ev, err := id.ch.GetEvent(ctx)
				if err != nil || ev.Type != EventConnectResponse {
					t.Fatalf("%v %v", ev, err)
				}
				ev.Ack()
			}
			err := id.SetLocalECE(mlx)
			var oe *ECEOrderError
			if !errors.As(err, &oe) || oe.State != s || oe.Role != RoleActive || id.State() != s {
				t.Fatalf("SetLocalECE in %v: %v (state now %v)", s, err, id.State())
			}
		}
		if id.LocalECE() != first || f.connects[0] != first {
			t.Fatalf("local ECE %v, REQ carried %v, want %v", id.LocalECE(), f.connects[0], first)
		}
	})

	t.Run("reject names the call", func(t *testing.T) {
		id, _ := idIn(t, StateIdle, false)
		var se *StateError
		if err := id.RejectECE(nil); !errors.As(err, &se) || se.Op != "RejectECE" {
			t.Fatalf("RejectECE in idle: %v", err)
		}
	})
}

// waitForCall waits until the fake has seen the command.
func waitForCall(t *testing.T, f *fakeBackend, call string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range f.callLog() {
			if c == call {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("backend never saw %s", call)
}

// Destroy (and Channel.Close) end a synchronous call that waits for its
// completion event: it returns ErrClosed at once, whichever goroutine is
// reading the backend.
func TestDestroyInterruptsSyncCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		from  State
		call  string // backend command to wait for before killing
		run   func(ctx context.Context, id *ID) error
		other bool // a second ID's GetEvent holds the read token
	}{
		{"ResolveAddr", StateIdle, "resolveAddr", opRun("ResolveAddr"), false},
		{"ResolveRoute", StateAddrResolved, "resolveRoute", opRun("ResolveRoute"), false},
		{"Connect", StateRouteResolved, "connect", opRun("Connect"), false},
		{"Accept", StateRequestReceived, "accept", opRun("Accept"), false},
		{"Disconnect", StateEstablished, "disconnect", opRun("Disconnect"), false},
		{"GetRequest", StateListen, "", opRun("GetRequest"), false},
		{"GetEvent", StateEstablished, "", func(ctx context.Context, id *ID) error {
			_, err := id.GetEvent(ctx)
			return err
		}, false},
		{"ResolveAddr/other reader", StateIdle, "resolveAddr", opRun("ResolveAddr"), true},
	} {
		for _, kill := range []string{"Destroy", "Channel.Close"} {
			t.Run(tc.name+"/"+kill, func(t *testing.T) {
				id, f := idIn(t, tc.from, true)
				if tc.other {
					// Another synchronous ID's waiter may be the one in
					// the backend when Destroy comes.
					o, err := id.ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
					if err != nil {
						t.Fatal(err)
					}
					go o.GetEvent(context.Background())
					time.Sleep(5 * time.Millisecond)
				}
				done := make(chan error, 1)
				// No deadline: only Destroy or Close can end the wait.
				go func() { done <- tc.run(context.Background(), id) }()
				if tc.call != "" {
					waitForCall(t, f, tc.call)
				}
				time.Sleep(20 * time.Millisecond)
				select {
				case err := <-done:
					t.Fatalf("returned before %s: %v", kill, err)
				default:
				}
				start := time.Now()
				switch kill {
				case "Destroy":
					if err := id.Destroy(); err != nil {
						t.Fatal(err)
					}
				default:
					id.ch.Close()
				}
				select {
				case err := <-done:
					if !errors.Is(err, ErrClosed) {
						t.Fatalf("%s: %v, want ErrClosed", tc.name, err)
					}
					if d := time.Since(start); d > time.Second {
						t.Fatalf("returned %v after %s", d, kill)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%s did not end the waiting %s", kill, tc.name)
				}
				if id.State() != StateDestroyed {
					t.Fatalf("state %v after %s", id.State(), kill)
				}
			})
		}
	}
}

// TestConcurrentUseWithDestroy hammers one ID from many goroutines while
// two of them destroy it (or close its channel), under -race. Every call
// returns success or a typed error, and once the kernel ID is destroyed
// no command of the ID reaches the backend.
func TestConcurrentUseWithDestroy(t *testing.T) {
	for _, kill := range []string{"Destroy", "Channel.Close"} {
		t.Run(kill, func(t *testing.T) {
			for iter := 0; iter < 40; iter++ {
				hammer(t, kill)
			}
		})
	}
}

func hammer(t *testing.T, kill string) {
	id, f := idIn(t, StateRouteResolved, true)
	ctx := testCtx(t)
	ops := map[string]func() error{
		"SetLocalECE": func() error { return id.SetLocalECE(mlx) },
		"LocalECE":    func() error { _ = id.LocalECE(); return nil },
		"State/Role":  func() error { _, _ = id.State(), id.Role(); return nil },
		"Params":      func() error { _, _, _ = id.ConnParam(), id.RequestParam(), id.UDParam(); return nil },
		"RemoteECE":   func() error { _, err := id.RemoteECE(); return err },
		"Query":       func() error { _, err := id.Query(); return err },
		"InitQPAttr":  func() error { _, _, err := id.InitQPAttr(qp.Init); return err },
		"Notify":      func() error { return id.Notify(uverbs.EventCommEst) },
		"SetTOS":      func() error { return id.SetTOS(1) },
		"Reject":      func() error { return id.Reject(nil) },
		"DestroyQP":   func() error { return id.DestroyQP() },
		"Unacked":     func() error { _ = id.ch.Unacked(); return nil },
	}
	// Waiting calls: one Connect gets the REQ out and waits; the other
	// Connects are refused; GetEvent waits. Destroy ends them all.
	waiting := map[string]func() error{
		"Connect":  func() error { return id.Connect(ctx, nil) },
		"GetEvent": func() error { _, err := id.GetEvent(ctx); return err },
	}
	type result struct {
		op  string
		err error
	}
	results := make(chan result, 1024)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for name, fn := range ops {
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < 20; i++ {
					if err := fn(); err != nil {
						results <- result{name, err}
					}
				}
			}()
		}
	}
	for name, fn := range waiting {
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := fn(); err != nil {
					results <- result{name, err}
				}
			}()
		}
	}
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(time.Millisecond)
			var err error
			if kill == "Destroy" {
				err = id.Destroy()
			} else {
				err = id.ch.Close()
			}
			if err != nil {
				results <- result{kill, err}
			}
		}()
	}
	close(start)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("a call did not return after " + kill)
	}
	close(results)
	for r := range results {
		switch {
		case errors.Is(r.err, ErrClosed), errors.Is(r.err, ErrInvalidState), errors.Is(r.err, ErrECEOrder):
		default:
			t.Fatalf("%s: untyped error %v", r.op, r.err)
		}
	}
	if id.State() != StateDestroyed {
		t.Fatalf("state %v after %s", id.State(), kill)
	}
	if kill == "Destroy" {
		calls := f.callLog()
		n := 0
		for _, c := range calls {
			if c == "destroyID" {
				n++
			}
		}
		if n != 1 || calls[len(calls)-1] != "destroyID" {
			t.Fatalf("backend calls %q: want exactly one destroyID, and nothing after it", calls)
		}
	}
}

// TestMisuseLateOptionsAndJoin: options the kernel only takes early, and
// a multicast join before an address, are refused with a *StateError and
// reach no backend (cma_set_reuseaddr, cma_set_afonly, rdma_join_multicast).
func TestMisuseLateOptionsAndJoin(t *testing.T) {
	fb := newFake()
	ch := newChannel(fb)
	t.Cleanup(func() { ch.Close() })
	id, err := ch.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Listen(0); err != nil {
		t.Fatal(err)
	}
	calls := len(fb.callLog())
	if err := id.SetReuseAddr(true); !errors.Is(err, ErrInvalidState) {
		t.Errorf("SetReuseAddr on a listener: %v, want ErrInvalidState", err)
	}
	if err := id.SetAFOnly(true); !errors.Is(err, ErrInvalidState) {
		t.Errorf("SetAFOnly on a listener: %v, want ErrInvalidState", err)
	}
	if err := id.Reject(make([]byte, 256)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Reject with 256 bytes: %v, want ErrInvalidArgument", err)
	}
	if n := len(fb.callLog()); n != calls {
		t.Errorf("refused calls reached the backend: %v", fb.callLog()[calls:])
	}
	ud, err := ch.CreateID(rdma.PortSpaceUDP, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls = len(fb.callLog())
	if _, err := ud.JoinMulticast(context.Background(), netip.MustParseAddr("239.1.1.1"), false, nil); !errors.Is(err, ErrInvalidState) {
		t.Errorf("JoinMulticast on an idle ID: %v, want ErrInvalidState", err)
	}
	if n := len(fb.callLog()); n != calls {
		t.Errorf("refused calls reached the backend: %v", fb.callLog()[calls:])
	}
	if err := id.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := id.Verbs(); !errors.Is(err, ErrClosed) {
		t.Errorf("Verbs on a destroyed ID: %v, want ErrClosed", err)
	}
}
