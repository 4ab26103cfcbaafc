package rdmacm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// DatagramEndpoint is one UD queue pair with its CM ID: it sends
// messages of up to MaxMessage bytes to any *Peer and receives from any.
// DialDatagram makes one that knows its server (Peer); ListenDatagram
// one that answers SIDR requests with its QP's number and Q_Key (as the
// rdma_cm's RDMA_PS_UDP: cm.UDPQKey). Delivery is unreliable and
// unordered, as UD is. Its methods are safe for concurrent use; Close
// interrupts them.
type DatagramEndpoint struct {
	c      *channel
	box    *mailbox
	id     *cm.ID // the active ID (Dial) or the listening ID (Listen)
	cfg    dgConfig
	closed chan struct{}
	gone   context.Context // ends at Close
	cancel context.CancelFunc
	served chan struct{} // the listener's request loop ended

	// The QP and its resources, made once (ready closed after): when
	// dialing before the SIDR request, when listening on the first
	// request's device.
	qpOnce sync.Mutex
	ready  chan struct{}
	x      *uverbs.Context
	pd     *uverbs.PD
	comp   *uverbs.CompChannel
	scq    *uverbs.CQ
	rcq    *uverbs.CQ
	qp     *uverbs.QP
	port   uint8
	mtu    int
	gids   []uverbs.GIDEntry // the port's, for the reply address of a GRH
	slot   int               // receive slot size: GRHSize + MaxMessage
	recvMR *MR               // MaxRecvWR receive slots
	sendMR *MR               // MaxSendWR send slots
	p      poller

	sendMu   sync.Mutex
	sendFree []int // free send slots
	sendErr  error // a failed send completion, reported by the next Send
	recvMu   sync.Mutex

	peerMu sync.Mutex
	peers  map[peerKey]*Peer // the senders seen, with their AHs
	server *Peer             // DialDatagram's peer

	closeOnce sync.Once
	closeErr  error
}

// Peer is a resolved UD destination: an address handle, the remote QP
// number and its Q_Key. The endpoint that made it owns it (it lives until
// the endpoint's Close); use it only with that endpoint.
type Peer struct {
	ah   *uverbs.AH
	attr qp.AH
	// QPN and QKey name the peer's QP.
	QPN, QKey uint32
	// Addr is the peer's IP address, from its GID.
	Addr netip.Addr
}

// AH is the peer's address (struct ibv_ah_attr).
func (p *Peer) AH() qp.AH { return p.attr }

func (p *Peer) String() string { return fmt.Sprintf("%v qpn %#x qkey %#x", p.Addr, p.QPN, p.QKey) }

type peerKey struct {
	dgid rdma.GID
	sgid uint8
	qpn  uint32
}

type dgConfig struct {
	backend        rdma.Backend
	sendWR, recvWR uint32
	maxMsg         int
	privateData    []byte
	onRequest      func(DatagramRequest) error
	source         netip.Addr
}

func (o *DatagramOptions) config() (dgConfig, error) {
	if o == nil {
		o = &DatagramOptions{}
	}
	c := dgConfig{backend: o.Backend, privateData: o.PrivateData, onRequest: o.OnRequest, maxMsg: o.MaxMessage, source: o.Source}
	if c.backend == "" {
		c.backend = rdma.BackendAuto
	}
	s, err := count("MaxSendWR", o.MaxSendWR, DefaultMaxWR, 1<<16)
	if err != nil {
		return c, err
	}
	r, err := count("MaxRecvWR", o.MaxRecvWR, DefaultMaxWR, 1<<16)
	if err != nil {
		return c, err
	}
	if s == 0 || r == 0 {
		return c, fmt.Errorf("rdmacm: a work queue of 0 entries: %w", ErrInvalidArgument)
	}
	if c.maxMsg < 0 {
		return c, fmt.Errorf("rdmacm: MaxMessage %d: %w", c.maxMsg, ErrInvalidArgument)
	}
	c.sendWR, c.recvWR = uint32(s), uint32(r)
	return c, nil
}

