package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Endpoint is one connected RC queue pair with its CM ID, its send and
// receive CQs and their completion channel. Its methods are safe for
// concurrent use; Close may be called at any time, and more than once.
type Endpoint struct {
	c    *channel
	box  *mailbox
	id   *cm.ID
	cfg  config
	pd   *uverbs.PD
	comp *uverbs.CompChannel
	scq  *uverbs.CQ
	rcq  *uverbs.CQ
	qp   *uverbs.QP
	p    poller
	// sharedS and sharedR are the shared CQs (EndpointOptions.SendCQ,
	// RecvCQ) the endpoint is bound to; scq/rcq are then theirs.
	sharedS, sharedR *CQ
	// srq is the shared receive queue (EndpointOptions.SRQ) the QP
	// receives from, once bound.
	srq *SRQ
	// setup is what EndpointOptions.Setup returned; extQP says ep.qp is
	// its QP, the caller's: never destroyed, moved to ERR only with
	// EndpointOptions.ErrorQPOnClose.
	setup ConnSetup
	extQP bool
	// recvMR holds the RecvSlots receives (nil without them).
	recvMR *MR

	local, remote ece.ECE
	peerData      []byte

	gone       context.Context // ends when the connection is gone
	setGone    context.CancelCauseFunc
	closed     chan struct{}
	isClosed   atomic.Bool // set as closed is closed: a wait's check, without a select
	closeOnce  sync.Once
	closeErr   error
	watcherEnd chan struct{}
	dreq       chan struct{} // closed on DISCONNECTED
	dreqOnce   sync.Once
	qpMu       sync.Mutex // QP state changes
	// The work requests Post* build, reused so that a post allocates
	// nothing (the provider copies them into the queue at post time).
	sendMu  sync.Mutex
	sendWR  [1]uverbs.SendWR
	sendSGE [1]uverbs.SGE
	recvMu  sync.Mutex
	recvWR  [1]uverbs.RecvWR
	recvSGE [1]uverbs.SGE
}

// Dial connects to address ("host:port"; host is a name, an IPv4 or an
// IPv6 address, resolved with net.DefaultResolver) and returns the
// established endpoint. It tries the host's addresses in turn, as
// net.Dial does; ctx bounds the resolutions and the connection exchange.
// opts may be nil; its Setup, if any, runs for each address tried.
func Dial(ctx context.Context, address string, opts *EndpointOptions) (*Endpoint, error) {
	return dial(ctx, address, opts)
}

func dial(ctx context.Context, address string, opts *EndpointOptions) (*Endpoint, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	return dialEach(ctx, address, "dial", func(a netip.AddrPort) (*Endpoint, error) { return dialAddr(ctx, a, cfg) })
}

// dialEach resolves address and returns what f makes of the first of its
// addresses that works, or every failure joined, each named with verb
// and the address.
func dialEach[T any](ctx context.Context, address, verb string, f func(netip.AddrPort) (T, error)) (T, error) {
	var zero T
	addrs, err := resolve(ctx, address)
	if err != nil {
		return zero, err
	}
	var errs []error
	for _, a := range addrs {
		v, err := f(a)
		if err == nil {
			return v, nil
		}
		errs = append(errs, wrapErr(verb+" "+a.String(), err))
		if ctx.Err() != nil {
			break
		}
	}
	return zero, errors.Join(errs...)
}

// resolve maps "host:port" to addresses; an empty host is the zero
// address (Listen's "every device").
func resolve(ctx context.Context, address string) ([]netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("rdmacm: %w: %w", ErrInvalidArgument, err)
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, fmt.Errorf("rdmacm: port %q: %w", port, err)
	}
	if host == "" {
		return []netip.AddrPort{netip.AddrPortFrom(netip.Addr{}, uint16(pn))}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(a.Unmap(), uint16(pn))}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("rdmacm: resolve %s: %w: %w", host, ErrNoRoute, err)
	}
	out := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		out[i] = netip.AddrPortFrom(ip.Unmap(), uint16(pn))
	}
	return out, nil
}

