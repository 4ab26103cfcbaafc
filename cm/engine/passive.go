package engine

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// Listen starts listening on a service ID (ib_cm_listen; rdma_listen).
func (e *Engine) Listen(now time.Time, p ListenParams) (ID, error) {
	e.setNow(now)
	qt := p.QPType
	if qt == 0 {
		qt = qp.RC
	}
	if qt != qp.RC && qt != qp.UC && qt != qp.UD {
		return 0, errorf("listen: QP type %v: %w", qt, ErrInvalidArgument)
	}
	sid := p.ServiceID
	if p.PortSpace != 0 {
		sid = mad.ServiceID(p.PortSpace, p.Port)
	}
	if e.listeners[sid] != nil {
		return 0, errorf("listen: service ID %#x in use: %w", sid, ErrBusy)
	}
	c, err := e.newConn(StateIdle)
	if err != nil {
		return 0, errorf("listen: %w", err)
	}
	c.serviceID = sid
	c.context = p.Context
	c.listen = &listenInfo{ps: p.PortSpace, ip: p.PortSpace != 0, qpType: qt, backlog: p.Backlog,
		anyAddr: !p.Addr.IsValid() || p.Addr.IsUnspecified()}
	if c.listen.anyAddr && p.AFOnly && p.Addr.IsValid() {
		c.listen.family = 4
		if p.Addr.Is6() {
			c.listen.family = 6
		}
	}
	if !c.listen.anyAddr {
		c.listen.addr = rdma.GIDFromAddr(p.Addr)
	}
	e.listeners[sid] = c
	e.setState(c, StateListen)
	return ID(c.localID), nil
}

// transportQPType is cm_req_get_qp_type for RC and UC.
func transportQPType(t mad.TransportServiceType) qp.QPType {
	switch t {
	case mad.TransportRC:
		return qp.RC
	case mad.TransportUC:
		return qp.UC
	}
	return 0
}

