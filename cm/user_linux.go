//go:build linux

package cm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/umad"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// user is the backend over our own CM engine (cm/engine): it builds and
// parses the CM MADs itself, receives them through /dev/infiniband/umadN
// and sends them from a UD QP of its own (umad.UDSend) or through umad,
// one engine per RoCE port whose CM class it could register. It does the
// rdma_cm's work above ib_cm in user space: address and route resolution
// from sysfs and the routing table, service IDs and the IP private-data
// header (in the engine), and the mapping of ib_cm events to rdma_cm
// events (cma_ib_handler, cma_ib_req_handler).
//
// UD IDs of RDMA_PS_UDP run over the engine's SIDR (user_ud_linux.go).
// Not supported (EOPNOTSUPP): AF_IB addresses and InfiniBand (non-RoCE)
// ports. The engine addresses InfiniBand peers by LID, but IPoIB built
// with connected mode (Debian's) depends on ib_cm, which must be absent
// for the engine to own the CM class, so such a port would need AF_IB
// addressing (docs/architecture.md). Multicast
// joins RoCE groups without the SA (user_mcast_linux.go).
//
// Its parts: the ports, their transports and engine runners
// (user_port_linux.go), the ID table and port binding (user_ids_linux.go),
// resolution (user_resolve_linux.go), the event mapping
// (user_events_linux.go) and the MAD trace (user_trace_linux.go).
type user struct {
	ports []*userPort

	mu       sync.Mutex // innermost lock: taken inside engine calls and OnEvent
	ids      map[uint32]*userID
	next     uint32
	bound    map[uint16][]uint32 // port → handles bound to it
	queue    []rawEvent
	wake     chan struct{}
	done     chan struct{}
	isClosed bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	tracer   *tracer
	// maxHalfOpen is Options.MaxHalfOpen, for each port's engine.
	maxHalfOpen int
	mcasts      map[uint32]*userMcast // joined groups (user_mcast_linux.go)
}

// openUser opens every RoCE port's umad device and registers the CM class
// on it. It fails when no port could be registered: with umad.ErrKernelCM
// when the kernel's ib_cm owns the class.
func openUser(o *Options) (*user, error) {
	trace := o.Trace
	disc := uverbs.DefaultDiscovery
	disc.SkipGIDs = true // from the device below, not 3 sysfs files per slot
	devs, err := disc.Devices()
	if err != nil {
		return nil, errnoError("open the user backend", err)
	}
	u := &user{ids: map[uint32]*userID{}, bound: map[uint16][]uint32{},
		wake: make(chan struct{}, 1), done: make(chan struct{}), maxHalfOpen: o.MaxHalfOpen}
	var errs []error
	for _, dev := range devs {
		ackDelay := -1 // asked once per device, when it has a port to open
		for i, p := range dev.Ports {
			if p.LinkLayer != uverbs.LinkEthernet || i >= len(dev.UMAD) || !dev.UMAD[i].Present {
				continue
			}
			if ackDelay < 0 {
				var d uint8
				d, dev = deviceFacts(dev)
				ackDelay = int(d)
				p = dev.Ports[i]
			}
			up, err := u.openPort(dev, p, dev.UMAD[i].Path, !o.UMADSends, uint8(ackDelay))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			u.ports = append(u.ports, up)
		}
	}
	if len(u.ports) == 0 {
		if len(errs) == 0 {
			return nil, fmt.Errorf("cm: open the user backend: no RoCE port with a umad device (is ib_umad loaded?): %w", ErrNoDevice)
		}
		return nil, errnoError("open the user backend", errors.Join(errs...))
	}
	if trace != nil {
		t, err := newTracer(trace)
		if err != nil {
			u.closePorts()
			return nil, err
		}
		u.tracer = t
		for _, p := range u.ports {
			p.d.Wrap(func(tr umad.Transport) umad.Transport { return &tracedTransport{tr, t, p} })
		}
	}
	u.runPorts()
	return u, nil
}

func (u *user) name() Backend { return BackendUser }

func (u *user) close() error {
	u.mu.Lock()
	if u.isClosed {
		u.mu.Unlock()
		return nil
	}
	u.isClosed = true
	close(u.done)
	u.leaveAllLocked(0)
	u.mu.Unlock()
	err := u.closePorts()
	u.cancel()
	u.wg.Wait()
	if u.tracer != nil {
		err = errors.Join(err, u.tracer.err)
	}
	return err
}