// openDatagram is a new RDMA_PS_UDP ID on the backend's channel, in a
// new DatagramEndpoint.
func openDatagram(cfg dgConfig) (*DatagramEndpoint, *cm.ID, error) {
	c, err := acquireChannel(cfg.backend)
	if err != nil {
		return nil, nil, err
	}
	id, err := c.ch.CreateID(rdma.PortSpaceUDP, nil)
	if err != nil {
		c.release()
		return nil, nil, err
	}
	return newDatagram(c, id, cfg), id, nil
}

func newDatagram(c *channel, id *cm.ID, cfg dgConfig) *DatagramEndpoint {
	ep := &DatagramEndpoint{c: c, id: id, cfg: cfg, closed: make(chan struct{}), ready: make(chan struct{}),
		peers: map[peerKey]*Peer{}}
	ep.box = c.register(id)
	ep.gone, ep.cancel = context.WithCancel(context.Background())
	ep.p.news = make(chan struct{})
	return ep
}

// DialDatagram resolves address ("host:port") to a UD service with a SIDR
// request (rdma_connect on an RDMA_PS_UDP ID) and returns an endpoint
// whose Peer is the service's QP. ctx bounds the resolutions and the
// exchange. A peer whose CM answers with a SIDR status other than
// SUCCESS (no listener: "unsupported service") fails with an error
// matching ErrRejected; errors.As gives its *cm.SIDRError.
func DialDatagram(ctx context.Context, address string, opts *DatagramOptions) (*DatagramEndpoint, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	return dialEach(ctx, address, "dial datagram", func(a netip.AddrPort) (*DatagramEndpoint, error) { return dialDatagram(ctx, a, cfg) })
}

func dialDatagram(ctx context.Context, dst netip.AddrPort, cfg dgConfig) (_ *DatagramEndpoint, err error) {
	ep, id, err := openDatagram(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ep.Close()
		}
	}()
	var src netip.AddrPort
	if cfg.source.IsValid() {
		src = netip.AddrPortFrom(cfg.source, 0)
	}
	if err := id.ResolveAddr(ctx, src, dst, 0); err != nil {
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
	if err := ep.makeQP(id); err != nil {
		return nil, err
	}
	if err := id.Connect(ctx, &cm.ConnParam{PrivateData: cfg.privateData, QPNum: ep.qp.Num()}); err != nil {
		return nil, err
	}
	ev, err := ep.expect(ctx, cm.EventEstablished)
	if err != nil {
		return nil, err
	}
	ah, err := ep.pd.CreateAH(ev.UD.AH)
	if err != nil {
		return nil, err
	}
	ep.server = &Peer{ah: ah, attr: ev.UD.AH, QPN: ev.UD.QPNum, QKey: ev.UD.QKey, Addr: rdma.GID(ev.UD.AH.GRH.DGID).Addr().Unmap()}
	ep.peers[peerKey{ev.UD.AH.GRH.DGID, ev.UD.AH.GRH.SGIDIndex, ev.UD.QPNum}] = ep.server
	return ep, nil
}

// ListenDatagram listens for SIDR requests on address ("host:port"; an
// empty host listens on every RDMA device) and answers each with the
// endpoint's QP number and cm.UDPQKey. The QP is made on the device of
// the first request (at once when address names a device); a request on
// another device is rejected. Recv returns datagrams from any peer, each
// with the *Peer to reply to.
func ListenDatagram(address string, opts *DatagramOptions) (*DatagramEndpoint, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	addrs, err := resolve(context.Background(), address)
	if err != nil {
		return nil, err
	}
	ep, id, err := openDatagram(cfg)
	if err != nil {
		return nil, err
	}
	if err := id.Bind(addrs[0]); err != nil {
		ep.Close()
		return nil, wrapErr("listen datagram "+address, err)
	}
	if err := id.Listen(0); err != nil {
		ep.Close()
		return nil, wrapErr("listen datagram "+address, err)
	}
	ep.served = make(chan struct{})
	go ep.serve()
	return ep, nil
}