// recvREQ is cm_req_handler plus the rdma_cm's cma_ib_req_handler checks.
func (e *Engine) recvREQ(from Addr, v mad.REQView) {
	c, err := e.newConn(StateIdle)
	if err != nil { // -ENOMEM: no REJ, the peer retries
		e.stats.Dropped++
		return
	}
	c.passive = true
	c.remoteID = v.LocalCommID()
	c.serviceID = v.ServiceID()
	c.tid = v.Header().TransactionID()
	c.timeout = convertTimeout(v.LocalCMResponseTimeout())
	c.maxCMRetries = v.MaxCMRetries()
	c.remoteQPN = v.LocalQPN()
	c.initiatorDepth = v.ResponderResources()
	c.responderResources = v.InitiatorDepth()
	c.pathMTU = v.PathMTU()
	c.pkey = v.PartitionKey()
	c.sqPSN = v.StartingPSN()
	c.retryCount = v.RetryCount()
	c.rnrRetryCount = v.RNRRetryCount()
	c.transport = v.TransportServiceType()
	c.qpType = transportQPType(c.transport)
	c.remoteCAGUID = v.LocalCAGUID()
	c.addr = replyAddr(from) // cm_init_av_for_response
	// REQ_RCVD, not yet visible (the kernel's ID is not in its table
	// before cm_finalize_id): recorded once the match succeeds.
	c.state = StateREQRcvd

	// cm_match_req: duplicate, stale, listener.
	if old := e.insertRemoteID(c); old != nil {
		e.release(c)
		e.dupREQ(old, from)
		return
	}
	if old := e.insertRemoteQPN(c); old != nil {
		e.release(c)
		e.issueREJ(from, v.Bytes(), mad.RejectStaleConn, mad.RejectedREQ)
		_ = e.sendDREQ(old, nil)
		return
	}
	l := e.listeners[c.serviceID]
	if l == nil {
		e.release(c)
		e.issueREJ(from, v.Bytes(), mad.RejectInvalidServiceID, mad.RejectedREQ)
		return
	}
	if e.cfg.RecordStates {
		e.ready.StateChanges = append(e.ready.StateChanges, StateChange{ID: ID(c.localID), From: StateIdle, To: StateREQRcvd})
	}

	// The path and AV from the REQ (cm_format_paths_from_req,
	// cm_init_av_by_path): the REQ's primary path seen from here, with
	// the hop limit of the received packet.
	pri := v.Primary()
	ib := e.infiniBand(from.Port)
	// On RoCE the peer's GID must be routable: the kernel's
	// cm_init_av_by_path fails on one it cannot resolve, and the REJ
	// goes to the packet's source.
	if len(e.cfg.LocalGIDs) > 0 && !e.localGID(pri.RemoteGID) || !ib && !routableGID(pri.LocalGID) {
		var ari []byte
		if len(e.cfg.LocalGIDs) > 0 {
			g := e.cfg.LocalGIDs[0]
			ari = g[:]
		}
		_ = e.sendRejLocked(c, mad.RejectInvalidGID, ari, nil)
		e.release(c)
		return
	}
	plt := pri.LocalACKTimeout
	if plt > 0 {
		plt--
	}
	c.avTimeout = plt + 1
	slid, dlid, sl := pri.RemoteLID, pri.LocalLID, pri.SL
	if ib {
		// cm_process_routed_req: a REQ from another subnet carries the
		// permissive LID; the packet's source LID and SL stand in for
		// the peer's, and the path bits of its destination LID (which
		// the engine does not see: 0 without LMC) for ours. Then
		// cm_format_path_lid_from_req takes the packet's source LID as
		// the DLID in every case: the LID the REQ really came from.
		if !pri.SubnetLocal {
			if pri.LocalLID == 0xffff {
				sl = from.SL
			}
			if pri.RemoteLID == 0xffff {
				slid = 0
			}
		}
		dlid = from.LID
	}
	// c.addr.LID stays the packet's source LID (0 on RoCE).
	c.addr.GID = pri.LocalGID
	c.addr.TrafficClass = pri.TrafficClass
	c.addr.FlowLabel = pri.FlowLabel
	c.addr.SL = sl
	c.rate = pri.PacketRate
	c.roce = !ib

	// cma_ib_req_handler: QP type, IP header and address checks. A
	// failure destroys the ID in REQ_RCVD: REJ 28 with local ID 0.
	pd := v.PrivateData()
	ok := c.qpType != 0 && c.qpType == l.listen.qpType
	var hasIP bool
	var src, dst netip.AddrPort
	if ok && l.listen.ip {
		pd, ok = e.checkIPHeader(l, pd, &hasIP, &src, &dst)
	}
	if !ok {
		_ = e.sendRejLocked(c, mad.RejectConsumerDefined, nil, nil)
		e.release(c)
		return
	}
	if l.listen.backlog > 0 && l.listen.pending >= l.listen.backlog || !e.admit(l) {
		// ucma backlog full (ENOMEM) or the half-open bound taken by
		// requests the consumer has yet to answer: dropped without a
		// REJ, so a live peer sends its REQ again and a spoofed one draws
		// nothing.
		e.stats.Dropped++
		e.stats.BacklogDrops++
		e.release(c)
		return
	}
	e.joinHalfOpen(c, l)
	c.parent = l.localID
	c.pending = true
	l.listen.pending++
	c.context = l.context
	// The rdma_cm draws the ID's PSN (seq_num) when the ID is created.
	c.rqPSN = e.cfg.Source.PSN() & 0xffffff

	// The event is filled in place (newEvent).
	ev := e.wideEvent(EventConnectRequest, c)
	ev.Listener, ev.PrivateData, ev.ECE = ID(l.localID), e.keep(pd), v.ECE()
	in := &ev.Conn
	in.RemoteCommID, in.ServiceID, in.RemoteCAGUID, in.RemoteQPN = c.remoteID, c.serviceID, c.remoteCAGUID, c.remoteQPN
	in.StartingPSN, in.ResponderResources = c.sqPSN, c.responderResources
	in.InitiatorDepth, in.RetryCount, in.RNRRetryCount = c.initiatorDepth, c.retryCount, c.rnrRetryCount
	in.FlowControl, in.SRQ, in.TransportType = v.EndToEndFlowControl(), v.SRQ(), c.transport
	p := &in.Path
	p.PKey, p.SGID, p.DGID, p.SLID, p.DLID = c.pkey, pri.RemoteGID, pri.LocalGID, slid, dlid
	p.FlowLabel, p.TrafficClass, p.HopLimit, p.SL = pri.FlowLabel, pri.TrafficClass, from.HopLimit, sl
	p.Rate, p.MTU, p.PacketLifeTime = pri.PacketRate, c.pathMTU, plt
	p.Port, p.PKeyIndex, p.SGIDIndex, p.RoCE = from.Port, from.PKeyIndex, from.SGIDIndex, c.roce
	if hasIP {
		in.HasIP, in.PortSpace, in.Src, in.Dst = true, l.listen.ps, src, dst
	}
	// The rdma_cm arms a delayed MRA once the request is reported.
	c.serviceTimeout = e.cfg.MRAServiceTimeout
	e.setState(c, StateMRAREQSent)
}

