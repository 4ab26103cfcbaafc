package cm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// DefaultTimeout is used by ResolveAddr and ResolveRoute when the timeout
// argument is 0 (rping and cmtime use 2000 ms).
const DefaultTimeout = 2 * time.Second

// IDOptions configure CreateID.
type IDOptions struct {
	// Sync makes the ID synchronous, like an rdma_cm_id created without a
	// channel: ResolveAddr, ResolveRoute, Connect, Accept, Disconnect and
	// GetRequest wait for their completion event, and the ID's other
	// events are read with ID.GetEvent instead of Channel.GetEvent. IDs
	// born from a synchronous listener are synchronous.
	Sync bool
	// QPType selects RC or UD for PortSpaceIB (default RC).
	QPType qp.QPType
	// Context is an application value (rdma_cm_id.context).
	Context any
}

// ID is a connection manager identifier (struct rdma_cm_id): one endpoint,
// listening or connecting. Its state machine (State) orders operations and
// the ECE exchange the same way for every backend.
type ID struct {
	ch     *Channel
	uid    uint64
	handle uint32
	ps     rdma.PortSpace
	qpType qp.QPType
	udp    bool
	sync   bool

	// Context is the application's value, inherited by IDs born from a
	// listener.
	Context any

	mu       sync.Mutex
	st       idState
	pending  []*Event // synchronous ID: undelivered events (guarded by ch.mu)
	reqConn  ConnParam
	lastConn ConnParam
	lastUD   UDParam
	qp       *QP
	// qpMem is the memory of the ID's first library QP, allocated with
	// the ID to save an allocation per QP; qpMemUsed once it was handed
	// out. A later QP, after DestroyQP, gets its own.
	qpMem     QP
	qpMemUsed bool
	// devGUID is the node GUID of the ID's device once its address is
	// resolved (hasDev), learned at EventAddrResolved.
	devGUID rdma.GUID
	hasDev  bool
	devPort uint8 // the port, with devGUID
	// dst is the address ResolveAddr was given, named by the errors of
	// ResolveAddr, ResolveRoute and Connect.
	dst    netip.AddrPort
	closed atomic.Bool
	// life is cancelled when the ID is destroyed (Destroy, Channel.Close):
	// it interrupts synchronous calls waiting for their event. Made on
	// first wait.
	life context.Context
	kill context.CancelFunc
}

// CreateID creates an ID in port space ps (rdma_create_id).
func (c *Channel) CreateID(ps rdma.PortSpace, opts *IDOptions) (*ID, error) {
	var o IDOptions
	if opts != nil {
		o = *opts
	}
	t, ok := psQPType(ps, o.QPType)
	if !ok {
		return nil, fmt.Errorf("cm: create ID: port space %v with QP type %v: %w", ps, o.QPType, ErrNotSupported)
	}
	id := &ID{ch: c, ps: ps, qpType: t, udp: t == qp.UD, sync: o.Sync, Context: o.Context}
	id.st = newIDState(id.udp)
	if err := c.register(id); err != nil {
		return nil, err
	}
	h, err := c.b.createID(id.uid, ps, t)
	if err != nil {
		c.forget(id)
		return nil, errnoError("CreateID", err)
	}
	id.handle = h
	return id, nil
}

// adoptID creates the passive ID of a CONNECT_REQUEST.
func (c *Channel) adoptID(listener *ID, r *rawEvent) (*ID, error) {
	id := &ID{ch: c, handle: r.handle, ps: listener.ps, qpType: listener.qpType,
		udp: listener.udp, sync: listener.sync, Context: listener.Context}
	id.st = newPassiveState(id.udp, r.ece)
	return id, c.register(id)
}

// PortSpace returns the ID's port space.
func (id *ID) PortSpace() rdma.PortSpace { return id.ps }

// QPType returns the QP type of the ID (RC or UD).
func (id *ID) QPType() qp.QPType { return id.qpType }

// State returns the ID's current state.
func (id *ID) State() State {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.st.state
}

// Role returns the ID's side.
func (id *ID) Role() Role {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.st.role
}

// Channel returns the ID's channel.
func (id *ID) Channel() *Channel { return id.ch }

