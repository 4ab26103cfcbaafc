package cm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
)

// The specification of the ID state machine: every edge, for operations
// and events. TestStateMachineEveryEdge checks the implementation against
// it for every (state, input) pair, including the pairs that are not
// edges; TestStateDiagramMatchesSpec checks that docs/ece.md draws
// exactly these edges.

type edge struct{ from, to State }

// opEdges: operation name → allowed edges. Operations not listed for a
// state fail and leave the state as it was.
var opEdges = map[string][]edge{
	"Bind": {{StateIdle, StateAddrBound}},
	"ResolveAddr": {
		{StateIdle, StateAddrQuery}, {StateAddrBound, StateAddrQuery}, {StateAddrResolved, StateAddrQuery},
	},
	"ResolveRoute": {{StateAddrResolved, StateRouteQuery}, {StateRouteResolved, StateRouteQuery}},
	"Listen":       {{StateIdle, StateListen}, {StateAddrBound, StateListen}},
	"Connect":      {{StateRouteResolved, StateConnectSent}},
	"Accept":       {{StateRequestReceived, StateAcceptSent}},
	"Reject":       {{StateRequestReceived, StateRejected}, {StateConnectResponse, StateRejected}},
	"Establish":    {{StateConnectResponse, StateEstablished}},
	"Disconnect": {
		{StateConnectSent, StateDisconnectSent}, {StateConnectResponse, StateDisconnectSent},
		{StateAcceptSent, StateDisconnectSent}, {StateEstablished, StateDisconnectSent},
		{StateDisconnectSent, StateDisconnectSent}, {StateDisconnected, StateDisconnected},
		{StateRejected, StateRejected}, {StateFailed, StateFailed},
	},
	"SetLocalECE": {
		{StateIdle, StateIdle}, {StateAddrBound, StateAddrBound}, {StateAddrQuery, StateAddrQuery},
		{StateAddrResolved, StateAddrResolved}, {StateRouteQuery, StateRouteQuery},
		{StateRouteResolved, StateRouteResolved}, {StateRequestReceived, StateRequestReceived},
	},
	"CreateQP": {
		{StateAddrBound, StateAddrBound}, {StateAddrResolved, StateAddrResolved},
		{StateRouteQuery, StateRouteQuery}, {StateRouteResolved, StateRouteResolved},
		{StateRequestReceived, StateRequestReceived},
	},
}

// eventEdges: event → edges. An event in a state not listed leaves the
// state unchanged (and is still delivered).
var eventEdges = map[EventType][]edge{
	EventAddrResolved:    {{StateAddrQuery, StateAddrResolved}},
	EventAddrError:       {{StateAddrQuery, StateAddrBound}},
	EventRouteResolved:   {{StateRouteQuery, StateRouteResolved}, {StateAddrResolved, StateRouteResolved}},
	EventRouteError:      {{StateRouteQuery, StateAddrResolved}},
	EventConnectResponse: {{StateConnectSent, StateConnectResponse}},
	EventEstablished: {
		{StateConnectSent, StateEstablished}, {StateAcceptSent, StateEstablished},
		{StateConnectResponse, StateEstablished},
	},
	EventConnectError: {
		{StateConnectSent, StateFailed}, {StateConnectResponse, StateFailed},
		{StateAcceptSent, StateFailed}, {StateEstablished, StateFailed},
	},
	EventUnreachable: {
		{StateConnectSent, StateFailed}, {StateConnectResponse, StateFailed},
		{StateAcceptSent, StateFailed}, {StateEstablished, StateFailed},
	},
	EventRejected: {
		{StateConnectSent, StateRejected}, {StateConnectResponse, StateRejected},
		{StateAcceptSent, StateRejected},
	},
	EventDisconnected: {
		{StateEstablished, StateDisconnected}, {StateDisconnectSent, StateDisconnected},
		{StateAcceptSent, StateDisconnected}, {StateConnectResponse, StateDisconnected},
	},
	EventDeviceRemoval: func() []edge {
		var es []edge
		for s := State(0); s < StateDestroyed; s++ {
			es = append(es, edge{s, StateFailed})
		}
		return es
	}(),
}

var allStates = func() []State {
	var ss []State
	for s := State(0); s < numStates; s++ {
		ss = append(ss, s)
	}
	return ss
}()