// serve answers the SIDR requests until Close.
func (ep *DatagramEndpoint) serve() {
	defer close(ep.served)
	for {
		ev, err := ep.box.get(context.Background(), ep.closed)
		if err != nil {
			return
		}
		if ev.Type != cm.EventConnectRequest {
			ev.Ack()
			continue
		}
		req := DatagramRequest{From: ev.ID.RemoteAddr(), To: ev.ID.LocalAddr(),
			PrivateData: append([]byte(nil), ev.UD.PrivateData...)}
		pid := ev.ID
		ev.Ack()
		ep.answer(pid, req)
		pid.Destroy() // the SIDR exchange is over; a resent request is answered again
	}
}

func (ep *DatagramEndpoint) answer(pid *cm.ID, req DatagramRequest) {
	if err := ep.makeQP(pid); err != nil {
		pid.Reject(nil)
		return
	}
	if x, _, err := pid.Verbs(); err != nil || x != ep.x {
		pid.Reject(nil) // one QP lives on one device
		return
	}
	if f := ep.cfg.onRequest; f != nil {
		if err := f(req); err != nil {
			pid.Reject(nil)
			return
		}
	}
	ctx, cancel := context.WithCancel(ep.gone)
	defer cancel()
	pid.Accept(ctx, &cm.ConnParam{QPNum: ep.qp.Num(), PrivateData: ep.cfg.privateData})
}

// expect waits for an event of type want; an error event is an error.
func (ep *DatagramEndpoint) expect(ctx context.Context, want cm.EventType) (*cm.Event, error) {
	for {
		ev, err := ep.box.get(ctx, ep.closed)
		if err != nil {
			return nil, err
		}
		evErr := ev.Err()
		t := ev.Type
		if t == want && evErr == nil {
			e := *ev
			e.UD.PrivateData = append([]byte(nil), ev.UD.PrivateData...)
			ev.Ack()
			return &e, nil
		}
		ev.Ack()
		switch {
		case t == cm.EventAddrChange:
			continue
		case evErr != nil:
			return nil, wrapErr("", evErr)
		}
		return nil, fmt.Errorf("rdmacm: %v while waiting for %v: %w", t, want, ErrInvalidState)
	}
}