// do runs an operation under the ID's lock: check advances the state
// machine, issue talks to the backend; if issue fails the state is
// restored.
func (id *ID) do(op string, check func(*idState) error, issue func() error) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed.Load() {
		return fmt.Errorf("cm: %s: %w", words(op), ErrClosed)
	}
	prev := id.st
	if check != nil {
		if err := check(&id.st); err != nil {
			return err
		}
	}
	if err := issue(); err != nil {
		id.st = prev
		return errnoError(id.opText(op), err)
	}
	return nil
}

// opText is op in words, with the destination where op has one. Called
// with id.mu held.
func (id *ID) opText(op string) string {
	if !id.dst.IsValid() {
		return words(op)
	}
	switch op {
	case "ResolveAddr":
		return "resolve address " + id.dst.Addr().String()
	case "ResolveRoute":
		return "resolve route to " + id.dst.Addr().String()
	case "Connect":
		return "connect to " + id.dst.String()
	}
	return words(op)
}

// Bind binds the ID to a local address (rdma_bind_addr). A zero address
// with a port listens on every RDMA device.
func (id *ID) Bind(addr netip.AddrPort) error {
	return id.do("Bind", (*idState).bind, func() error { return id.ch.b.bind(id.handle, addr) })
}

// ResolveAddr maps dst (and the optional src) to a local RDMA device
// (rdma_resolve_addr). A synchronous ID waits for the result; an
// asynchronous one gets EventAddrResolved or EventAddrError. timeout 0
// means DefaultTimeout.
func (id *ID) ResolveAddr(ctx context.Context, src, dst netip.AddrPort, timeout time.Duration) error {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	err := id.do("ResolveAddr", (*idState).resolveAddr, func() error {
		id.dst = dst
		return id.ch.b.resolveAddr(id.handle, src, dst, timeout)
	})
	if err != nil || !id.sync {
		return err
	}
	_, err = id.complete(ctx, "ResolveAddr", EventAddrResolved)
	return err
}

// ResolveRoute resolves the path to the destination (rdma_resolve_route).
// A synchronous ID waits for the result. timeout 0 means DefaultTimeout.
func (id *ID) ResolveRoute(ctx context.Context, timeout time.Duration) error {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	err := id.do("ResolveRoute", (*idState).resolveRoute, func() error {
		return id.ch.b.resolveRoute(id.handle, timeout)
	})
	if err != nil || !id.sync {
		return err
	}
	_, err = id.complete(ctx, "ResolveRoute", EventRouteResolved)
	return err
}

// Listen starts listening (rdma_listen). backlog <= 0 means the backend's
// maximum: the kernel's net.rdma_ucm.max_backlog, no bound in the user
// backend.
func (id *ID) Listen(backlog int) error {
	return id.do("Listen", (*idState).listen, func() error { return id.ch.b.listen(id.handle, backlog) })
}

// GetRequest waits for the next connection request on a synchronous
// listener (rdma_get_request) and returns the new ID. The request's
// parameters are in the new ID's RequestParam.
func (id *ID) GetRequest(ctx context.Context) (*ID, error) {
	if !id.sync {
		return nil, fmt.Errorf("cm: get request: %w: the ID is asynchronous, use Channel.GetEvent", ErrInvalidState)
	}
	id.mu.Lock()
	err := id.st.getRequest()
	id.mu.Unlock()
	if err != nil {
		// Without this a non-listener would wait for a request that
		// cannot come.
		return nil, err
	}
	for {
		ev, err := id.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		if ev.Type == EventConnectRequest {
			nid := ev.ID
			_ = ev.Ack()
			return nid, nil
		}
		err = ev.Err()
		_ = ev.Ack()
		if err != nil {
			return nil, err
		}
	}
}

// RequestParam returns the connection parameters of the REQ a passive ID
// was born from, as seen from this side.
func (id *ID) RequestParam() ConnParam {
	id.mu.Lock()
	defer id.mu.Unlock()
	return cloneConn(id.reqConn)
}

// ConnParam returns the connection parameters of the last connection
// event (CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED, REJECTED,
// DISCONNECTED) the ID received.
func (id *ID) ConnParam() ConnParam {
	id.mu.Lock()
	defer id.mu.Unlock()
	return cloneConn(id.lastConn)
}

