package cm

import (
	"fmt"

	"github.com/go-rdma/rdmacm/ece"
)

// State is an ID's connection-manager state as this package tracks it. It
// follows the kernel rdma_cm states (drivers/infiniband/core/cma.c) where
// they exist and splits CONNECT into its active and passive halves, which
// is where the ECE ordering rules live (see docs/ece.md).
type State uint8

const (
	// StateIdle: created, nothing done yet.
	StateIdle State = iota
	// StateAddrBound: bound to a local address (Bind), or an address
	// resolution failed.
	StateAddrBound
	// StateAddrQuery: ResolveAddr issued, ADDR_RESOLVED/ADDR_ERROR pending.
	StateAddrQuery
	// StateAddrResolved: the destination maps to a local RDMA device.
	StateAddrResolved
	// StateRouteQuery: ResolveRoute issued.
	StateRouteQuery
	// StateRouteResolved: ready to connect.
	StateRouteResolved
	// StateListen: listening for connection requests.
	StateListen
	// StateConnectSent: active side, Connect issued: the REQ has left and
	// carries the local ECE, which can no longer change.
	StateConnectSent
	// StateConnectResponse: active side, the REP arrived (external QP):
	// the application applies the remote ECE to its QP, moves it to RTR
	// and RTS, then calls Establish (or rejects).
	StateConnectResponse
	// StateRequestReceived: passive side, a REQ arrived and the
	// application decides: SetLocalECE, Accept or Reject.
	StateRequestReceived
	// StateAcceptSent: passive side, Accept issued: the REP has left with
	// its ECE; waiting for the RTU (ESTABLISHED).
	StateAcceptSent
	// StateEstablished: connected.
	StateEstablished
	// StateDisconnectSent: Disconnect issued, DISCONNECTED pending.
	StateDisconnectSent
	// StateDisconnected: DISCONNECTED delivered.
	StateDisconnected
	// StateRejected: a REJ was sent or received.
	StateRejected
	// StateFailed: the connection failed (CONNECT_ERROR, UNREACHABLE,
	// DEVICE_REMOVAL).
	StateFailed
	// StateDestroyed: Destroy was called; every operation fails.
	StateDestroyed
	numStates
)

var stateNames = [numStates]string{
	"idle", "addr-bound", "addr-query", "addr-resolved", "route-query",
	"route-resolved", "listen", "connect-sent", "connect-response",
	"request-received", "accept-sent", "established", "disconnect-sent",
	"disconnected", "rejected", "failed", "destroyed",
}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Role says which side of a connection an ID is on.
type Role uint8

const (
	// RoleNone: not yet connecting or listening.
	RoleNone Role = iota
	// RoleActive: the ID called Connect (sends the REQ).
	RoleActive
	// RolePassive: the ID came from a CONNECT_REQUEST (sends the REP).
	RolePassive
	// RoleListener: the ID listens.
	RoleListener
)

func (r Role) String() string {
	switch r {
	case RoleActive:
		return "active"
	case RolePassive:
		return "passive"
	case RoleListener:
		return "listener"
	}
	return "none"
}

// idState is the pure per-ID state machine shared by every backend: the CM
// state, the side, whether the library owns the QP, and the two ECE values
// with the rules that order them. It performs no I/O; the ID calls it
// before issuing an operation and when an event is delivered.
type idState struct {
	state State
	role  Role
	udp   bool // UD port space: no REQ/REP/RTU, SIDR instead
	// libQP: the QP was created by CreateQP; the library then owns ECE
	// (librdmacm: id->qp set).
	libQP bool
	local ece.ECE
	// localSet: SetLocalECE was called (or, with a library QP, the local
	// ECE was taken from the QP).
	localSet bool
	remote   ece.ECE
	// connectError: a library QP turned the REP into CONNECT_ERROR; later
	// REJECTED and DISCONNECTED events are swallowed (librdmacm
	// connect_error).
	connectError bool
}

func newIDState(udp bool) idState { return idState{state: StateIdle, udp: udp} }

// newPassiveState is the state of an ID born from a CONNECT_REQUEST that
// carried remote (zero if the peer sent no ECE).
func newPassiveState(udp bool, remote ece.ECE) idState {
	return idState{state: StateRequestReceived, role: RolePassive, udp: udp, remote: remote}
}

func (s *idState) fail(op string) error {
	if s.state == StateDestroyed {
		return fmt.Errorf("cm: %s: %w", words(op), ErrClosed)
	}
	return &StateError{Op: op, State: s.state}
}

func (s *idState) in(states ...State) bool {
	for _, st := range states {
		if s.state == st {
			return true
		}
	}
	return false
}

// eceOpen reports whether the local ECE may still change: before the REQ
// (active) or the REP (passive) leaves.
func (s *idState) eceOpen() bool {
	return s.in(StateIdle, StateAddrBound, StateAddrQuery, StateAddrResolved,
		StateRouteQuery, StateRouteResolved, StateRequestReceived)
}