// makeQP makes the CQs, the UD QP (INIT, RTR, RTS, as librdmacm's
// ucma_init_ud_qp) and the message slots on id's device, once, and posts
// the receives.
func (ep *DatagramEndpoint) makeQP(id *cm.ID) (err error) {
	ep.qpOnce.Lock()
	defer ep.qpOnce.Unlock()
	if ep.qp != nil {
		return nil
	}
	select {
	case <-ep.closed:
		return fmt.Errorf("rdmacm: %w", ErrClosed)
	default:
	}
	x, pd, err := id.Verbs()
	if err != nil {
		return err
	}
	ai, err := id.Query()
	if err != nil {
		return err
	}
	pa, err := x.QueryPort(int(ai.Port))
	if err != nil {
		return err
	}
	mtu := pa.ActiveMTU.Bytes()
	if paths, err := id.Route(); err == nil && len(paths) > 0 && paths[0].MTU.Valid() {
		mtu = min(mtu, paths[0].MTU.Bytes())
	}
	maxMsg := ep.cfg.maxMsg
	if maxMsg == 0 {
		maxMsg = mtu
	}
	if maxMsg > mtu {
		return fmt.Errorf("rdmacm: MaxMessage %d is larger than the path MTU %d (a UD message is one packet): %w", maxMsg, mtu, ErrInvalidArgument)
	}
	gids, err := x.QueryGIDTable()
	if err != nil {
		return err
	}
	var q *uverbs.QP
	var comp *uverbs.CompChannel
	var scq, rcq *uverbs.CQ
	var recvMR, sendMR *MR
	defer func() {
		if err != nil {
			for _, c := range []interface{ Close() error }{q, scq, rcq, comp, recvMR, sendMR} {
				if c != nil && !isNilCloser(c) {
					c.Close()
				}
			}
		}
	}()
	if comp, err = x.CreateCompChannel(); err != nil {
		return err
	}
	if scq, err = x.CreateCQ(int(ep.cfg.sendWR), comp, 0); err != nil {
		return err
	}
	if rcq, err = x.CreateCQ(int(ep.cfg.recvWR), comp, 0); err != nil {
		return err
	}
	if q, err = pd.CreateQP(uverbs.QPInit{Type: qp.UD, SendCQ: scq, RecvCQ: rcq, Cap: qp.Cap{
		MaxSendWR: ep.cfg.sendWR, MaxRecvWR: ep.cfg.recvWR, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		return err
	}
	a, m, err := id.InitQPAttr(qp.Init)
	if err != nil {
		return err
	}
	if err = q.Modify(&a, m); err != nil {
		return err
	}
	if err = q.Modify(&qp.Attr{State: qp.RTR}, qp.MaskState); err != nil {
		return err
	}
	if err = q.Modify(&qp.Attr{State: qp.RTS}, qp.MaskState|qp.MaskSQPSN); err != nil {
		return err
	}
	slot := GRHSize + maxMsg
	if recvMR, err = reg(pd, int(ep.cfg.recvWR)*slot, qp.AccessLocalWrite); err != nil {
		return err
	}
	if sendMR, err = reg(pd, int(ep.cfg.sendWR)*max(maxMsg, 1), qp.AccessLocalWrite); err != nil {
		return err
	}
	for i := range int(ep.cfg.recvWR) {
		if err = q.PostRecv([]uverbs.RecvWR{{ID: uint64(i * slot), SGEs: []uverbs.SGE{recvMR.mr.SGE(i*slot, slot)}}}); err != nil {
			return err
		}
	}
	ep.x, ep.pd, ep.comp, ep.scq, ep.rcq, ep.qp = x, pd, comp, scq, rcq, q
	ep.port, ep.mtu, ep.gids, ep.slot = ai.Port, mtu, gids, slot
	ep.cfg.maxMsg = maxMsg
	ep.recvMR, ep.sendMR = recvMR, sendMR
	ep.p.ch, ep.p.cqs = comp, [2]*uverbs.CQ{scq, rcq}
	for i := range int(ep.cfg.sendWR) {
		ep.sendFree = append(ep.sendFree, i)
	}
	close(ep.ready)
	return nil
}

// isNilCloser reports whether c holds a nil pointer.
func isNilCloser(c interface{ Close() error }) bool {
	switch v := c.(type) {
	case *uverbs.QP:
		return v == nil
	case *uverbs.CQ:
		return v == nil
	case *uverbs.CompChannel:
		return v == nil
	case *MR:
		return v == nil
	}
	return false
}

// wait returns once the QP exists (at once when dialed).
func (ep *DatagramEndpoint) wait(ctx context.Context) error {
	select {
	case <-ep.ready:
		return nil
	case <-ep.closed:
		return fmt.Errorf("rdmacm: %w", ErrClosed)
	case <-ctx.Done():
		return ctxErr(ctx)
	}
}

// Peer is the service DialDatagram resolved (nil on a ListenDatagram
// endpoint).
func (ep *DatagramEndpoint) Peer() *Peer { return ep.server }

// MaxMessage is the largest message Send takes: DatagramOptions.MaxMessage,
// or the path MTU (0 until a listening endpoint has its QP).
func (ep *DatagramEndpoint) MaxMessage() int {
	select {
	case <-ep.ready:
		return ep.cfg.maxMsg
	default:
		return 0
	}
}

// QPNum is the number of the endpoint's QP (0 until a listening endpoint
// has its QP); QKey its Q_Key.
func (ep *DatagramEndpoint) QPNum() uint32 {
	select {
	case <-ep.ready:
		return ep.qp.Num()
	default:
		return 0
	}
}

// QKey is the Q_Key of the endpoint's QP, cm.UDPQKey: what a peer's sends
// to it carry.
func (ep *DatagramEndpoint) QKey() uint32 { return cm.UDPQKey }

// LocalAddr is the endpoint's address.
func (ep *DatagramEndpoint) LocalAddr() netip.AddrPort { return ep.id.LocalAddr() }

// Send sends p to peer as one message (a UD SEND). It returns once the
// message is posted; a free send slot is waited for, within ctx. A
// message longer than MaxMessage (at most the path MTU) is refused with
// ErrInvalidArgument: UD does not fragment.
func (ep *DatagramEndpoint) Send(ctx context.Context, to *Peer, p []byte) error {
	return ep.send(ctx, to, p, 0, false)
}

// SendImm is Send with immediate data (SEND_WITH_IMM), which the
// receiver's Datagram carries (Imm, HasImm).
func (ep *DatagramEndpoint) SendImm(ctx context.Context, to *Peer, p []byte, imm uint32) error {
	return ep.send(ctx, to, p, imm, true)
}

func (ep *DatagramEndpoint) send(ctx context.Context, to *Peer, p []byte, imm uint32, withImm bool) error {
	if to == nil || to.ah == nil {
		return fmt.Errorf("rdmacm: send: no peer (a *Peer from DialDatagram or Recv): %w", ErrInvalidArgument)
	}
	if err := ep.wait(ctx); err != nil {
		return err
	}
	if len(p) > ep.cfg.maxMsg {
		what := "MaxMessage"
		if ep.cfg.maxMsg == ep.mtu {
			what = "the path MTU"
		}
		return fmt.Errorf("rdmacm: send %d bytes: larger than %s, %d bytes (a UD message is one packet): %w",
			len(p), what, ep.cfg.maxMsg, ErrInvalidArgument)
	}
	ep.sendMu.Lock()
	defer ep.sendMu.Unlock()
	for len(ep.sendFree) == 0 {
		if err := ep.reapSend(ctx); err != nil {
			return err
		}
	}
	if err := ep.sendErr; err != nil {
		ep.sendErr = nil
		return err
	}
	i := ep.sendFree[len(ep.sendFree)-1]
	size := max(ep.cfg.maxMsg, 1)
	copy(ep.sendMR.Bytes()[i*size:], p)
	wr := uverbs.SendWR{ID: uint64(i), Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{ep.sendMR.mr.SGE(i*size, len(p))}, AH: to.ah, RemoteQPN: to.QPN, RemoteQKey: to.QKey}
	if withImm {
		wr.Opcode, wr.Imm = uverbs.OpSendWithImm, imm
	}
	if err := ep.qp.PostSend([]uverbs.SendWR{wr}); err != nil {
		return wrapErr("send", err)
	}
	ep.sendFree = ep.sendFree[:len(ep.sendFree)-1]
	return nil
}

// reapSend waits for one send completion and frees its slot; ep.sendMu
// is held.
func (ep *DatagramEndpoint) reapSend(ctx context.Context) error {
	wc, err := ep.p.next(ctx, ep.gone, sendQ)
	if err != nil {
		return ep.waitErr(err)
	}
	ep.sendFree = append(ep.sendFree, int(wc.ID))
	if wc.Status != rdma.WCSuccess && ep.sendErr == nil {
		ep.sendErr = wrapErr("send", wcOf(wc).Err())
	}
	return nil
}

// Flush waits until every posted send has completed (its message has
// left), within ctx, and reports a failed one.
func (ep *DatagramEndpoint) Flush(ctx context.Context) error {
	if err := ep.wait(ctx); err != nil {
		return err
	}
	ep.sendMu.Lock()
	defer ep.sendMu.Unlock()
	for len(ep.sendFree) < int(ep.cfg.sendWR) {
		if err := ep.reapSend(ctx); err != nil {
			return err
		}
	}
	err := ep.sendErr
	ep.sendErr = nil
	return err
}

func (ep *DatagramEndpoint) waitErr(err error) error {
	if errors.As(err, new(goneError)) {
		return fmt.Errorf("rdmacm: %w", ErrClosed)
	}
	return err
}

// Recv waits for a message, copies it (without the GRH) into b and
// returns its length and sender. A message longer than b is cut to
// len(b) and reported with io.ErrShortBuffer (the Datagram is valid).
func (ep *DatagramEndpoint) Recv(ctx context.Context, b []byte) (Datagram, error) {
	if err := ep.wait(ctx); err != nil {
		return Datagram{}, err
	}
	ep.recvMu.Lock()
	defer ep.recvMu.Unlock()
	for {
		wc, err := ep.p.next(ctx, ep.gone, recvQ)
		if err != nil {
			return Datagram{}, ep.waitErr(err)
		}
		off := int(wc.ID)
		msg := ep.recvMR.Bytes()[off : off+ep.slot]
		var d Datagram
		var perr error
		if wc.Status == rdma.WCSuccess {
			n := int(wc.ByteLen) - GRHSize
			if n < 0 || n > ep.slot-GRHSize {
				perr = fmt.Errorf("rdmacm: receive: %d bytes with the GRH: %w", wc.ByteLen, ErrInvalidArgument)
			} else {
				d.N = copy(b, msg[GRHSize:GRHSize+n])
				d.Imm, d.HasImm = wc.Imm, wc.Flags&uverbs.WCWithImm != 0
				d.From, perr = ep.peerOf(msg[:GRHSize], wc)
				if d.N < n && perr == nil {
					perr = fmt.Errorf("rdmacm: receive: a %d-byte message into %d bytes: %w", n, len(b), io.ErrShortBuffer)
				}
				d.N = n
			}
		}
		if ep.gone.Err() != nil {
			return Datagram{}, fmt.Errorf("rdmacm: %w", ErrClosed)
		}
		if err := ep.qp.PostRecv([]uverbs.RecvWR{{ID: wc.ID, SGEs: []uverbs.SGE{ep.recvMR.mr.SGE(off, ep.slot)}}}); err != nil {
			return Datagram{}, wrapErr("receive", err)
		}
		if wc.Status != rdma.WCSuccess {
			return Datagram{}, wrapErr("receive", wcOf(wc).Err())
		}
		if perr != nil && !errors.Is(perr, io.ErrShortBuffer) {
			continue // a message without a usable GRH: not one to reply to
		}
		return d, perr
	}
}

// peerOf is the sender of a received message (ibv_init_ah_from_wc): its
// GID from the GRH, or from the IPv4 header RoCE v2 puts in the GRH's
// last 20 bytes; the local GID index of the address it was sent to; its
// QP from the completion; this side's Q_Key, as udaddy replies.
func (ep *DatagramEndpoint) peerOf(grh []byte, wc uverbs.WC) (*Peer, error) {
	h := parseGRH(grh)
	src, dst, gidType := h.src, h.dst, uverbs.GIDTypeRoCEv2
	idx := -1
	for _, g := range ep.gids {
		if g.Port == int(ep.port) && g.GID == dst && (idx < 0 || g.Type == gidType) {
			idx = g.Index
		}
	}
	if idx < 0 && dst.Addr().Unmap().IsMulticast() && ep.server != nil {
		idx = int(ep.server.attr.GRH.SGIDIndex) // sent to the group JoinMulticast joined: reply from the join's GID
	}
	if idx < 0 {
		return nil, fmt.Errorf("rdmacm: receive: sent to %v, no GID of port %d: %w", dst, ep.port, ErrNoRoute)
	}
	key := peerKey{src, uint8(idx), wc.SrcQP}
	ep.peerMu.Lock()
	defer ep.peerMu.Unlock()
	if p := ep.peers[key]; p != nil {
		return p, nil
	}
	attr := qp.AH{GRH: qp.GRH{DGID: src, SGIDIndex: uint8(idx), HopLimit: 64, TrafficClass: h.tclass, FlowLabel: h.flow},
		IsGlobal: true, PortNum: ep.port}
	ah, err := ep.pd.CreateAH(attr)
	if err != nil {
		return nil, err
	}
	p := &Peer{ah: ah, attr: attr, QPN: wc.SrcQP, QKey: cm.UDPQKey, Addr: src.Addr().Unmap()}
	ep.peers[key] = p
	return p, nil
}

// grhInfo is what a received GRH says of the message's route.
type grhInfo struct {
	src, dst rdma.GID
	tclass   uint8
	flow     uint32
}

// parseGRH reads the 40 bytes before a UD message: a GRH, or on RoCE v2
// over IPv4 20 reserved bytes and the IPv4 header (its addresses become
// IPv4-mapped GIDs).
func parseGRH(grh []byte) grhInfo {
	var h grhInfo
	if isIPv4GRH(grh) {
		h.src = rdma.GIDFromAddr(netip.AddrFrom4([4]byte(grh[32:36])))
		h.dst = rdma.GIDFromAddr(netip.AddrFrom4([4]byte(grh[36:40])))
		h.tclass = grh[21]
		return h
	}
	w := binary.BigEndian.Uint32(grh[0:4])
	h.tclass, h.flow = uint8(w>>20), w&0xfffff
	copy(h.src[:], grh[8:24])
	copy(h.dst[:], grh[24:40])
	return h
}

// isIPv4GRH tells the IPv4 header of RoCE v2 from a GRH by the version
// nibbles (byte 0 of a GRH, byte 20 of the reserved-then-IPv4 form), and
// only when both could be right by the IPv4 checksum, as libibverbs
// does: rxe's loopback leaves the checksum 0, the reserved bytes rule it
// out.
func isIPv4GRH(grh []byte) bool {
	v6, v4 := grh[0]>>4 == 6, grh[20]>>4 == 4 && grh[20]&0xf == 5
	if v6 && v4 {
		return ipv4Checksum(grh[20:40]) == 0
	}
	return v4
}

// ipv4Checksum is the one's complement sum of an IPv4 header: 0 over a
// header with a valid checksum (how libibverbs tells the IPv4 header of a
// RoCE v2 GRH from a GRH).
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// Close stops listening, and destroys the QP, its CQs and completion
// channel, the message memory, the peers' address handles and the CM ID.
// It interrupts every blocked call of the endpoint.
func (ep *DatagramEndpoint) Close() error {
	ep.closeOnce.Do(func() {
		close(ep.closed)
		ep.cancel()
		var errs []error
		ep.c.unregister(ep.id)
		errs = append(errs, ep.id.Destroy())
		if ep.served != nil {
			<-ep.served
		}
		ep.qpOnce.Lock() // a request being answered makes no QP now
		ep.sendMu.Lock()
		ep.recvMu.Lock()
		if ep.qp != nil {
			errs = append(errs, ep.qp.Close())
		}
		ep.peerMu.Lock()
		for _, p := range ep.peers {
			errs = append(errs, p.ah.Close())
		}
		ep.peers = nil
		ep.peerMu.Unlock()
		for _, c := range []interface{ Close() error }{ep.scq, ep.rcq, ep.comp, ep.recvMR, ep.sendMR} {
			if !isNilCloser(c) {
				errs = append(errs, c.Close())
			}
		}
		ep.recvMu.Unlock()
		ep.sendMu.Unlock()
		ep.qpOnce.Unlock()
		ep.c.release()
		ep.closeErr = errors.Join(errs...)
	})
	return ep.closeErr
}