// UDParam returns the UD parameters of the last UD event (ESTABLISHED of
// a UD ID: the remote QP, its Q_Key and address).
func (id *ID) UDParam() UDParam {
	id.mu.Lock()
	defer id.mu.Unlock()
	u := id.lastUD
	u.PrivateData = append([]byte(nil), u.PrivateData...)
	return u
}

func cloneConn(p ConnParam) ConnParam {
	p.PrivateData = append([]byte(nil), p.PrivateData...)
	return p
}

// SetLocalECE sets the ECE the REQ (Connect) or REP (Accept) will carry
// (rdma_set_local_ece). It refuses vendor 0, a non-zero CompMask and IDs
// with a library QP, and, beyond librdmacm, it fails with an
// *ECEOrderError once the REQ or REP has left.
func (id *ID) SetLocalECE(e ece.ECE) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed.Load() {
		return fmt.Errorf("cm: set local ECE: %w", ErrClosed)
	}
	return id.st.setLocalECE(e)
}

// LocalECE returns the ECE this side sends or sent.
func (id *ID) LocalECE() ece.ECE {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.st.local
}

// RemoteECE returns the ECE the peer's REQ or REP carried
// (rdma_get_remote_ece); zero when it carried none. It is refused on IDs
// with a library QP.
func (id *ID) RemoteECE() (ece.ECE, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed.Load() {
		return ece.None, fmt.Errorf("cm: get remote ECE: %w", ErrClosed)
	}
	return id.st.remoteECE()
}

// Connect sends the REQ with the local ECE (rdma_connect); a nil p, and
// each zero count of p, means librdmacm's defaults (see ConnParam,
// MaxResources, RetryNone, ResourcesNone). A synchronous
// ID waits for ESTABLISHED (library QP) or CONNECT_RESPONSE (external
// QP, then call Establish). A rejection is a *RejectError.
func (id *ID) Connect(ctx context.Context, p *ConnParam) error {
	param := defaultConnParam(p)
	err := id.do("Connect", nil, func() error {
		e, err := id.st.connect()
		if err != nil {
			return errPass{err}
		}
		if err := id.fillLibraryParam(&param, true); err != nil {
			return errPass{err}
		}
		return id.ch.b.connect(id.handle, &param, e)
	})
	if err = unpass(err); err != nil || !id.sync {
		return err
	}
	_, err = id.complete(ctx, "Connect", EventEstablished, EventConnectResponse)
	return err
}

// Accept answers a connection request (rdma_accept). The REP carries the
// REQ's vendor ID and the local options (ece.LibrdmacmReply). With an
// external QP and a REQ that carried ECE, SetLocalECE must come first, or
// p.DeclineECE must be set; otherwise Accept fails with an
// *ECEUnansweredError. With a library QP the QP is moved to RTR and RTS
// first. A synchronous ID waits for ESTABLISHED. A nil p, and each zero
// count of p, means librdmacm's defaults, as for Connect.
func (id *ID) Accept(ctx context.Context, p *ConnParam) error {
	param := defaultConnParam(p)
	err := id.do("Accept", nil, func() error {
		e, err := id.st.accept(param.DeclineECE)
		if err != nil {
			return errPass{err}
		}
		if err := id.fillLibraryParam(&param, false); err != nil {
			return errPass{err}
		}
		if id.qp != nil && !id.udp {
			if err := id.qp.toRTS(id, param.ResponderResources, param.InitiatorDepth); err != nil {
				return errPass{errnoError("Accept", err)}
			}
		}
		if err := id.ch.b.accept(id.handle, id.uid, &param, e); err != nil {
			if id.qp != nil {
				id.qp.toErr()
			}
			return err
		}
		return nil
	})
	if err = unpass(err); err != nil || !id.sync || id.udp {
		return err
	}
	_, err = id.complete(ctx, "Accept", EventEstablished)
	return err
}