func dialAddr(ctx context.Context, dst netip.AddrPort, cfg config) (_ *Endpoint, err error) {
	c, err := acquireChannel(cfg.backend)
	if err != nil {
		return nil, err
	}
	id, err := c.ch.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		c.release()
		return nil, err
	}
	ep := newEndpoint(c, id, cfg)
	defer func() {
		if err != nil {
			ep.fail()
		}
	}()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
		return nil, err
	}
	if _, err := ep.expect(ctx, cm.EventAddrResolved); err != nil {
		return nil, err
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		return nil, err
	}
	if _, err := ep.expect(ctx, cm.EventRouteResolved); err != nil {
		return nil, err
	}
	if err := ep.createQP(); err != nil {
		return nil, err
	}
	// rdma_set_local_ece(3): the local ECE before the REQ leaves.
	if ep.local, err = ep.offerECE(); err != nil {
		return nil, err
	}
	if ep.local.VendorID != 0 {
		if err := id.SetLocalECE(ep.local); err != nil {
			return nil, err
		}
	}
	if err := ep.toInit(); err != nil {
		return nil, err
	}
	if err := id.Connect(ctx, ep.connParam()); err != nil {
		return nil, err
	}
	ev, err := ep.expect(ctx, cm.EventConnectResponse)
	if err != nil {
		return nil, err
	}
	ep.peerData = ev.pd
	// rdma_get_remote_ece(3), ibv_set_ece, then RTR and RTS.
	if ep.remote, err = id.RemoteECE(); err != nil {
		return nil, err
	}
	if err := ep.applyECE(ep.remote); err != nil {
		return nil, err
	}
	// INIT again first, with the CM's attributes now that it has the REP:
	// before the connect the kernel CM gives an RC QP no remote access
	// (cma_ib_init_qp_attr), after it ib_cm's REMOTE_WRITE (and READ with
	// responder resources); librdmacm's ucma_modify_qp_rtr does the same.
	if err := ep.modify(qp.Init, qp.RTR, qp.RTS); err != nil {
		id.Reject(nil)
		return nil, err
	}
	if err := id.Establish(); err != nil {
		return nil, err
	}
	ep.start()
	return ep, nil
}

func newEndpoint(c *channel, id *cm.ID, cfg config) *Endpoint {
	ep := &Endpoint{c: c, id: id, cfg: cfg, closed: make(chan struct{}), dreq: make(chan struct{})}
	ep.box = c.register(id)
	ep.gone, ep.setGone = context.WithCancelCause(context.Background())
	ep.p.spin = cfg.spin
	ep.p.news = make(chan struct{})
	return ep
}

// event is what the endpoint keeps of a CM event (it acks at once).
type event struct {
	typ cm.EventType
	err error
	pd  []byte
	ece ece.ECE
}

// expect waits for an event of type want; an error event is an error.
func (ep *Endpoint) expect(ctx context.Context, want cm.EventType) (event, error) {
	for {
		ev, err := ep.box.get(ctx, ep.closed)
		if err != nil {
			return event{}, err
		}
		e := event{typ: ev.Type, err: ev.Err(), pd: append([]byte(nil), ev.Conn.PrivateData...), ece: ev.ECE}
		ev.Ack()
		switch {
		case e.typ == want:
			return e, nil
		case e.typ == cm.EventTimewaitExit, e.typ == cm.EventAddrChange:
			continue
		case e.err != nil:
			return e, wrapErr("", e.err) // cm's error names the event or the connect
		case e.typ == cm.EventEstablished && want == cm.EventConnectResponse:
			continue
		default:
			return e, fmt.Errorf("rdmacm: %v while waiting for %v: %w", e.typ, want, ErrDisconnected)
		}
	}
}

// connParam is the Connect/Accept parameters of the endpoint. The
// config's counts are final (its defaults applied), so an explicit 0 (a
// negative EndpointOptions field) becomes cm's sentinel for 0: a zero
// cm.ConnParam field would mean librdmacm's default again.
func (ep *Endpoint) connParam() *cm.ConnParam {
	p := ep.cfg.connParam(ep.qp.Num())
	if ep.setup.PrivateData != nil {
		p.PrivateData = ep.setup.PrivateData
	}
	return p
}