func (u *user) listen(h uint32, backlog int) error {
	u.mu.Lock()
	x, err := u.get(h)
	if err != nil {
		u.mu.Unlock()
		return err
	}
	if len(x.listens) > 0 {
		u.mu.Unlock()
		return unix.EINVAL
	}
	if !x.src.IsValid() {
		if err := u.bindLocked(h, x, netip.AddrPortFrom(netip.IPv4Unspecified(), 0)); err != nil {
			u.mu.Unlock()
			return err
		}
	}
	ports := u.ports
	if x.port != nil {
		ports = []*userPort{x.port}
	}
	lp := engine.ListenParams{Context: uint64(h), PortSpace: x.ps, Port: x.src.Port(),
		Addr: x.src.Addr(), AFOnly: x.afOnly, QPType: x.qpType, Backlog: backlog}
	u.mu.Unlock()
	var listens []userListen
	for _, p := range ports {
		var lid engine.ID
		err := p.d.Do(func(e *engine.Engine, now time.Time) error {
			var err error
			lid, err = e.Listen(now, lp)
			return err
		})
		if err != nil {
			for _, l := range listens {
				_ = l.p.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, l.eid) })
			}
			return err
		}
		listens = append(listens, userListen{p, lid})
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, err := u.get(h); err != nil {
		return err
	}
	x.listens = listens
	for _, l := range listens {
		l.p.byEngine[l.eid] = h
	}
	return nil
}

func (u *user) connect(h uint32, p *ConnParam, e ece.ECE) error {
	if err := checkPrivateData(p); err != nil {
		return err
	}
	u.mu.Lock()
	x, err := u.get(h)
	if err != nil {
		u.mu.Unlock()
		return err
	}
	if !x.routed || x.hasConn {
		u.mu.Unlock()
		return unix.EINVAL
	}
	if x.qpType == qp.UD {
		return u.connectUD(h, x, p) // unlocks
	}
	port := x.port
	cp := engine.ConnectParams{Context: uint64(h), PortSpace: x.ps, Src: x.src, Dst: x.dst,
		Path: x.path, QPType: x.qpType}
	putEngineConnect(&cp, p, e)
	u.mu.Unlock()
	return port.d.Do(func(eng *engine.Engine, now time.Time) error {
		id, err := eng.Connect(now, cp)
		if err != nil {
			return err
		}
		// Recorded before the driver can deliver an event of the ID.
		u.mu.Lock()
		x.eid, x.hasConn = id, true
		port.byEngine[id] = h
		u.mu.Unlock()
		return nil
	})
}

// putEngineConnect copies the connection parameters (defaults already
// applied by Connect, see defaultConnParam) into the engine's.
func putEngineConnect(cp *engine.ConnectParams, p *ConnParam, e ece.ECE) {
	cp.QPN, cp.ResponderResources, cp.InitiatorDepth = p.QPNum, p.ResponderResources, p.InitiatorDepth
	cp.RetryCount, cp.RNRRetryCount = p.RetryCount, p.RNRRetryCount
	cp.FlowControl, cp.SRQ, cp.PrivateData, cp.ECE = p.FlowControl, p.SRQ, p.PrivateData, e
}

// engineAccept is the engine's Accept parameters of p (defaults already
// applied by Accept).
func engineAccept(p *ConnParam, e ece.ECE) engine.AcceptParams {
	return engine.AcceptParams{QPN: p.QPNum, ResponderResources: p.ResponderResources,
		InitiatorDepth: p.InitiatorDepth, RNRRetryCount: p.RNRRetryCount, FlowControl: p.FlowControl,
		SRQ: p.SRQ, PrivateData: p.PrivateData, ECE: e}
}

// conn returns the port and engine ID of h's connection.
func (u *user) conn(h uint32) (*userPort, engine.ID, *userID, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return nil, 0, nil, err
	}
	if !x.hasConn {
		return nil, 0, nil, unix.EINVAL
	}
	return x.port, x.eid, x, nil
}

func (u *user) accept(h uint32, uid uint64, p *ConnParam, e ece.ECE) error {
	port, eid, x, err := u.conn(h)
	if err != nil {
		return err
	}
	if x.qpType == qp.UD {
		if p == nil {
			return unix.EINVAL // SIDR has no RTU
		}
		return u.acceptUD(port, eid, x, uid, p)
	}
	if p == nil { // the active side's RTU (rdma_establish, cma_rep_recv)
		return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.Establish(now, eid, nil) })
	}
	if len(p.PrivateData) > mad.REPPrivateDataSize {
		return unix.EINVAL
	}
	u.mu.Lock()
	x.uid = uid
	u.mu.Unlock()
	ap := engineAccept(p, e)
	return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.Accept(now, eid, ap) })
}

func (u *user) reject(h uint32, pd []byte, reason uint8) error {
	port, eid, x, err := u.conn(h)
	if err != nil {
		return err
	}
	if x.qpType == qp.UD {
		return rejectUD(port, eid, pd)
	}
	return port.d.Do(func(eng *engine.Engine, now time.Time) error {
		return eng.Reject(now, eid, mad.RejectReason(reason), nil, pd)
	})
}