// defaultConnParam is librdmacm's answer to a NULL rdma_conn_param (the
// device's maximum resources, the REQ's on the passive side, and retry
// counts 7), and applies the same defaults to the zero fields of a
// non-nil p; ResourcesNone and RetryNone become 0. Both backends get the
// result.
func defaultConnParam(p *ConnParam) ConnParam {
	var q ConnParam
	if p != nil {
		q = *p
	}
	q.ResponderResources = orDefault(q.ResponderResources, MaxResources, ResourcesNone)
	q.InitiatorDepth = orDefault(q.InitiatorDepth, MaxResources, ResourcesNone)
	q.RetryCount = orDefault(q.RetryCount, DefaultRetryCount, RetryNone)
	q.RNRRetryCount = orDefault(q.RNRRetryCount, DefaultRNRRetryCount, RetryNone)
	return q
}

// orDefault maps 0 to def and none to 0.
func orDefault(v, def, none uint8) uint8 {
	switch v {
	case 0:
		return def
	case none:
		return 0
	}
	return v
}

// Establish completes the active side of a connection with an external
// QP after CONNECT_RESPONSE (rdma_establish): the QP must already be in
// RTS; the CM sends the RTU.
func (id *ID) Establish() error {
	return id.do("Establish", (*idState).establish, func() error {
		return id.ch.b.accept(id.handle, 0, nil, ece.None)
	})
}

// Reject rejects a connection request, or the REP on an active ID with an
// external QP, with private data (rdma_reject; REJ reason 28, consumer
// defined).
func (id *ID) Reject(privateData []byte) error {
	return id.reject("Reject", privateData, uint8(mad.RejectConsumerDefined))
}

// RejectECE rejects with REJ reason 35, "vendor option not supported"
// (rdma_reject_ece).
func (id *ID) RejectECE(privateData []byte) error {
	return id.reject("RejectECE", privateData, uint8(mad.RejectVendorOptionNotSupported))
}

func (id *ID) reject(op string, pd []byte, reason uint8) error {
	if len(pd) > 255 {
		return fmt.Errorf("cm: %s: %d bytes of private data, at most 255: %w", words(op), len(pd), ErrInvalidArgument)
	}
	return id.do(op, func(s *idState) error {
		err := s.reject()
		var se *StateError
		if errors.As(err, &se) {
			se.Op = op // RejectECE, not Reject
		}
		return err
	}, func() error {
		return id.ch.b.reject(id.handle, pd, reason)
	})
}

// Disconnect tears the connection down (rdma_disconnect): a library QP
// goes to ERR, then the DREQ (or the DREP to the peer's DREQ) is sent. A
// synchronous ID waits for DISCONNECTED unless it already arrived.
func (id *ID) Disconnect(ctx context.Context) error {
	var await bool
	err := id.do("Disconnect", func(s *idState) error {
		var err error
		await, err = s.disconnect()
		return err
	}, func() error {
		if id.qp != nil {
			id.qp.toErr()
		}
		return id.ch.b.disconnect(id.handle)
	})
	if err != nil || !id.sync || !await {
		return err
	}
	_, err = id.complete(ctx, "Disconnect", EventDisconnected)
	if errors.Is(err, ErrDisconnected) {
		return nil
	}
	return err
}

// Notify reports a QP event to the CM (rdma_notify, which takes an enum
// ibv_event_type): uverbs.EventCommEst when data arrives before the RTU,
// or uverbs.EventPathMig when the QP moved to its alternate path (on an
// established connection; on RoCE, where there is no alternate path, it
// changes nothing). On IB and RoCE both backends take these two and
// refuse any other event with EINVAL (ErrInvalidArgument).
func (id *ID) Notify(event uverbs.AsyncEventType) error {
	return id.do("Notify", (*idState).notify, func() error { return id.ch.b.notify(id.handle, uint32(event)) })
}

// InitQPAttr returns the attributes and mask that move a QP of this ID to
// state s (rdma_init_qp_attr).
func (id *ID) InitQPAttr(s qp.State) (qp.Attr, qp.Mask, error) {
	var a qp.Attr
	var m qp.Mask
	err := id.do("InitQPAttr", (*idState).initQPAttr, func() error {
		var err error
		a, m, err = id.ch.b.initQPAttr(id.handle, s)
		return err
	})
	return a, m, err
}

