//go:build linux

package cm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/cm/umad"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// user is the backend over our own CM engine (cm/engine): it builds and
// parses the CM MADs itself and sends them through /dev/infiniband/umadN,
// one engine per RoCE port whose CM class it could register. It does the
// rdma_cm's work above ib_cm in user space: address and route resolution
// from sysfs and the routing table, service IDs and the IP private-data
// header (in the engine), and the mapping of ib_cm events to rdma_cm
// events (cma_ib_handler, cma_ib_req_handler).
//
// Not supported (EOPNOTSUPP): UD IDs (SIDR; the engine has SIDR, the
// backend does not wire it yet), multicast, AF_IB addresses, IPv6 and
// InfiniBand (non-RoCE) ports, which need an SA path query.
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
}

// userPort is one RDMA port with a registered CM agent and its engine.
type userPort struct {
	dev      uverbs.Device
	port     uverbs.Port
	guid     rdma.GUID
	d        *umad.Driver
	ud       *umad.UDSend         // nil: MADs are sent through umad
	udErr    error                // why there is no UD send path
	byEngine map[engine.ID]uint32 // guarded by user.mu
}

// userID is the backend's view of one rdma_cm ID.
type userID struct {
	uid    uint64
	ps     rdma.PortSpace
	qpType qp.QPType

	src, dst netip.AddrPort
	port     *userPort // nil until bound to an address or resolved
	gid      uverbs.GIDEntry
	path     engine.Path
	routed   bool

	eid     engine.ID // the connection, once Connect or a REQ made one
	hasConn bool
	listens []userListen

	tos                  uint8
	tosSet               bool
	ackTimeout           uint8
	ackTimeoutSet, reuse bool
	disconnected         bool // DISCONNECTED was reported (cma_comp_exch CONNECT → DISCONNECT)
}

type userListen struct {
	p   *userPort
	eid engine.ID
}