func (c *config) connParam(qpn uint32) *cm.ConnParam {
	orNone := func(v, none uint8) uint8 {
		if v == 0 {
			return none
		}
		return v
	}
	return &cm.ConnParam{
		PrivateData:        c.privateData,
		ResponderResources: orNone(c.resp, cm.ResourcesNone),
		InitiatorDepth:     orNone(c.init, cm.ResourcesNone),
		RetryCount:         orNone(c.retry, cm.RetryNone),
		RNRRetryCount:      orNone(c.rnr, cm.RetryNone),
		QPNum:              qpn,
		SRQ:                c.srq != nil, // the REQ's and REP's SRQ bit, as librdmacm's for a QP on one
	}
}

// createQP runs the caller's Setup, then makes the completion channel, the
// CQs and the RC QP on the ID's device, in RESET, unless Setup gave the
// caller's QP. A queue with a shared CQ uses it; the completion channel is
// made only for the endpoint's own CQs.
func (ep *Endpoint) createQP() error {
	x, pd, err := ep.id.Verbs()
	if err != nil {
		return err
	}
	ep.pd = pd
	if ep.cfg.setup != nil {
		if ep.setup, err = ep.cfg.setup(ep); err != nil {
			ep.setup = ConnSetup{} // a failed Setup cleans up after itself
			return err
		}
	}
	if err := ep.createQPOrAttach(x, pd); err != nil {
		return err
	}
	if ep.cfg.recvSlotSize > 0 && ep.cfg.recvSlots > 0 {
		ep.recvMR, err = reg(pd, ep.cfg.recvSlots*ep.cfg.recvSlotSize, qp.AccessLocalWrite)
	}
	return err
}

func (ep *Endpoint) createQPOrAttach(x *uverbs.Context, pd *uverbs.PD) (err error) {
	if ep.setup.QP != nil {
		if ep.cfg.srq != nil {
			return fmt.Errorf("rdmacm: the caller's QP (ConnSetup.QP) with EndpointOptions.SRQ: the SRQ is for the endpoint's own QPs: %w", ErrInvalidArgument)
		}
		return ep.attachQP(x, ep.setup.QP)
	}
	// The SRQ first: its limits are the likelier to be wrong, and its
	// error the clearer.
	var srq *uverbs.SRQ
	if s := ep.cfg.srq; s != nil {
		if srq, err = s.bind(ep.c, pd); err != nil {
			return err
		}
		ep.srq = s
	}
	if s := ep.cfg.sendCQ; s != nil {
		if ep.scq, err = s.bind(ep.c, x); err != nil {
			return err
		}
		ep.sharedS = s
	}
	if r := ep.cfg.recvCQ; r != nil {
		if ep.rcq, err = r.bind(ep.c, x); err != nil {
			return err
		}
		ep.sharedR = r
	}
	if ep.sharedS == nil || ep.sharedR == nil {
		mk := x.CreateCompChannel
		if ep.cfg.threadWait {
			mk = x.CreateCompChannelBlocking
			ep.p.blocking = true
			ep.p.readEnd.L = &ep.p.mu
		}
		if ep.comp, err = mk(); err != nil {
			return err
		}
		ep.p.ch = ep.comp
	}
	if ep.sharedS == nil {
		if ep.scq, err = x.CreateCQ(int(ep.cfg.sendWR), ep.comp, 0); err != nil {
			return err
		}
		ep.p.cqs[sendQ] = ep.scq
	}
	if ep.sharedR == nil {
		if ep.rcq, err = x.CreateCQ(int(ep.cfg.recvWR), ep.comp, 0); err != nil {
			return err
		}
		ep.p.cqs[recvQ] = ep.rcq
	}
	init := uverbs.QPInit{Type: qp.RC, SendCQ: ep.scq, RecvCQ: ep.rcq, Cap: qp.Cap{
		MaxSendWR: ep.cfg.sendWR, MaxRecvWR: ep.cfg.recvWR, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: ep.cfg.inline,
	}}
	if srq != nil {
		init.SRQ = srq
		init.Cap.MaxRecvWR, init.Cap.MaxRecvSGE = 0, 0
	}
	ep.qp, err = pd.CreateQP(init)
	return err
}