var mlx = ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000001}

// runOp applies the named operation and returns its error.
func runOp(s *idState, op string) error {
	switch op {
	case "Bind":
		return s.bind()
	case "ResolveAddr":
		return s.resolveAddr()
	case "ResolveRoute":
		return s.resolveRoute()
	case "Listen":
		return s.listen()
	case "Connect":
		_, err := s.connect()
		return err
	case "Accept":
		_, err := s.accept(false)
		return err
	case "Reject":
		return s.reject()
	case "Establish":
		return s.establish()
	case "Disconnect":
		_, err := s.disconnect()
		return err
	case "SetLocalECE":
		return s.setLocalECE(mlx)
	case "CreateQP":
		return s.createQP()
	}
	panic("unknown op " + op)
}

func lookup(es []edge, from State) (State, bool) {
	for _, e := range es {
		if e.from == from {
			return e.to, true
		}
	}
	return 0, false
}

func TestStateMachineEveryEdge(t *testing.T) {
	ops := make([]string, 0, len(opEdges))
	for op := range opEdges {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		for _, from := range allStates {
			t.Run(fmt.Sprintf("%s/%v", op, from), func(t *testing.T) {
				s := idState{state: from}
				err := runOp(&s, op)
				to, ok := lookup(opEdges[op], from)
				if ok {
					if err != nil {
						t.Fatalf("%s in %v: %v, want success", op, from, err)
					}
					if s.state != to {
						t.Fatalf("%s in %v: state %v, want %v", op, from, s.state, to)
					}
					return
				}
				if err == nil {
					t.Fatalf("%s in %v succeeded (state now %v), want an error", op, from, s.state)
				}
				if s.state != from {
					t.Fatalf("%s in %v failed but moved to %v", op, from, s.state)
				}
				switch {
				case from == StateDestroyed:
					if !errors.Is(err, ErrClosed) {
						t.Fatalf("%s on a destroyed ID: %v, want ErrClosed", op, err)
					}
				case op == "SetLocalECE":
					var oe *ECEOrderError
					if !errors.As(err, &oe) || !errors.Is(err, ErrECEOrder) {
						t.Fatalf("SetLocalECE in %v: %v, want *ECEOrderError", from, err)
					}
				default:
					var se *StateError
					if !errors.As(err, &se) || se.State != from || se.Op != op || !errors.Is(err, ErrInvalidState) {
						t.Fatalf("%s in %v: %v, want *StateError{%s, %v}", op, from, err, op, from)
					}
				}
			})
		}
	}
	for typ := EventType(0); typ < numEventTypes; typ++ {
		for _, from := range allStates {
			t.Run(fmt.Sprintf("%v/%v", typ, from), func(t *testing.T) {
				s := idState{state: from}
				deliver := s.onEvent(typ, mlx)
				want := from
				if to, ok := lookup(eventEdges[typ], from); ok {
					want = to
				}
				if s.state != want {
					t.Fatalf("%v in %v: state %v, want %v", typ, from, s.state, want)
				}
				if deliver != (from != StateDestroyed) {
					t.Fatalf("%v in %v: deliver=%v", typ, from, deliver)
				}
			})
		}
	}
}

func TestStateDestroyFromEveryState(t *testing.T) {
	for _, from := range allStates {
		s := idState{state: from}
		s.destroy()
		if s.state != StateDestroyed {
			t.Fatalf("destroy in %v: state %v", from, s.state)
		}
		if _, err := s.remoteECE(); !errors.Is(err, ErrClosed) {
			t.Fatalf("RemoteECE after destroy: %v, want ErrClosed", err)
		}
	}
}

// The UD port space answers with a SIDR_REP: Accept ends in established.
func TestStateAcceptUD(t *testing.T) {
	s := newPassiveState(true, ece.None)
	if _, err := s.accept(false); err != nil {
		t.Fatal(err)
	}
	if s.state != StateEstablished {
		t.Fatalf("UD accept: state %v, want established", s.state)
	}
}

func TestSetLocalECEValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    ece.ECE
		want error
	}{
		{"vendor 0", ece.ECE{Options: 1}, ece.ErrZeroVendor},
		{"comp mask", ece.ECE{VendorID: 0x15b3, CompMask: 1}, ece.ErrCompMask},
		{"vendor too wide", ece.ECE{VendorID: 1 << 24}, ece.ErrVendorTooWide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newIDState(false)
			err := s.setLocalECE(tc.e)
			if !errors.Is(err, tc.want) || !errors.Is(err, ece.ErrInvalidArgument) {
				t.Fatalf("setLocalECE(%+v) = %v, want %v", tc.e, err, tc.want)
			}
			if s.localSet || s.local != ece.None {
				t.Fatalf("a refused ECE was stored: %+v", s.local)
			}
		})
	}
}

// librdmacm refuses rdma_set_local_ece and rdma_get_remote_ece when the
// library created the QP (id->qp set), and rdma_establish too.
func TestLibraryQPRefusesExternalECECalls(t *testing.T) {
	s := newIDState(false)
	s.state = StateRouteResolved
	s.qpCreated(ece.None)
	if err := s.setLocalECE(mlx); !errors.Is(err, ErrLibraryQP) {
		t.Fatalf("setLocalECE with library QP: %v", err)
	}
	if _, err := s.remoteECE(); !errors.Is(err, ErrLibraryQP) {
		t.Fatalf("remoteECE with library QP: %v", err)
	}
	if err := s.createQP(); !errors.Is(err, ErrQPExists) {
		t.Fatalf("second createQP: %v", err)
	}
	s.state = StateConnectResponse
	if err := s.establish(); !errors.Is(err, ErrLibraryQP) {
		t.Fatalf("establish with library QP: %v", err)
	}
	s.qpDestroyed()
	if err := s.establish(); err != nil {
		t.Fatalf("establish after DestroyQP: %v", err)
	}
}

func TestConnectSendsLocalECE(t *testing.T) {
	s := newIDState(false)
	s.state = StateRouteResolved
	if e, _ := s.connect(); e != ece.None {
		t.Fatalf("connect without local ECE sends %v", e)
	}
	s = newIDState(false)
	s.state = StateRouteResolved
	if err := s.setLocalECE(ece.ECE{VendorID: 0x15b3, Options: 7}); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.connect(); e != (ece.ECE{VendorID: 0x15b3, Options: 7}) {
		t.Fatalf("connect sends %v, want vendor 0x15b3 options 7", e)
	}
	// Ordering: the REQ has left.
	err := s.setLocalECE(ece.ECE{VendorID: 0x15b3, Options: 8})
	var oe *ECEOrderError
	if !errors.As(err, &oe) || oe.Role != RoleActive || oe.State != StateConnectSent {
		t.Fatalf("SetLocalECE after Connect: %v", err)
	}
	if !strings.Contains(err.Error(), "REQ") {
		t.Fatalf("error does not name the REQ: %v", err)
	}
	if s.local.Options != 7 {
		t.Fatalf("local ECE changed after the REQ left: %v", s.local)
	}
}