// routableGID reports whether a RoCE peer can have GID g: not
// unspecified (IPv6 or IPv4-mapped), loopback or multicast.
func routableGID(g rdma.GID) bool {
	a := netip.AddrFrom16(g).Unmap()
	return !a.IsUnspecified() && !a.IsLoopback() && !a.IsMulticast()
}

func (e *Engine) localGID(g rdma.GID) bool {
	for _, l := range e.cfg.LocalGIDs {
		if l == g {
			return true
		}
	}
	return false
}

// checkIPHeader applies the rdma_cm's checks of the private-data IP
// header (cma_save_req_info, cma_ib_id matching): version 0, IP version 4
// or 6, destination equal to the listener's address unless it is a
// wildcard. It returns the consumer's part of the private data.
func (e *Engine) checkIPHeader(l *conn, pd []byte, has *bool, src, dst *netip.AddrPort) ([]byte, bool) {
	h, err := mad.ParseIPHeader(pd)
	if err != nil {
		return pd, false
	}
	if !l.listen.anyAddr && rdma.GIDFromAddr(h.Dst()) != l.listen.addr {
		return pd, false
	}
	if l.listen.family != 0 && (l.listen.family == 4) != h.Dst().Unmap().Is4() {
		return pd, false
	}
	*has = true
	_, port, _ := mad.SplitServiceID(l.serviceID)
	*src = netip.AddrPortFrom(h.Src(), h.SrcPort())
	*dst = netip.AddrPortFrom(h.Dst(), port)
	return pd[mad.IPHeaderSize:], true
}

// dupREQ is cm_dup_req_handler: REQ_RCVD drops the duplicate,
// MRA_REQ_SENT resends the MRA, TIMEWAIT answers REJ 10 (STALE_CONN).
// Every other state, REP_SENT included, drops it: the REP has its own
// retransmissions.
func (e *Engine) dupREQ(c *conn, from Addr) {
	switch c.state {
	case StateMRAREQSent:
		e.sendMRA(c, replyAddr(from), mad.MRAedREQ, c.serviceTimeout, c.privateData)
	case StateTimeWait:
		m := &e.scratch.rej
		*m = mad.REJ{Header: header(c.tid), LocalCommID: c.localID, RemoteCommID: c.remoteID,
			MessageRejected: mad.RejectedOther, Reason: mad.RejectStaleConn}
		encoded(m.MarshalTo(e.out(replyAddr(from)).MAD[:]))
	default:
		e.stats.Dropped++
	}
}