// Query returns the ID's addresses and device (QUERY ADDR).
func (id *ID) Query() (AddrInfo, error) {
	var ai AddrInfo
	err := id.do("Query", nil, func() error {
		var err error
		ai, err = id.ch.b.queryAddr(id.handle)
		return err
	})
	return ai, err
}

// Route returns the resolved path records (QUERY PATH).
func (id *ID) Route() ([]rdma.PathRecord, error) {
	var prs []rdma.PathRecord
	err := id.do("Route", nil, func() error {
		var err error
		prs, err = id.ch.b.queryPath(id.handle)
		return err
	})
	return prs, err
}

// LocalAddr returns the local address (rdma_get_local_addr).
func (id *ID) LocalAddr() netip.AddrPort {
	ai, _ := id.Query()
	return ai.Src
}

// RemoteAddr returns the peer's address (rdma_get_peer_addr).
func (id *ID) RemoteAddr() netip.AddrPort {
	ai, _ := id.Query()
	return ai.Dst
}

// GetEvent returns the next event of a synchronous ID, for example
// DISCONNECTED when the peer disconnects. The caller acks it.
func (id *ID) GetEvent(ctx context.Context) (*Event, error) {
	if !id.sync {
		return nil, fmt.Errorf("cm: get event: %w: the ID is asynchronous, use Channel.GetEvent", ErrInvalidState)
	}
	// Destroy cancels wctx: the wait ends whether this goroutine is the
	// one reading the backend or waits for another reader's news.
	wctx, stop := id.waitContext(ctx)
	defer stop()
	ev, err := id.ch.wait(wctx, func() (*Event, error) {
		if id.closed.Load() {
			return nil, fmt.Errorf("cm: %w", ErrClosed)
		}
		if len(id.pending) == 0 {
			return nil, nil
		}
		ev := id.pending[0]
		id.pending[0] = nil
		id.pending = id.pending[1:]
		id.ch.unacked++
		return ev, nil
	})
	if err != nil && id.closed.Load() && !errors.Is(err, ErrClosed) {
		return nil, fmt.Errorf("cm: %w", ErrClosed)
	}
	return ev, err
}

// waitContext returns ctx, cancelled as well when the ID is destroyed.
func (id *ID) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	id.mu.Lock()
	if id.life == nil {
		id.life, id.kill = context.WithCancel(context.Background())
		if id.closed.Load() {
			id.kill()
		}
	}
	life := id.life
	id.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(life, cancel)
	return ctx, func() { unhook(); cancel() }
}

// markDestroyed moves the ID to destroyed and ends its waits; called with
// id.mu held. It reports false if the ID was already destroyed.
func (id *ID) markDestroyed() bool {
	if id.closed.Load() {
		return false
	}
	id.closed.Store(true)
	id.st.destroy()
	if id.kill != nil {
		id.kill()
	}
	return true
}

// complete waits for one of the wanted events on a synchronous ID; any
// other event ends the wait with its error.
func (id *ID) complete(ctx context.Context, op string, want ...EventType) (EventType, error) {
	ev, err := id.GetEvent(ctx)
	if err != nil {
		return 0, err
	}
	defer ev.Ack()
	err = ev.err()
	for _, w := range want {
		if ev.Type == w && ev.Status == 0 {
			return ev.Type, nil
		}
	}
	if _, ok := err.(*RejectError); ok {
		return ev.Type, err // it names the connect
	}
	if _, ok := err.(*SIDRError); ok {
		return ev.Type, err // it names the resolve
	}
	if err == nil {
		err = fmt.Errorf("unexpected %v", ev.Type)
	}
	id.mu.Lock()
	what := id.opText(op)
	id.mu.Unlock()
	// Not errnoError: an event's status names its sentinel itself (ENODEV
	// in ADDR_ERROR is ErrNoRoute, not ErrNoDevice), and it has no prefix.
	return ev.Type, fmt.Errorf("cm: %s: %w", what, err)
}