func TestAcceptECE(t *testing.T) {
	none := ece.None
	for _, tc := range []struct {
		name    string
		remote  ece.ECE
		local   *ece.ECE // SetLocalECE argument, nil if not called
		libQP   *ece.ECE // library QP with this ECE
		decline bool
		want    ece.ECE
		wantErr error
	}{
		{name: "no ECE anywhere", remote: none, want: none},
		{name: "REQ without ECE, local set", remote: none, local: &mlx, want: ece.ECE{Options: mlx.Options}},
		{name: "REQ with ECE, answered", remote: mlx, local: &ece.ECE{VendorID: 0x15b3, Options: 0x10000000},
			want: ece.ECE{VendorID: 0x15b3, Options: 0x10000000}},
		{name: "REQ with ECE, other vendor answered", remote: ece.ECE{VendorID: 0x1234, Options: 5}, local: &mlx,
			want: ece.ECE{VendorID: 0x1234, Options: mlx.Options}},
		{name: "REQ with ECE, unanswered", remote: mlx, wantErr: ErrECEOrder},
		{name: "REQ with ECE, declined", remote: mlx, decline: true, want: none},
		{name: "REQ without ECE, declined", remote: none, decline: true, want: none},
		{name: "decline and SetLocalECE", remote: mlx, local: &mlx, decline: true, wantErr: ErrDeclineWithLocalECE},
		{name: "library QP without provider ECE", remote: mlx, libQP: &none, want: ece.ECE{VendorID: 0x15b3}},
		{name: "library QP with ECE", remote: mlx, libQP: &ece.ECE{VendorID: 0x15b3, Options: 0x10000000},
			want: ece.ECE{VendorID: 0x15b3, Options: 0x10000000}},
		{name: "library QP, decline", remote: mlx, libQP: &none, decline: true, want: none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newPassiveState(false, tc.remote)
			if tc.local != nil {
				if err := s.setLocalECE(*tc.local); err != nil {
					t.Fatal(err)
				}
			}
			if tc.libQP != nil {
				if err := s.createQP(); err != nil {
					t.Fatal(err)
				}
				s.qpCreated(*tc.libQP)
			}
			got, err := s.accept(tc.decline)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("accept: %v, want %v", err, tc.wantErr)
				}
				if s.state != StateRequestReceived {
					t.Fatalf("failed accept moved to %v", s.state)
				}
				if tc.wantErr == ErrECEOrder {
					var ue *ECEUnansweredError
					if !errors.As(err, &ue) || ue.Remote != tc.remote {
						t.Fatalf("accept error %v is not an *ECEUnansweredError for %v", err, tc.remote)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("REP ECE %v, want %v", got, tc.want)
			}
			if s.state != StateAcceptSent {
				t.Fatalf("state %v after accept", s.state)
			}
			// Ordering: the REP has left.
			err = s.setLocalECE(mlx)
			var oe *ECEOrderError
			if tc.libQP == nil && (!errors.As(err, &oe) || oe.Role != RolePassive || !strings.Contains(err.Error(), "REP")) {
				t.Fatalf("SetLocalECE after Accept: %v", err)
			}
		})
	}
}

func TestRemoteECE(t *testing.T) {
	s := newPassiveState(false, mlx)
	if got, err := s.remoteECE(); err != nil || got != mlx {
		t.Fatalf("passive remoteECE = %v, %v", got, err)
	}
	s = newIDState(false)
	s.state = StateRouteResolved
	if got, _ := s.remoteECE(); got != ece.None {
		t.Fatalf("remoteECE before any REP = %v", got)
	}
	s.connect()
	s.onEvent(EventConnectResponse, ece.ECE{VendorID: 0x15b3, Options: 9, CompMask: 4})
	if got, _ := s.remoteECE(); got != (ece.ECE{VendorID: 0x15b3, Options: 9}) {
		t.Fatalf("remoteECE after REP = %v", got)
	}
	if err := s.setLocalECE(mlx); !errors.Is(err, ErrECEOrder) {
		t.Fatalf("SetLocalECE after the REP arrived (REQ long gone): %v", err)
	}
}

func TestLibraryConnectResponse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		local   ece.ECE
		rep     ece.ECE
		apply   ece.ECE
		wantErr error
	}{
		{"peer without ECE clears options", mlx, ece.None, ece.ECE{VendorID: mlx.VendorID}, nil},
		{"same vendor applies REP", mlx, ece.ECE{VendorID: mlx.VendorID, Options: 0x10000000},
			ece.ECE{VendorID: mlx.VendorID, Options: 0x10000000}, nil},
		{"vendor mismatch", mlx, ece.ECE{VendorID: 0x1234, Options: 1}, ece.None, ErrECEVendorMismatch},
		{"rxe (no local ECE), ECE REP", ece.None, mlx, ece.None, ErrECEVendorMismatch},
		{"rxe, plain REP", ece.None, ece.None, ece.None, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newIDState(false)
			s.state = StateRouteResolved
			s.qpCreated(tc.local)
			s.connect()
			apply, err := s.libConnectResponse(tc.rep)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("libConnectResponse = %v, want %v", err, tc.wantErr)
			}
			if apply != tc.apply {
				t.Fatalf("apply %v, want %v", apply, tc.apply)
			}
			s.libConnectDone(err == nil, 0x42)
			if err == nil {
				if s.state != StateEstablished || s.local.Options != 0x42 {
					t.Fatalf("after success: %v local %v", s.state, s.local)
				}
				return
			}
			if s.state != StateFailed || !s.connectError {
				t.Fatalf("after failure: %v connectError=%v", s.state, s.connectError)
			}
			// librdmacm swallows the REJECTED and DISCONNECTED that follow.
			if s.onEvent(EventRejected, ece.None) || s.onEvent(EventDisconnected, ece.None) {
				t.Fatal("REJECTED/DISCONNECTED delivered after a library CONNECT_ERROR")
			}
			if !s.onEvent(EventTimewaitExit, ece.None) {
				t.Fatal("TIMEWAIT_EXIT swallowed")
			}
		})
	}
	s := newIDState(false)
	s.state = StateRouteResolved
	s.connect()
	if _, err := s.libConnectResponse(ece.None); err == nil {
		t.Fatal("libConnectResponse without a library QP succeeded")
	}
}