// Accept sends the REP (ib_send_cm_rep; rdma_accept).
func (e *Engine) Accept(now time.Time, id ID, p AcceptParams) error {
	e.setNow(now)
	const op = "accept"
	c, err := e.lookup(op, id)
	if err != nil {
		return err
	}
	if c.state != StateREQRcvd && c.state != StateMRAREQSent {
		return stateError(op, c)
	}
	if p.QPN > 0xffffff || p.ECE.VendorID > ece.MaxVendorID || len(p.PrivateData) > mad.REPPrivateDataSize {
		return opError(op, id, ErrInvalidArgument)
	}
	c.localQPN = p.QPN
	c.initiatorDepth = p.InitiatorDepth
	c.responderResources = p.ResponderResources
	c.manageQP = p.ManageQP
	if c.manageQP {
		// rdma_create_qp (INIT), then rdma_accept: RTR and RTS before the
		// REP (cma_accept_ib).
		for _, b := range []qpBuilder{qp.InitAttr, qp.RTRAttr, qp.RTSAttr} {
			if err := e.qpMove(c, b); err != nil {
				return errorf("%s %v: %w", op, id, err)
			}
		}
	}
	m := mad.REP{
		Header:              mad.Header{TransactionID: c.tid, AttributeModifier: p.ECE.Options},
		LocalCommID:         c.localID,
		RemoteCommID:        c.remoteID,
		LocalQPN:            p.QPN,
		StartingPSN:         c.rqPSN,
		VendorID:            p.ECE.VendorID,
		ResponderResources:  p.ResponderResources,
		InitiatorDepth:      p.InitiatorDepth,
		TargetACKDelay:      e.cfg.ACKDelay,
		EndToEndFlowControl: p.FlowControl,
		RNRRetryCount:       clamp7(p.RNRRetryCount),
		SRQ:                 p.SRQ,
		LocalCAGUID:         e.cfg.CAGUID,
	}
	_ = m.SetPrivateData(p.PrivateData)
	o := e.out(c.addr)
	encoded(m.MarshalTo(o.MAD[:]))
	e.unpend(c)
	e.setState(c, StateREPSent)
	e.track(c, o, StateREPSent)
	return nil
}

// Reject sends a REJ (ib_send_cm_rej; rdma_reject, rdma_reject_ece with
// reason 35). For a SIDR request it sends a SIDR_REP with status REJECT,
// as the rdma_cm does for UD IDs.
func (e *Engine) Reject(now time.Time, id ID, reason mad.RejectReason, ari, privateData []byte) error {
	e.setNow(now)
	const op = "reject"
	c, err := e.lookup(op, id)
	if err != nil {
		return err
	}
	if c.state == StateSIDRREQRcvd {
		return e.ReplySIDR(now, id, SIDRReplyParams{Status: mad.SIDRReject, PrivateData: privateData})
	}
	if len(ari) > mad.REJARISize || len(privateData) > mad.REJPrivateDataSize {
		return opError(op, id, ErrInvalidArgument)
	}
	e.qpErr(c)
	return e.sendRejLocked(c, reason, ari, privateData)
}

// MRA sends an MRA now (ib_send_cm_mra without IB_CM_MRA_FLAG_DELAY) for a
// REQ (REQ_RCVD) or a REP (REP_RCVD). Unlike the kernel it is also allowed
// while the rdma_cm's delayed MRA is armed (MRA_REQ_SENT, MRA_REP_SENT),
// since the engine arms that one itself.
func (e *Engine) MRA(now time.Time, id ID, serviceTimeout uint8, privateData []byte) error {
	e.setNow(now)
	const op = "send MRA"
	c, err := e.lookup(op, id)
	if err != nil {
		return err
	}
	if serviceTimeout > mad.MaxTimeout || len(privateData) > mad.MRAPrivateDataSize {
		return opError(op, id, ErrInvalidArgument)
	}
	var what mad.MRAedMessage
	var next State
	switch c.state {
	case StateREQRcvd, StateMRAREQSent:
		what, next = mad.MRAedREQ, StateMRAREQSent
	case StateREPRcvd, StateMRAREPSent:
		what, next = mad.MRAedREP, StateMRAREPSent
	default:
		return stateError(op, c)
	}
	e.sendMRA(c, c.addr, what, serviceTimeout, privateData)
	e.setState(c, next)
	c.serviceTimeout = serviceTimeout
	c.keepPrivate(privateData)
	return nil
}