// Destroy destroys the ID (rdma_destroy_id), its library QP and CQs, and
// drops its undelivered events. Events already handed out stay valid
// until acked.
func (id *ID) Destroy() error {
	id.mu.Lock()
	if !id.markDestroyed() {
		id.mu.Unlock()
		return nil
	}
	q := id.qp
	id.qp = nil
	id.mu.Unlock()

	orphans := id.ch.forget(id)
	var errs []error
	if q != nil {
		errs = append(errs, q.destroy())
	}
	if _, err := id.ch.b.destroyID(id.handle); err != nil {
		errs = append(errs, errnoError("Destroy", err))
	}
	for _, o := range orphans {
		errs = append(errs, o.Destroy())
	}
	return errors.Join(errs...)
}

// closeLocal marks the ID destroyed when its channel closes (the kernel
// destroys the IDs of a closed fd).
func (id *ID) closeLocal() {
	id.mu.Lock()
	id.markDestroyed()
	q := id.qp
	id.qp = nil
	id.mu.Unlock()
	if q != nil {
		_ = q.destroy()
	}
}

// fillParams decodes the event's parameters by QP type and records them.
func (id *ID) fillParams(ev *Event, r *rawEvent) {
	if id.udp {
		ev.UD = r.ud
	} else {
		ev.Conn = r.conn
	}
	switch r.typ {
	case EventConnectRequest, EventConnectResponse:
		ev.ECE = r.ece
	}
}

// onEvent advances the state machine for ev (on the reading goroutine)
// and reports whether ev is delivered. A library QP turns the REP into
// ESTABLISHED or CONNECT_ERROR here, as librdmacm does.
func (id *ID) onEvent(ev *Event) bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed.Load() {
		return false
	}
	switch ev.Type {
	case EventConnectResponse, EventEstablished, EventRejected, EventDisconnected, EventConnectError:
		if id.udp {
			id.lastUD = ev.UD
		} else {
			id.lastConn = ev.Conn
		}
	}
	if ev.Type == EventAddrResolved {
		// librdmacm learns the ID's device here (ucma_process_addr_resolved
		// → ucma_query_addr), not in rdma_create_qp: one QUERY per ID,
		// and the device's first ID opens it (ucma_get_device: context
		// and PD), in the step where cmtime pays both. An open that
		// fails here fails again, reported, in CreateQP or Verbs.
		if ai, err := id.ch.b.queryAddr(id.handle); err == nil && ai.HasDevice {
			id.devGUID, id.hasDev, id.devPort = ai.NodeGUID, true, ai.Port
			_, _ = id.ch.devices.get(ai.NodeGUID)
		}
	}
	if ev.Type == EventConnectResponse && id.qp != nil && id.st.state == StateConnectSent {
		id.libraryConnectResponse(ev)
		return true
	}
	if (ev.Type == EventRejected || ev.Type == EventUnreachable && id.udp) && id.st.role == RoleActive {
		ev.peer = id.dst
	}
	if id.qp != nil {
		switch ev.Type {
		case EventRejected, EventUnreachable, EventConnectError:
			id.qp.toErr()
		}
	}
	return id.st.onEvent(ev.Type, ev.ECE)
}

// libraryConnectResponse is librdmacm's ucma_process_conn_resp_ece: apply
// the REP's ECE to the library QP, move it to RTR and RTS, send the RTU
// and report ESTABLISHED; on failure the QP goes to ERR and the event
// becomes CONNECT_ERROR.
func (id *ID) libraryConnectResponse(ev *Event) {
	apply, err := id.st.libConnectResponse(ev.ECE)
	if err == nil {
		err = id.qp.setECE(apply)
	}
	if err == nil {
		err = id.qp.toRTS(id, MaxResources, MaxResources)
	}
	if err == nil {
		err = id.ch.b.accept(id.handle, 0, nil, ece.None)
	}
	var negotiated uint32
	if err == nil {
		negotiated, err = id.qp.negotiatedOptions()
	}
	if err != nil {
		id.qp.toErr()
		id.st.libConnectDone(false, 0)
		ev.Type = EventConnectError
		ev.Status = -22 // EINVAL, as librdmacm reports
		return
	}
	id.st.libConnectDone(true, negotiated)
	ev.Type = EventEstablished
}

// errPass carries an error that must not be wrapped as an errno.
type errPass struct{ err error }

func (e errPass) Error() string { return e.err.Error() }

func unpass(err error) error {
	var p errPass
	if errors.As(err, &p) {
		return p.err
	}
	return err
}