// openUser opens every RoCE port's umad device and registers the CM class
// on it. It fails when no port could be registered: with umad.ErrKernelCM
// when the kernel's ib_cm owns the class.
func openUser(o *Options) (*user, error) {
	trace := o.Trace
	devs, err := uverbs.Devices()
	if err != nil {
		return nil, fmt.Errorf("cm: user backend: %w", err)
	}
	u := &user{ids: map[uint32]*userID{}, bound: map[uint16][]uint32{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	var errs []error
	for _, dev := range devs {
		for i, p := range dev.Ports {
			if p.LinkLayer != uverbs.LinkEthernet || i >= len(dev.UMAD) || !dev.UMAD[i].Present {
				continue
			}
			up, err := u.openPort(dev, p, dev.UMAD[i].Path, !o.UMADSends)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			u.ports = append(u.ports, up)
		}
	}
	if len(u.ports) == 0 {
		if len(errs) == 0 {
			return nil, fmt.Errorf("cm: user backend: no RoCE port with a umad device (is ib_umad loaded?): %w", ErrNoDevice)
		}
		return nil, fmt.Errorf("cm: user backend: %w", errors.Join(errs...))
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
	ctx, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	for _, up := range u.ports {
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			_ = up.d.Run(ctx)
		}()
	}
	return u, nil
}

func (u *user) openPort(dev uverbs.Device, p uverbs.Port, umadPath string, udSends bool) (*userPort, error) {
	port, err := umad.Open(umadPath)
	if err != nil {
		return nil, err
	}
	var t umad.Transport = port
	up := &userPort{dev: dev, port: p, guid: dev.NodeGUID, byEngine: map[engine.ID]uint32{}}
	if udSends {
		if up.ud, up.udErr = umad.NewUDSend(port, dev, uint8(p.Num)); up.udErr == nil {
			t = up.ud
		}
	}
	var gids []rdma.GID
	for _, g := range p.GIDs {
		if g.Type == uverbs.GIDTypeRoCEv2 {
			gids = append(gids, g.GID)
		}
	}
	e, err := engine.New(engine.Config{
		// umad puts its agent's hi_tid in the TIDs' upper half; from the
		// UD QP they leave as the engine makes them, so make them differ
		// between instances as hi_tid does.
		CAGUID: beUint64(up.guid), Source: umad.NewRandomSource(rand.Uint32()),
		ACKDelay:  15, // rxe's local_ca_ack_delay; the REP's target ACK delay
		LocalGIDs: gids,
	})
	if err != nil {
		t.Close()
		return nil, err
	}
	up.d = umad.NewDriver(e, t)
	up.d.OnEvent = func(ev engine.Event) { u.onEngineEvent(up, &ev) }
	return up, nil
}

func beUint64(b rdma.GUID) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
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
	u.mu.Unlock()
	err := u.closePorts()
	u.cancel()
	u.wg.Wait()
	if u.tracer != nil {
		err = errors.Join(err, u.tracer.err)
	}
	return err
}

func (u *user) closePorts() error {
	var errs []error
	for _, p := range u.ports {
		errs = append(errs, p.d.Close())
	}
	return errors.Join(errs...)
}

// get returns the ID of handle h; u.mu must be held.
func (u *user) get(h uint32) (*userID, error) {
	if u.isClosed {
		return nil, unix.EBADF
	}
	x := u.ids[h]
	if x == nil {
		return nil, unix.ENOENT
	}
	return x, nil
}

func (u *user) createID(uid uint64, ps rdma.PortSpace, t qp.QPType) (uint32, error) {
	if t == qp.UD || ps == rdma.PortSpaceIB {
		return 0, unix.EOPNOTSUPP
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.isClosed {
		return 0, unix.EBADF
	}
	return u.add(&userID{uid: uid, ps: ps, qpType: t}), nil
}

func (u *user) add(x *userID) uint32 {
	for {
		u.next++
		if u.next != 0 && u.ids[u.next] == nil {
			u.ids[u.next] = x
			return u.next
		}
	}
}

func (u *user) destroyID(h uint32) (uint32, error) {
	u.mu.Lock()
	x, err := u.get(h)
	if err != nil {
		u.mu.Unlock()
		return 0, err
	}
	delete(u.ids, h)
	u.unbindLocked(h, x)
	listens, conn, hasConn, p := x.listens, x.eid, x.hasConn, x.port
	for _, l := range listens {
		delete(l.p.byEngine, l.eid)
	}
	if hasConn {
		delete(p.byEngine, conn)
	}
	u.mu.Unlock()
	// The engine answers for the ID as ib_destroy_cm_id does: a REJ, a
	// DREQ or the pending DREP (cm_destroy_id).
	var errs []error
	for _, l := range listens {
		errs = append(errs, l.p.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, l.eid) }))
	}
	if hasConn {
		errs = append(errs, p.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, conn) }))
	}
	return 0, errors.Join(errs...)
}

func (u *user) unbindLocked(h uint32, x *userID) {
	if !x.src.IsValid() {
		return
	}
	hs := u.bound[x.src.Port()]
	for i, b := range hs {
		if b == h {
			hs = append(hs[:i], hs[i+1:]...)
			break
		}
	}
	if len(hs) == 0 {
		delete(u.bound, x.src.Port())
	} else {
		u.bound[x.src.Port()] = hs
	}
}

// portOf finds the RoCE v2 GID of a local IPv4 address.
func (u *user) portOf(a netip.Addr) (*userPort, uverbs.GIDEntry, bool) {
	want := rdma.GIDFromAddr(a)
	for _, p := range u.ports {
		for _, g := range p.port.GIDs {
			if g.Type == uverbs.GIDTypeRoCEv2 && g.GID == want {
				return p, g, true
			}
		}
	}
	return nil, uverbs.GIDEntry{}, false
}