// attachQP takes the caller's QP (ConnSetup.QP) and checks it.
func (ep *Endpoint) attachQP(x *uverbs.Context, q *uverbs.QP) error {
	ep.qp, ep.extQP = q, true
	switch {
	case q.Type() != qp.RC:
		return fmt.Errorf("rdmacm: the caller's QP is %v, not RC: %w", q.Type(), ErrInvalidArgument)
	case q.PD() == nil || q.PD().Context() != x:
		return fmt.Errorf("rdmacm: the caller's QP is on another device: %w", ErrInvalidArgument)
	case q.State() != qp.Reset:
		return fmt.Errorf("rdmacm: the caller's QP is in %v, not RESET: %w", q.State(), ErrInvalidState)
	}
	return nil
}

// toInit moves the QP to INIT, posts the RecvSlots receives and runs
// ConnSetup.AtInit: all before the REQ or the REP leaves.
func (ep *Endpoint) toInit() error {
	if err := ep.modify(qp.Init); err != nil {
		return err
	}
	for i := range ep.cfg.recvSlots {
		var err error
		if ep.recvMR != nil {
			err = ep.PostRecv(ep.recvMR, i*ep.cfg.recvSlotSize, ep.cfg.recvSlotSize)
		} else if err = ep.qp.PostRecv([]uverbs.RecvWR{{}}); err == nil {
			ep.p.posted[recvQ].Add(1)
		}
		if err != nil {
			return err
		}
	}
	if ep.setup.AtInit != nil {
		return ep.setup.AtInit(ep)
	}
	return nil
}

// fail ends an endpoint whose Dial or Accept failed: Setup's Abort first,
// while the device is still open, then Close.
func (ep *Endpoint) fail() {
	if ep.setup.Abort != nil {
		if ep.extQP {
			ep.qp = nil // Abort releases it
		}
		ep.setup.Abort()
	}
	ep.Close()
}

// hasECE reports whether the QP's provider applies ECE at all.
func (ep *Endpoint) hasECE() bool { return ep.pd != nil && ep.pd.Context().HasECE() }

// offerECE is the ECE the REQ offers. The caller's QP sends the options'
// value as given (rdma_set_local_ece), else the QP's own. The endpoint's
// QP sends only what its provider applies: the options' value, given to
// the QP, or the QP's own, or none.
func (ep *Endpoint) offerECE() (ece.ECE, error) {
	want := ep.cfg.ece
	switch {
	case ep.extQP && want != nil:
		return *want, nil
	case ep.extQP:
		return ep.queryECE(), nil
	case want == nil:
		if !ep.hasECE() {
			return ece.ECE{}, nil
		}
		return ep.queryECE(), nil
	case !ep.hasECE():
		return ece.ECE{}, ep.noECE(*want)
	}
	if err := ep.qp.SetECE(*want); err != nil {
		return ece.ECE{}, err
	}
	return *want, nil
}

// noECE is the error of ECE asked for on a device that applies none.
func (ep *Endpoint) noECE(want ece.ECE) error {
	return fmt.Errorf("rdmacm: ECE %v asked for, but device %s (provider %s) applies no ECE; give the caller's QP (ConnSetup.QP) to send it anyway: %w",
		want, ep.pd.Context().Name(), ep.pd.Context().Provider(), ErrNotSupported)
}

// queryECE is the QP's own ECE (ibv_query_ece); none where the provider
// has no ECE.
func (ep *Endpoint) queryECE() ece.ECE {
	e, err := ep.qp.QueryECE()
	if err != nil {
		return ece.ECE{}
	}
	return e
}