// setLocalECE validates e as rdma_set_local_ece does and checks ordering.
func (s *idState) setLocalECE(e ece.ECE) error {
	const op = "SetLocalECE"
	if s.state == StateDestroyed {
		return s.fail(op)
	}
	if err := e.Validate(); err != nil {
		return errnoError(op, err)
	}
	if s.libQP {
		return fmt.Errorf("cm: %s: %w", words(op), ErrLibraryQP)
	}
	if !s.eceOpen() {
		return &ECEOrderError{Op: op, State: s.state, Role: s.role}
	}
	s.local = ece.ECE{VendorID: e.VendorID, Options: e.Options}
	s.localSet = true
	return nil
}

// remoteECE returns what the peer's REQ or REP carried.
func (s *idState) remoteECE() (ece.ECE, error) {
	const op = "RemoteECE"
	if s.state == StateDestroyed {
		return ece.None, s.fail(op)
	}
	if s.libQP {
		return ece.None, fmt.Errorf("cm: %s: %w", words(op), ErrLibraryQP)
	}
	return s.remote, nil
}

func (s *idState) bind() error {
	if !s.in(StateIdle) {
		return s.fail("Bind")
	}
	s.state = StateAddrBound
	return nil
}

func (s *idState) resolveAddr() error {
	if !s.in(StateIdle, StateAddrBound, StateAddrResolved) {
		return s.fail("ResolveAddr")
	}
	s.state = StateAddrQuery
	return nil
}

func (s *idState) resolveRoute() error {
	if !s.in(StateAddrResolved, StateRouteResolved) {
		return s.fail("ResolveRoute")
	}
	s.state = StateRouteQuery
	return nil
}

func (s *idState) listen() error {
	if !s.in(StateIdle, StateAddrBound) {
		return s.fail("Listen")
	}
	s.state = StateListen
	s.role = RoleListener
	return nil
}

// getRequest: only a listener receives connection requests (a listener
// stays one after DEVICE_REMOVAL, whose event GetRequest then reports).
func (s *idState) getRequest() error {
	if s.role != RoleListener || s.state == StateDestroyed {
		return s.fail("GetRequest")
	}
	return nil
}

// notify: rdma_notify reports a QP event to the ID's connection, which
// exists from the REQ on (kernel cma.c rdma_notify: no cm_id.ib →
// EINVAL); a listener has no QP.
func (s *idState) notify() error {
	if s.in(StateIdle, StateAddrBound, StateAddrQuery, StateAddrResolved, StateRouteQuery,
		StateRouteResolved, StateListen, StateDestroyed) {
		return s.fail("Notify")
	}
	return nil
}

// initQPAttr: an idle ID has no device yet (ucma_get_ctx_dev → EINVAL)
// and a listener has no QP to move. Elsewhere the kernel decides.
func (s *idState) initQPAttr() error {
	if s.in(StateIdle, StateListen, StateDestroyed) {
		return s.fail("InitQPAttr")
	}
	return nil
}

// createQP records that the library created the QP and took its ECE
// (local, or zero when the provider has none).
func (s *idState) createQP() error {
	const op = "CreateQP"
	if s.libQP {
		return fmt.Errorf("cm: %s: %w", words(op), ErrQPExists)
	}
	if !s.in(StateAddrBound, StateAddrResolved, StateRouteQuery, StateRouteResolved, StateRequestReceived) {
		return s.fail(op)
	}
	return nil
}

// qpCreated commits a library QP whose ECE is local.
func (s *idState) qpCreated(local ece.ECE) {
	s.libQP = true
	s.local = local
	s.localSet = true
}

// qpDestroyed drops the library QP (DestroyQP).
func (s *idState) qpDestroyed() { s.libQP = false }

// connect returns the ECE the REQ carries: the local one (zero if never
// set), as rdma_connect does.
func (s *idState) connect() (ece.ECE, error) {
	if !s.in(StateRouteResolved) {
		return ece.None, s.fail("Connect")
	}
	s.state = StateConnectSent
	s.role = RoleActive
	return s.local, nil
}

// accept returns the ECE the REP carries. With an external QP (or none)
// and a REQ that offered ECE, the application must answer it first:
// SetLocalECE with what its QP accepted, or decline explicitly.
func (s *idState) accept(decline bool) (ece.ECE, error) {
	const op = "Accept"
	if !s.in(StateRequestReceived) {
		return ece.None, s.fail(op)
	}
	if decline {
		if s.localSet && !s.libQP {
			return ece.None, fmt.Errorf("cm: %s: %w", words(op), ErrDeclineWithLocalECE)
		}
		s.advanceAccept()
		return ece.None, nil
	}
	if !s.libQP && !s.remote.IsZero() && !s.localSet {
		return ece.None, &ECEUnansweredError{Remote: s.remote}
	}
	s.advanceAccept()
	return ece.LibrdmacmReply.Reply(s.remote, s.local), nil
}

func (s *idState) advanceAccept() {
	if s.udp {
		// SIDR: the SIDR_REP is the whole answer.
		s.state = StateEstablished
		return
	}
	s.state = StateAcceptSent
}