// bindLocked binds x to addr, choosing an ephemeral port for port 0, as
// cma_get_port does (EADDRINUSE for a port in use without REUSEADDR).
func (u *user) bindLocked(h uint32, x *userID, addr netip.AddrPort) error {
	if x.src.IsValid() {
		return unix.EINVAL
	}
	a := addr.Addr().Unmap()
	if !a.Is4() {
		return unix.EAFNOSUPPORT // IPv6 and AF_IB are not wired
	}
	if !a.IsUnspecified() {
		p, g, ok := u.portOf(a)
		if !ok {
			return unix.ENODEV // cma_acquire_dev_by_src_ip: no RDMA port has the address
		}
		x.port, x.gid = p, g
	}
	port := addr.Port()
	if port == 0 {
		var ok bool
		if port, ok = u.ephemeral(); !ok {
			return unix.EADDRNOTAVAIL
		}
	} else if !x.reuse {
		for _, o := range u.bound[port] {
			if oa := u.ids[o].src.Addr(); oa.IsUnspecified() || a.IsUnspecified() || oa == a {
				return unix.EADDRINUSE
			}
		}
	}
	x.src = netip.AddrPortFrom(a, port)
	u.bound[port] = append(u.bound[port], h)
	return nil
}

// ephemeral picks a free port from Linux's default ip_local_port_range.
func (u *user) ephemeral() (uint16, bool) {
	const lo, hi = 32768, 60999
	start := lo + rand.IntN(hi-lo+1)
	for i := range hi - lo + 1 {
		p := uint16(lo + (start-lo+i)%(hi-lo+1))
		if len(u.bound[p]) == 0 {
			return p, true
		}
	}
	return 0, false
}

func (u *user) bind(h uint32, addr netip.AddrPort) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return err
	}
	return u.bindLocked(h, x, addr)
}

// sourceFor asks the routing table which local address reaches dst: a
// connected UDP socket sends nothing and reports the route's source.
func sourceFor(dst netip.Addr) (netip.Addr, error) {
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, 4791)))
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

func (u *user) resolveAddr(h uint32, src, dst netip.AddrPort, _ time.Duration) error {
	dstA := dst.Addr().Unmap()
	if !dstA.Is4() || (src.IsValid() && !src.Addr().Unmap().Is4()) {
		return unix.EAFNOSUPPORT
	}
	// The route lookup may block briefly; do it outside the lock.
	routeSrc, routeErr := sourceFor(dstA)
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return err
	}
	if src.IsValid() && !x.src.IsValid() {
		if err := u.bindLocked(h, x, src); err != nil {
			return err
		}
	}
	status := int32(0)
	switch {
	case routeErr != nil:
		status = -int32(unix.ENETUNREACH)
	case x.port == nil:
		if x.src.IsValid() && !x.src.Addr().IsUnspecified() && x.src.Addr() != routeSrc {
			status = -int32(unix.EHOSTUNREACH)
			break
		}
		p, g, ok := u.portOf(routeSrc)
		if !ok {
			status = -int32(unix.ENODEV) // the route's device has no RDMA port
			break
		}
		x.port, x.gid = p, g
		if !x.src.IsValid() {
			if err := u.bindLocked(h, x, netip.AddrPortFrom(routeSrc, 0)); err != nil {
				return err
			}
		} else if x.src.Addr().IsUnspecified() {
			x.src = netip.AddrPortFrom(routeSrc, x.src.Port())
		}
	}
	if status == 0 {
		x.dst = netip.AddrPortFrom(dstA, dst.Port())
		u.queueLocked(rawEvent{uid: x.uid, handle: h, typ: EventAddrResolved})
	} else {
		u.queueLocked(rawEvent{uid: x.uid, handle: h, typ: EventAddrError, status: status})
	}
	return nil
}

// rocePacketLifeTime is the rdma_cm's packet lifetime on RoCE paths
// (CMA_IBOE_PACKET_LIFETIME, 18 in Linux 6.1).
const rocePacketLifeTime = 18

func (u *user) resolveRoute(h uint32, _ time.Duration) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return err
	}
	if x.port == nil || !x.dst.IsValid() {
		return unix.EINVAL
	}
	// cma_resolve_iboe_route: the port's MTU, the current rate, hop
	// limit 64 for a routed IPv4 peer, the ID's TOS as traffic class.
	x.path = engine.Path{
		PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: x.gid.GID, DGID: rdma.GIDFromAddr(x.dst.Addr()),
			HopLimit: 64, TrafficClass: x.tos, MTU: x.port.port.ActiveMTU, PacketLifeTime: rocePacketLifeTime},
		Port: uint8(x.port.port.Num), SGIDIndex: uint8(x.gid.Index), RoCE: true,
	}
	if x.path.MTU == 0 {
		x.path.MTU = rdma.MTU1024
	}
	x.routed = true
	u.queueLocked(rawEvent{uid: x.uid, handle: h, typ: EventRouteResolved})
	return nil
}