// applyECE gives the QP the peer's ECE (ibv_set_ece) for its next modify;
// providers without ECE are fine.
func (ep *Endpoint) applyECE(e ece.ECE) error {
	if e.VendorID == 0 {
		return nil
	}
	if err := ep.qp.SetECE(e); err != nil && !errors.Is(err, ErrNotSupported) {
		return err
	}
	return nil
}

// modify moves the QP with the CM's attributes (rdma_init_qp_attr).
func (ep *Endpoint) modify(states ...qp.State) error {
	ep.qpMu.Lock()
	defer ep.qpMu.Unlock()
	for _, s := range states {
		attr, mask, err := ep.id.InitQPAttr(s)
		if err != nil {
			return err
		}
		if err := ep.qp.Modify(&attr, mask); err != nil {
			return err
		}
	}
	return nil
}

// toErr moves the QP to ERR, which flushes its work requests.
func (ep *Endpoint) toErr() {
	ep.qpMu.Lock()
	defer ep.qpMu.Unlock()
	if ep.qp == nil || ep.qp.State() == qp.Err || ep.qp.State() == qp.Reset {
		return
	}
	if ep.extQP && !ep.cfg.errQPOnClose {
		return // the caller's QP: its state is the caller's business
	}
	ep.qp.Modify(&qp.Attr{State: qp.Err}, qp.MaskState)
}

// start runs the watcher: the peer's disconnect (or a fatal event) ends
// the connection.
func (ep *Endpoint) start() {
	ep.watcherEnd = make(chan struct{})
	go func() {
		defer close(ep.watcherEnd)
		for {
			ev, err := ep.box.get(context.Background(), ep.closed)
			if err != nil {
				ep.end(ErrClosed)
				return
			}
			t, evErr := ev.Type, ev.Err()
			ev.Ack()
			switch t {
			case cm.EventDisconnected:
				ep.end(io.EOF)
				// The peer's DREQ: answer it (DREP) now, not at Close, or
				// the peer's Disconnect waits for its DREQ to time out.
				// After our own DREQ this is refused and harmless.
				ep.id.Disconnect(context.Background())
				ep.dreqOnce.Do(func() { close(ep.dreq) })
			case cm.EventDeviceRemoval, cm.EventConnectError, cm.EventUnreachable, cm.EventRejected:
				ep.end(wrapErr("", evErr))
			}
		}
	}()
}

// end marks the connection gone, then flushes the QP: in that order, so
// that a wait which finds a flushed completion already sees the cause
// (io.EOF), not a "work request flushed" error.
func (ep *Endpoint) end(cause error) {
	if ep.gone.Err() != nil {
		return
	}
	ep.setGone(cause)
	ep.toErr()
}

// Done is closed when the connection is gone: the peer disconnected,
// Disconnect or Close was called, or the device went away. It is safe to
// use beside Disconnect and Close.
func (ep *Endpoint) Done() <-chan struct{} { return ep.gone.Done() }

// Err returns why the connection is gone (io.EOF for a disconnect), nil
// while it is up.
func (ep *Endpoint) Err() error {
	if ep.gone.Err() == nil {
		return nil
	}
	return context.Cause(ep.gone)
}

// Disconnect sends the DREQ (rdma_disconnect), moves the QP to ERR and
// waits until the peer answers or ctx ends. Receive waits then return
// io.EOF.
func (ep *Endpoint) Disconnect(ctx context.Context) error {
	select {
	case <-ep.closed:
		return fmt.Errorf("rdmacm: disconnect: %w", ErrClosed)
	default:
	}
	ep.end(io.EOF)
	if err := ep.id.Disconnect(ctx); err != nil {
		select {
		case <-ep.dreq: // the peer's DREQ came first
			return nil
		default:
			return err
		}
	}
	select {
	case <-ep.dreq:
		return nil
	case <-ctx.Done():
		return ctxErr(ctx)
	}
}