// disconnect is rdma_disconnect: a DREQ, or the DREP when the peer's DREQ
// came first (the engine picks, as ib_send_cm_dreq failing over to
// ib_send_cm_drep does).
func (u *user) disconnect(h uint32) error {
	port, eid, _, err := u.conn(h)
	if err != nil {
		return err
	}
	return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.Disconnect(now, eid, nil) })
}

func (u *user) initQPAttr(h uint32, s qp.State) (qp.Attr, qp.Mask, error) {
	u.mu.Lock()
	x, err := u.get(h)
	if err != nil {
		u.mu.Unlock()
		return qp.Attr{}, 0, err
	}
	port, eid, hasConn, ack, ackSet := x.port, x.eid, x.hasConn, x.ackTimeout, x.ackTimeoutSet
	var params qp.CMParams
	if port != nil {
		params = qp.CMParams{Port: uint8(port.port.Num)}
	}
	t := x.qpType
	u.mu.Unlock()
	if port == nil {
		return qp.Attr{}, 0, unix.EINVAL
	}
	if t == qp.UD {
		return initQPAttrUD(params.Port, s)
	}
	var a qp.Attr
	var m qp.Mask
	if !hasConn {
		// Before the CM has a connection only INIT is known
		// (cma_ib_init_qp_attr).
		if s != qp.Init {
			return qp.Attr{}, 0, unix.EINVAL
		}
		a, m, err = qp.InitAttrBeforeCM(params, t)
	} else {
		err = port.d.Do(func(eng *engine.Engine, _ time.Time) error {
			var err error
			a, m, err = eng.InitQPAttr(eid, s)
			return err
		})
	}
	if err == nil && ackSet && m&qp.MaskTimeout != 0 {
		a.Timeout = ack // RDMA_OPTION_ID_ACK_TIMEOUT (rdma_init_qp_attr)
	}
	return a, m, err
}

func (u *user) setOption(h uint32, level, name uint32, val []byte) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return err
	}
	if level != optLevelID {
		return unix.ENOSYS
	}
	switch name {
	case optTOS:
		if len(val) != 1 {
			return unix.EINVAL
		}
		x.tos, x.tosSet = val[0], true
	case optAckTimeout:
		if len(val) != 1 || val[0] > 31 {
			return unix.EINVAL
		}
		x.ackTimeout, x.ackTimeoutSet = val[0], true
	case optReuseAddr:
		if len(val) != 4 {
			return unix.EINVAL
		}
		if x.src.IsValid() {
			return unix.EINVAL // cma: only before bind
		}
		x.reuse = val[0]|val[1]|val[2]|val[3] != 0
	case optAFOnly:
		if len(val) != 4 {
			return unix.EINVAL
		}
		x.afOnly = val[0]|val[1]|val[2]|val[3] != 0
	default:
		return unix.ENOSYS
	}
	return nil
}

// notify is rdma_notify on a RoCE port: ib_cm_notify (notifyEngine).
func (u *user) notify(h uint32, event uint32) error {
	port, eid, _, err := u.conn(h)
	if err != nil {
		return err
	}
	return port.d.Do(func(eng *engine.Engine, now time.Time) error {
		return notifyEngine(eng, now, eid, uverbs.AsyncEventType(event))
	})
}

// notifyEngine is ib_cm_notify, which takes what the kernel backend's
// rdma_notify passes on for an IB or RoCE device: IB_EVENT_COMM_EST
// establishes a connection whose RTU was lost but whose QP saw traffic
// (cm_establish), IB_EVENT_PATH_MIG reports that the QP moved to its
// alternate path (cm_migrate: accepted when established, and there is no
// alternate path on RoCE to switch to). Any other event is EINVAL, as
// there, with the event named.
func notifyEngine(eng *engine.Engine, now time.Time, id engine.ID, event uverbs.AsyncEventType) error {
	switch event {
	case uverbs.EventCommEst:
		return eng.Notify(now, id)
	case uverbs.EventPathMig:
		return eng.Migrate(now, id)
	}
	return fmt.Errorf("event %d: rdma_notify takes only COMM_EST (%d) and PATH_MIG (%d): %w",
		uint32(event), uint32(uverbs.EventCommEst), uint32(uverbs.EventPathMig), unix.EINVAL)
}

// haveUserBackend: openAuto may try the user backend.
const haveUserBackend = true

func openUserBackend(o *Options) (backend, error) {
	u, err := openUser(o)
	if err != nil {
		return nil, err
	}
	return u, nil
}