func (u *user) queryAddr(h uint32) (AddrInfo, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return AddrInfo{}, err
	}
	ai := AddrInfo{Src: x.src, Dst: x.dst, PKey: 0xffff}
	if x.port != nil {
		ai.NodeGUID, ai.HasDevice, ai.Port = x.port.guid, true, uint8(x.port.port.Num)
	}
	return ai, nil
}

func (u *user) queryPath(h uint32) ([]rdma.PathRecord, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return nil, err
	}
	if !x.routed {
		return nil, nil
	}
	pr := x.path.PathRecord
	pr.Reversible = true
	pr.FlowLabel = engine.RoCEFlowLabel(x.src.Port(), x.dst.Port())
	return []rdma.PathRecord{pr}, nil
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
		Addr: x.src.Addr(), QPType: x.qpType, Backlog: backlog}
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
	port := x.port
	cp := engine.ConnectParams{Context: uint64(h), PortSpace: x.ps, Src: x.src, Dst: x.dst,
		Path: x.path, QPType: x.qpType, QPN: p.QPNum, ResponderResources: p.ResponderResources,
		InitiatorDepth: p.InitiatorDepth, RetryCount: p.RetryCount, RNRRetryCount: p.RNRRetryCount,
		FlowControl: p.FlowControl, SRQ: p.SRQ, PrivateData: p.PrivateData, ECE: e}
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
	if p == nil { // the active side's RTU (rdma_establish, cma_rep_recv)
		return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.Establish(now, eid, nil) })
	}
	if len(p.PrivateData) > mad.REPPrivateDataSize {
		return unix.EINVAL
	}
	u.mu.Lock()
	x.uid = uid
	u.mu.Unlock()
	ap := engine.AcceptParams{QPN: p.QPNum, ResponderResources: p.ResponderResources,
		InitiatorDepth: p.InitiatorDepth, RNRRetryCount: p.RNRRetryCount, FlowControl: p.FlowControl,
		SRQ: p.SRQ, PrivateData: p.PrivateData, ECE: e}
	return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.Accept(now, eid, ap) })
}

func (u *user) reject(h uint32, pd []byte, reason uint8) error {
	port, eid, _, err := u.conn(h)
	if err != nil {
		return err
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
	default:
		return unix.ENOSYS
	}
	return nil
}

// notify is rdma_notify: IB_EVENT_COMM_EST (4) establishes a connection
// whose RTU was lost but whose QP saw traffic (ib_cm_notify).
func (u *user) notify(h uint32, event uint32) error {
	port, eid, _, err := u.conn(h)
	if err != nil {
		return err
	}
	if event != uint32(uverbs.EventCommEst) {
		return unix.EINVAL
	}
	return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.Notify(now, eid) })
}

func (u *user) join(uint32, uint64, netip.Addr, bool) (uint32, error) { return 0, unix.EOPNOTSUPP }
func (u *user) leave(uint32) (uint32, error)                          { return 0, unix.EOPNOTSUPP }