// Close disconnects without waiting, moves the QP to ERR and destroys the
// QP, the CQs, the completion channel, the RecvSlots memory and the CM ID,
// in that order. A shared CQ (EndpointOptions.SendCQ, RecvCQ) and a
// shared receive queue (EndpointOptions.SRQ) are left to their own Close; the caller's QP (ConnSetup.QP) is never destroyed, and
// moved to ERR only with EndpointOptions.ErrorQPOnClose. It interrupts
// every blocked call of the endpoint. Memory registered with RegMsgs,
// RegRead and RegWrite stays valid until its own Close.
func (ep *Endpoint) Close() error {
	ep.closeOnce.Do(func() {
		if ep.watcherEnd != nil {
			select {
			case <-ep.dreq:
			default:
				ep.id.Disconnect(context.Background())
			}
		}
		ep.end(fmt.Errorf("rdmacm: %w", ErrClosed))
		ep.isClosed.Store(true)
		close(ep.closed)
		if ep.watcherEnd != nil {
			<-ep.watcherEnd
		}
		ep.p.awaitRead() // its flushed work requests end it: before the QP goes
		var errs []error
		if ep.qp != nil && !ep.extQP {
			errs = append(errs, ep.qp.Close())
		}
		if ep.sharedS == nil && ep.scq != nil {
			errs = append(errs, ep.scq.Close())
		}
		if ep.sharedR == nil && ep.rcq != nil {
			errs = append(errs, ep.rcq.Close())
		}
		for _, cq := range []*CQ{ep.sharedS, ep.sharedR} {
			if cq != nil {
				cq.unbind()
			}
		}
		if ep.srq != nil {
			ep.srq.unbind() // after the QP that receives from it
		}
		if ep.comp != nil {
			errs = append(errs, ep.comp.Close())
		}
		if ep.recvMR != nil {
			errs = append(errs, ep.recvMR.Close())
		}
		ep.c.unregister(ep.id)
		errs = append(errs, ep.id.Destroy())
		ep.c.release()
		ep.closeErr = errors.Join(errs...)
	})
	return ep.closeErr
}

// LocalAddr and RemoteAddr are the connection's IP addresses.
func (ep *Endpoint) LocalAddr() netip.AddrPort  { return ep.id.LocalAddr() }
func (ep *Endpoint) RemoteAddr() netip.AddrPort { return ep.id.RemoteAddr() }

// PrivateData is the private data of the peer's REQ (accepted endpoints)
// or REP (dialed ones), zero-padded to the whole CM field: the CM does
// not carry its length.
func (ep *Endpoint) PrivateData() []byte { return ep.peerData }

// LocalECE is the ECE this side sent in its REQ or REP; RemoteECE the one
// the peer's carried (zero for none). With the endpoint's own QP, LocalECE
// is a value the device was given (ibv_set_ece) or reported
// (ibv_query_ece), never one it cannot apply: zero on a device without
// ECE.
func (ep *Endpoint) LocalECE() ece.ECE  { return ep.local }
func (ep *Endpoint) RemoteECE() ece.ECE { return ep.remote }

// QPNum is the number of the endpoint's QP: WC.QPNum of its completions.
func (ep *Endpoint) QPNum() uint32 { return ep.qp.Num() }

// RecvMR is the memory of the EndpointOptions.RecvSlots receives (nil
// without them, or with RecvSlotSize 0). The endpoint owns it.
func (ep *Endpoint) RecvMR() *MR { return ep.recvMR }

// PD is the protection domain of the endpoint's device (nil before the
// device is known), an escape hatch into package uverbs like QP.
func (ep *Endpoint) PD() *uverbs.PD { return ep.pd }

// QP is the endpoint's verbs QP, for work requests beyond the Post calls:
// an escape hatch into package uverbs, which is experimental. The endpoint
// owns it unless it is the caller's (ConnSetup.QP).
func (ep *Endpoint) QP() *uverbs.QP { return ep.qp }

// ID is the endpoint's CM ID, an escape hatch into package cm. The
// endpoint owns it and reads its events.
func (ep *Endpoint) ID() *cm.ID { return ep.id }