// reject: a passive ID rejects the REQ; an active ID with an external QP
// rejects the REP (for example with reason 35 after looking at its ECE).
func (s *idState) reject() error {
	if !s.in(StateRequestReceived, StateConnectResponse) {
		return s.fail("Reject")
	}
	s.state = StateRejected
	return nil
}

// establish: the active side with an external QP sends the RTU.
func (s *idState) establish() error {
	const op = "Establish"
	if s.libQP {
		return fmt.Errorf("cm: %s: %w", words(op), ErrLibraryQP)
	}
	if !s.in(StateConnectResponse) {
		return s.fail(op)
	}
	s.state = StateEstablished
	return nil
}

// disconnect reports whether a DISCONNECTED event is still to come.
func (s *idState) disconnect() (awaitEvent bool, err error) {
	switch s.state {
	case StateConnectSent, StateConnectResponse, StateAcceptSent, StateEstablished:
		s.state = StateDisconnectSent
		return true, nil
	case StateDisconnectSent:
		return true, nil
	case StateDisconnected, StateRejected, StateFailed:
		return false, nil
	}
	return false, s.fail("Disconnect")
}

func (s *idState) destroy() { s.state = StateDestroyed }

// onEvent applies a delivered event and reports whether it reaches the
// application (librdmacm swallows REJECTED and DISCONNECTED after a
// library-QP CONNECT_ERROR). remote is the event's ECE.
func (s *idState) onEvent(t EventType, remote ece.ECE) (deliver bool) {
	if s.state == StateDestroyed {
		return false
	}
	switch t {
	case EventAddrResolved:
		if s.state == StateAddrQuery {
			s.state = StateAddrResolved
		}
	case EventAddrError:
		if s.state == StateAddrQuery {
			s.state = StateAddrBound
		}
	case EventRouteResolved:
		if s.in(StateRouteQuery, StateAddrResolved) {
			s.state = StateRouteResolved
		}
	case EventRouteError:
		if s.state == StateRouteQuery {
			s.state = StateAddrResolved
		}
	case EventConnectResponse:
		if s.state == StateConnectSent {
			s.state = StateConnectResponse
			s.remote = ece.ECE{VendorID: remote.VendorID, Options: remote.Options}
		}
	case EventEstablished:
		if s.in(StateConnectSent, StateAcceptSent, StateConnectResponse) {
			s.state = StateEstablished
		}
	case EventConnectError, EventUnreachable:
		if s.in(StateConnectSent, StateConnectResponse, StateAcceptSent, StateEstablished) {
			s.state = StateFailed
		}
	case EventRejected:
		if s.connectError {
			return false
		}
		if s.in(StateConnectSent, StateConnectResponse, StateAcceptSent) {
			s.state = StateRejected
		}
	case EventDisconnected:
		if s.connectError {
			return false
		}
		if s.in(StateEstablished, StateDisconnectSent, StateAcceptSent, StateConnectResponse) {
			s.state = StateDisconnected
		}
	case EventDeviceRemoval:
		s.state = StateFailed
	}
	return true
}

// libConnectResponse is the library-QP path of a REP (librdmacm
// ucma_process_conn_resp_ece): it returns the ECE to apply to the QP
// before RTR, or an error when the peer answered with another vendor.
func (s *idState) libConnectResponse(rep ece.ECE) (apply ece.ECE, err error) {
	if s.state != StateConnectSent || !s.libQP {
		return ece.None, s.fail("connect response")
	}
	s.remote = ece.ECE{VendorID: rep.VendorID}
	switch {
	case rep.VendorID == 0:
		// The peer (or its kernel) does not speak ECE: clear the options.
		return ece.ECE{VendorID: s.local.VendorID}, nil
	case rep.VendorID != s.local.VendorID:
		return ece.None, fmt.Errorf("cm: REP carries ECE vendor %#x, local vendor is %#x: %w",
			rep.VendorID, s.local.VendorID, ErrECEVendorMismatch)
	}
	return ece.ECE{VendorID: rep.VendorID, Options: rep.Options}, nil
}

// libConnectDone finishes the library-QP REP path: ok means the QP reached
// RTS and the RTU was sent (ESTABLISHED); otherwise CONNECT_ERROR.
func (s *idState) libConnectDone(ok bool, negotiated uint32) {
	if ok {
		s.state = StateEstablished
		s.local.Options = negotiated
		return
	}
	s.state = StateFailed
	s.connectError = true
}

// libPassiveECE is librdmacm's init_ece for a QP created after a REQ: the
// ECE to request on the new QP given its queried ECE (local), or false
// when nothing is to be set.
func (s *idState) libPassiveECE(local ece.ECE) (set ece.ECE, ok bool) {
	if s.remote.IsZero() {
		return ece.None, false
	}
	if s.remote.VendorID != local.VendorID {
		// A different vendor: tell the provider and clear the options.
		return ece.ECE{VendorID: local.VendorID}, true
	}
	return ece.ECE{VendorID: s.remote.VendorID, Options: s.remote.Options}, true
}