func (u *user) queueLocked(ev rawEvent) {
	u.queue = append(u.queue, ev)
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

func (u *user) readEvents(ctx context.Context, fn func(*rawEvent)) error {
	for {
		u.mu.Lock()
		if len(u.queue) > 0 {
			evs := u.queue
			u.queue = nil
			u.mu.Unlock()
			for i := range evs {
				fn(&evs[i])
			}
			return nil
		}
		closed := u.isClosed
		u.mu.Unlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-u.wake:
		case <-u.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

const etimedout = -int32(unix.ETIMEDOUT)

// onEngineEvent turns an engine (ib_cm) event into an rdma_cm event as
// cma_ib_handler and cma_ib_req_handler do.
func (u *user) onEngineEvent(p *userPort, ev *engine.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.isClosed {
		return
	}
	if ev.Type == engine.EventConnectRequest {
		u.requestLocked(p, ev)
		return
	}
	h, ok := p.byEngine[ev.ID]
	x := u.ids[h]
	if !ok || x == nil || x.uid == 0 {
		return // destroyed, or a passive ID not accepted yet
	}
	r := rawEvent{uid: x.uid, handle: h, conn: connFromEngine(ev)}
	switch ev.Type {
	case engine.EventConnectReply:
		r.typ, r.ece = EventConnectResponse, ev.ECE
	case engine.EventEstablished:
		r.typ = EventEstablished
	case engine.EventRejected:
		r.typ, r.status = EventRejected, int32(ev.Reason)
	case engine.EventReqError, engine.EventRepError:
		r.typ, r.status = EventUnreachable, etimedout
	case engine.EventDreqError:
		r.status = etimedout
		fallthrough
	case engine.EventDisconnectRequest, engine.EventDisconnectReply:
		if x.disconnected {
			return
		}
		x.disconnected = true
		r.typ = EventDisconnected
	case engine.EventTimewaitExit:
		r.typ = EventTimewaitExit
	default:
		return // SIDR: no UD IDs on this backend
	}
	u.queueLocked(r)
}

// requestLocked is cma_ib_req_handler: a new ID for the listener's
// request, reported to the listener's uid.
func (u *user) requestLocked(p *userPort, ev *engine.Event) {
	lh, ok := p.byEngine[ev.Listener]
	l := u.ids[lh]
	if !ok || l == nil {
		_ = ev // the listener is being destroyed; the engine's ID is released with it
		return
	}
	x := &userID{ps: l.ps, qpType: l.qpType, port: p, eid: ev.ID, hasConn: true,
		src: ev.Conn.Dst, dst: ev.Conn.Src, path: ev.Conn.Path, routed: true, tos: l.tos}
	if gid, ok := p.gidOf(ev.Conn.Path.SGID); ok {
		x.gid = gid
	}
	h := u.add(x)
	p.byEngine[ev.ID] = h
	u.queueLocked(rawEvent{uid: l.uid, handle: h, typ: EventConnectRequest, conn: connFromEngine(ev), ece: ev.ECE})
}

func (p *userPort) gidOf(g rdma.GID) (uverbs.GIDEntry, bool) {
	for _, e := range p.port.GIDs {
		if e.GID == g {
			return e, true
		}
	}
	return uverbs.GIDEntry{}, false
}

// connFromEngine fills rdma_conn_param as cma_set_req_event_data and
// cma_set_rep_event_data do (the engine already swapped the resources to
// this side's view).
func connFromEngine(ev *engine.Event) ConnParam {
	return ConnParam{
		PrivateData:        append([]byte(nil), ev.PrivateData...),
		ResponderResources: ev.Conn.ResponderResources,
		InitiatorDepth:     ev.Conn.InitiatorDepth,
		FlowControl:        ev.Conn.FlowControl,
		RetryCount:         ev.Conn.RetryCount,
		RNRRetryCount:      ev.Conn.RNRRetryCount,
		SRQ:                ev.Conn.SRQ,
		QPNum:              ev.Conn.RemoteQPN,
	}
}

// openAuto picks the backend for BackendAuto. Where rdma_ucm is loaded
// (/dev/infiniband/rdma_cm exists), ib_cm is loaded too and owns the CM
// class on every port, so the kernel backend is the only choice; elsewhere
// the user-space engine is tried first and the kernel backend second.
func openAuto(o *Options) (backend, error) {
	if _, err := os.Stat(abi.UcmaDevicePath); err == nil {
		return openKernelBackend(o)
	}
	u, uerr := openUser(o)
	if uerr == nil {
		return u, nil
	}
	k, kerr := openKernelBackend(o)
	if kerr == nil {
		return k, nil
	}
	return nil, fmt.Errorf("cm: no backend: user: %w; kernel: %w", uerr, kerr)
}

func openUserBackend(o *Options) (backend, error) {
	u, err := openUser(o)
	if err != nil {
		return nil, err
	}
	return u, nil
}

func openKernelBackend(o *Options) (backend, error) {
	if o.Trace != nil {
		return nil, errKernelTrace
	}
	k, err := openKernel()
	if err != nil {
		return nil, err
	}
	return k, nil
}