func TestLibraryPassiveECE(t *testing.T) {
	for _, tc := range []struct {
		name          string
		remote, local ece.ECE
		set           ece.ECE
		ok            bool
	}{
		{"REQ without ECE", ece.None, mlx, ece.None, false},
		{"same vendor takes REQ options", ece.ECE{VendorID: mlx.VendorID, Options: 0x10000000}, mlx,
			ece.ECE{VendorID: mlx.VendorID, Options: 0x10000000}, true},
		{"other vendor clears", ece.ECE{VendorID: 0x1234, Options: 1}, mlx, ece.ECE{VendorID: mlx.VendorID}, true},
		{"rxe: vendor 0 locally", mlx, ece.None, ece.None, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newPassiveState(false, tc.remote)
			set, ok := s.libPassiveECE(tc.local)
			if set != tc.set || ok != tc.ok {
				t.Fatalf("libPassiveECE = %v, %v; want %v, %v", set, ok, tc.set, tc.ok)
			}
		})
	}
}

func TestDisconnectAwait(t *testing.T) {
	for _, tc := range []struct {
		from  State
		await bool
	}{
		{StateEstablished, true}, {StateDisconnectSent, true}, {StateDisconnected, false},
		{StateRejected, false}, {StateFailed, false},
	} {
		s := idState{state: tc.from}
		await, err := s.disconnect()
		if err != nil || await != tc.await {
			t.Fatalf("disconnect in %v = %v, %v; want %v", tc.from, await, err, tc.await)
		}
	}
}

// TestStateDiagramMatchesSpec checks that the mermaid diagram in
// docs/ece.md has exactly the edges of opEdges and eventEdges
// (self-loops of SetLocalECE and CreateQP are drawn as notes, not edges).
func TestStateDiagramMatchesSpec(t *testing.T) {
	f, err := os.Open("../docs/ece.md")
	if errors.Is(err, os.ErrNotExist) && os.Getenv("VMTEST_GUEST") != "" {
		t.Skip("the docs are not copied into the guests; this check runs on the host")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`^\s*([a-z_]+)\s*-->\s*([a-z_]+)\s*:\s*(.+)$`)
	drawn := map[string]bool{}
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```mermaid"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
		}
		if !in {
			continue
		}
		if m := re.FindStringSubmatch(line); m != nil {
			from := strings.ReplaceAll(m[1], "_", "-")
			to := strings.ReplaceAll(m[2], "_", "-")
			for _, label := range strings.Split(m[3], ", ") {
				drawn[from+" -> "+to+" : "+strings.TrimSpace(label)] = true
			}
		}
	}
	want := map[string]bool{}
	for op, es := range opEdges {
		if op == "SetLocalECE" || op == "CreateQP" {
			continue
		}
		for _, e := range es {
			if e.from == e.to {
				continue
			}
			want[e.from.String()+" -> "+e.to.String()+" : "+op] = true
		}
	}
	for typ, es := range eventEdges {
		if typ == EventDeviceRemoval {
			continue // drawn once, from a note
		}
		for _, e := range es {
			want[e.from.String()+" -> "+e.to.String()+" : "+strings.TrimPrefix(typ.String(), "RDMA_CM_EVENT_")] = true
		}
	}
	for k := range want {
		if !drawn[k] {
			t.Errorf("docs/ece.md lacks edge %q", k)
		}
	}
	for k := range drawn {
		if !want[k] && !strings.Contains(k, "Destroy") && !strings.Contains(k, "[*]") {
			t.Errorf("docs/ece.md draws %q, which the state machine does not have", k)
		}
	}
}