// recvRTU is cm_rtu_handler.
func (e *Engine) recvRTU(v mad.RTUView) {
	c := e.acquire(v.RemoteCommID(), v.LocalCommID())
	if c == nil || c.state != StateREPSent && c.state != StateMRAREPRcvd {
		e.stats.Dropped++
		return
	}
	e.setState(c, StateEstablished)
	e.cancelMsg(c)
	e.newEvent(EventEstablished, c).PrivateData = e.keep(v.PrivateData())
}

// Notify reports that the QP received its first packet before the RTU
// (ib_cm_notify with IB_EVENT_COMM_EST; cm_establish): REP_SENT becomes
// ESTABLISHED.
func (e *Engine) Notify(now time.Time, id ID) error {
	e.setNow(now)
	c, err := e.lookup("notify", id)
	if err != nil {
		return err
	}
	switch c.state {
	case StateREPSent, StateMRAREPRcvd:
	case StateEstablished:
		return opError("notify", id, ErrConnected)
	default:
		return stateError("notify", c)
	}
	e.setState(c, StateEstablished)
	e.cancelMsg(c)
	e.bareEvent(EventEstablished, c)
	return nil
}

// Migrate reports that the QP migrated to its alternate path (ib_cm_notify
// with IB_EVENT_PATH_MIG; cm_migrate). The kernel accepts it on an
// ESTABLISHED connection with no LAP under way, and any other state is
// EINVAL. It then makes the alternate path the connection's path; on RoCE
// there is none to switch to (the rdma_cm never sets one, LAP and APR are
// dropped), so Migrate only checks the state: it sends nothing and
// changes nothing.
func (e *Engine) Migrate(now time.Time, id ID) error {
	e.setNow(now)
	c, err := e.lookup("migrate", id)
	if err != nil {
		return err
	}
	if c.state != StateEstablished {
		return stateError("migrate", c)
	}
	return nil
}

// InitQPAttr returns the attributes for moving the ID's QP to INIT, RTR or
// RTS (ib_cm_init_qp_attr with the rdma_cm's overrides), in the states the
// kernel allows.
func (e *Engine) InitQPAttr(id ID, to qp.State) (qp.Attr, qp.Mask, error) {
	c, err := e.lookup("get QP attributes", id)
	if err != nil {
		return qp.Attr{}, 0, err
	}
	ok := false
	var b qpBuilder
	switch to {
	case qp.Init:
		b = qp.InitAttr
		switch c.state {
		case StateREQSent, StateMRAREQRcvd, StateREQRcvd, StateMRAREQSent, StateREPRcvd,
			StateMRAREPSent, StateREPSent, StateMRAREPRcvd, StateEstablished:
			ok = true
		}
	case qp.RTR, qp.RTS:
		b = qp.RTRAttr
		if to == qp.RTS {
			b = qp.RTSAttr
		}
		switch c.state {
		case StateREQRcvd, StateMRAREQSent, StateREPRcvd, StateMRAREPSent, StateREPSent,
			StateMRAREPRcvd, StateEstablished:
			ok = true
		}
	}
	if !ok || c.qpType == 0 {
		return qp.Attr{}, 0, stateError("get QP attributes", c)
	}
	return b(e.cmParams(c), c.qpType)
}

func beGUID(g uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], g)
	return b[:]
}
