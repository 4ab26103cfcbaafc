package engine

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

func (e *Engine) checkPath(p *Path) error {
	switch ib := e.infiniBand(p.Port); {
	case p.MTU < rdma.MTU256 || p.MTU > rdma.MTU4096:
		return fmt.Errorf("path MTU %v: %w", p.MTU, ErrInvalidArgument)
	case p.PacketLifeTime > mad.MaxTimeout, p.SL > 15, p.Rate > 63, p.FlowLabel > 0xfffff:
		return fmt.Errorf("path field out of range: %w", ErrInvalidArgument)
	case p.Port == 0:
		return fmt.Errorf("path port 0: %w", ErrInvalidArgument)
	case ib && p.RoCE:
		return fmt.Errorf("RoCE path on InfiniBand port %d: %w", p.Port, ErrInvalidArgument)
	case !ib && !p.RoCE:
		return fmt.Errorf("InfiniBand path (RoCE false) on RoCE port %d: %w", p.Port, ErrInvalidArgument)
	case ib && (p.DLID == 0 || p.DLID >= 0xc000):
		// Only a unicast LID (1 to 0xbfff) reaches a CA's GSI QP.
		return fmt.Errorf("InfiniBand path DLID %#x: %w", p.DLID, ErrInvalidArgument)
	}
	return nil
}

func pathAddr(p *Path) Addr {
	return Addr{Port: p.Port, PKeyIndex: p.PKeyIndex, GID: p.DGID, LID: p.DLID, QPN: gsiQPN,
		SGIDIndex: p.SGIDIndex, HopLimit: p.HopLimit, TrafficClass: p.TrafficClass, SL: p.SL, FlowLabel: p.FlowLabel}
}

// ipPrivateData builds the rdma_cm private data: the IP header (cma_hdr)
// then the consumer's bytes, into dst.
func ipPrivateData(dst []byte, src, dstAddr netip.AddrPort, user []byte) error {
	s, d := src.Addr().Unmap(), dstAddr.Addr().Unmap()
	if !s.IsValid() || !d.IsValid() || s.Is4() != d.Is4() {
		return fmt.Errorf("source %v and destination %v: %w", src, dstAddr, ErrInvalidArgument)
	}
	h := mad.IPHeader{IPVersion: 6, SrcPort: src.Port(), Src: s, Dst: d}
	if s.Is4() {
		h.IPVersion = 4
	}
	if err := h.MarshalWithData(dst, user); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return nil
}

func clamp7(v uint8) uint8 { return min(v, 7) }

// Connect sends a REQ (ib_send_cm_req via the rdma_cm's cma_connect_ib) and
// returns the new ID in REQ_SENT.
func (e *Engine) Connect(now time.Time, p ConnectParams) (ID, error) {
	e.setNow(now)
	const op = "connect"
	if err := e.checkPath(&p.Path); err != nil {
		return 0, errorf("%s: %w", op, err)
	}
	qt := p.QPType
	if qt == 0 {
		qt = qp.RC
	}
	var tst mad.TransportServiceType
	switch qt {
	case qp.RC:
		tst = mad.TransportRC
	case qp.UC:
		tst = mad.TransportUC
	default:
		return 0, errorf("%s: QP type %v: %w", op, qt, ErrInvalidArgument)
	}
	resp, retries := p.CMResponseTimeout, p.MaxCMRetries
	if resp == 0 {
		resp = e.cfg.CMResponseTimeout
	}
	if retries == 0 {
		retries = e.cfg.MaxCMRetries
	}
	if resp > mad.MaxTimeout || retries > 15 || p.QPN > 0xffffff || p.ECE.VendorID > ece.MaxVendorID {
		return 0, errorf("%s: timeout, retries, QPN or ECE vendor out of range: %w", op, ErrInvalidArgument)
	}
	path := p.Path
	m := mad.REQ{
		Header:                  mad.Header{AttributeModifier: p.ECE.Options},
		VendorID:                p.ECE.VendorID,
		ServiceID:               p.ServiceID,
		LocalCAGUID:             e.cfg.CAGUID,
		LocalQPN:                p.QPN,
		ResponderResources:      p.ResponderResources,
		InitiatorDepth:          p.InitiatorDepth,
		RemoteCMResponseTimeout: resp,
		TransportServiceType:    tst,
		EndToEndFlowControl:     p.FlowControl,
		LocalCMResponseTimeout:  resp,
		// cma_connect_ib clamps both retry counts to 7.
		RetryCount:    clamp7(p.RetryCount),
		RNRRetryCount: clamp7(p.RNRRetryCount),
		PartitionKey:  path.PKey,
		PathMTU:       path.MTU,
		MaxCMRetries:  retries,
		SRQ:           p.SRQ,
	}
	if p.PortSpace != 0 {
		if !p.Dst.IsValid() {
			return 0, errorf("%s: IP addressing without a destination: %w", op, ErrInvalidArgument)
		}
		if len(p.PrivateData) > mad.REQUserDataSize {
			return 0, errorf("%s: %d bytes of private data, at most %d: %w", op, len(p.PrivateData), mad.REQUserDataSize, ErrInvalidArgument)
		}
		m.ServiceID = mad.ServiceID(p.PortSpace, p.Dst.Port())
		if err := ipPrivateData(m.PrivateData[:], p.Src, p.Dst, p.PrivateData); err != nil {
			return 0, errorf("%s: %w", op, err)
		}
		if path.RoCE && path.FlowLabel == 0 {
			path.FlowLabel = RoCEFlowLabel(p.Src.Port(), p.Dst.Port())
		}
	} else if err := m.SetPrivateData(p.PrivateData); err != nil {
		return 0, errorf("%s: %w: %w", op, ErrInvalidArgument, err)
	}
	// cm_format_req: real LIDs and SubnetLocal only within the subnet
	// (hop limit <= 1); otherwise the permissive LID.
	m.Primary = mad.Path{
		LocalGID: path.SGID, RemoteGID: path.DGID, LocalLID: 0xffff, RemoteLID: 0xffff,
		FlowLabel: path.FlowLabel, PacketRate: path.Rate, TrafficClass: path.TrafficClass,
		HopLimit: path.HopLimit, SL: path.SL, SubnetLocal: path.HopLimit <= 1,
		LocalACKTimeout: qp.AckTimeout(e.cfg.ACKDelay, path.PacketLifeTime),
	}
	if path.HopLimit <= 1 {
		m.Primary.LocalLID, m.Primary.RemoteLID = path.SLID, path.DLID
	}

	c, err := e.newConn(StateIdle)
	if err != nil {
		return 0, errorf("%s: %w", op, err)
	}
	m.LocalCommID = c.localID
	m.StartingPSN = e.cfg.Source.PSN() & 0xffffff
	c.tid = e.cfg.Source.TID(c.localID)
	m.TransactionID = c.tid

	c.context = p.Context
	c.serviceID = m.ServiceID
	c.addr = pathAddr(&path)
	c.roce = path.RoCE
	c.rate = path.Rate
	c.avTimeout = min(path.PacketLifeTime+1, mad.MaxTimeout) // cm_init_av_by_path
	// ib_send_cm_req: 2 × packet lifetime + the remote's response time.
	c.timeout = 2*convertTimeout(path.PacketLifeTime) + convertTimeout(resp)
	c.maxCMRetries = retries
	c.initiatorDepth = p.InitiatorDepth
	c.responderResources = p.ResponderResources
	c.retryCount = m.RetryCount
	c.pathMTU = path.MTU
	c.pkey = path.PKey
	c.transport = tst
	c.qpType = qt
	c.localQPN = p.QPN
	c.rqPSN = m.StartingPSN
	c.manageQP = p.ManageQP
	if c.manageQP {
		// rdma_create_qp moves the QP to INIT before any CM exchange.
		if err := e.qpMove(c, qp.InitAttrBeforeCM); err != nil {
			e.release(c)
			return 0, errorf("%s: %w", op, err)
		}
	}
	o := e.out(c.addr)
	encoded(m.MarshalTo(o.MAD[:]))
	e.setState(c, StateREQSent)
	e.track(c, o, StateREQSent)
	return ID(c.localID), nil
}

// recvREP is cm_rep_handler.
func (e *Engine) recvREP(from Addr, v mad.REPView) {
	c := e.acquire(v.RemoteCommID(), 0)
	if c == nil {
		e.dupREP(from, v)
		return
	}
	if c.state != StateREQSent && c.state != StateMRAREQRcvd {
		e.stats.Dropped++
		return
	}
	c.remoteID = v.LocalCommID()
	c.remoteCAGUID = v.LocalCAGUID()
	c.remoteQPN = v.LocalQPN()
	if e.insertRemoteID(c) != nil { // duplicate REP
		c.remoteID, c.remoteCAGUID, c.remoteQPN = 0, 0, 0
		e.stats.Dropped++
		return
	}
	if old := e.insertRemoteQPN(c); old != nil { // stale connection
		e.removeRemote(c)
		c.remoteID, c.remoteCAGUID, c.remoteQPN = 0, 0, 0
		e.issueREJ(from, v.Bytes(), mad.RejectStaleConn, mad.RejectedREP)
		_ = e.sendDREQ(old, nil)
		return
	}
	e.setState(c, StateREPRcvd)
	c.initiatorDepth = v.ResponderResources()
	c.responderResources = v.InitiatorDepth()
	c.sqPSN = v.StartingPSN()
	c.rnrRetryCount = v.RNRRetryCount()
	c.targetACKDelay = v.TargetACKDelay()
	c.avTimeout = qp.AckTimeout(c.targetACKDelay, c.avTimeout-1)
	e.cancelMsg(c)

	// The rdma_cm arms a delayed MRA (ib_prepare_cm_mra) before telling
	// the user.
	c.serviceTimeout = e.cfg.MRAServiceTimeout
	c.keepPrivate(nil)
	e.setState(c, StateMRAREPSent)

	if c.manageQP {
		// librdmacm with a library QP: INIT→INIT with the CM's access
		// flags, RTR, RTS, then the RTU; the user sees ESTABLISHED.
		for _, b := range []qpBuilder{qp.InitAttr, qp.RTRAttr, qp.RTSAttr} {
			if err := e.qpMove(c, b); err != nil {
				// CONNECT_ERROR: cma_rep_recv rejects.
				e.qpErr(c)
				_ = e.sendRejLocked(c, mad.RejectConsumerDefined, nil, nil)
				e.newEvent(EventRejected, c).Reason = mad.RejectConsumerDefined
				return
			}
		}
		e.sendRTU(c, c.addr, nil)
		e.setState(c, StateEstablished)
		ev := e.newEvent(EventEstablished, c)
		ev.PrivateData, ev.ECE = e.keep(v.PrivateData()), v.ECE()
		return
	}
	ev := e.wideEvent(EventConnectReply, c)
	ev.PrivateData, ev.ECE = e.keep(v.PrivateData()), v.ECE()
	in := &ev.Conn
	in.RemoteCommID, in.ServiceID, in.RemoteCAGUID, in.RemoteQPN = c.remoteID, c.serviceID, c.remoteCAGUID, c.remoteQPN
	in.StartingPSN, in.ResponderResources = c.sqPSN, c.responderResources
	in.InitiatorDepth, in.RNRRetryCount = c.initiatorDepth, c.rnrRetryCount
	in.FlowControl, in.SRQ, in.TransportType = v.EndToEndFlowControl(), v.SRQ(), c.transport
	in.TargetACKDelay = c.targetACKDelay
}

// dupREP is cm_dup_rep_handler: a REP for an ID that already has its
// peer's ID. ESTABLISHED resends the RTU, MRA_REP_SENT the MRA; anything
// else, an unknown ID included, is dropped without a REJ.
func (e *Engine) dupREP(from Addr, v mad.REPView) {
	c := e.acquire(v.RemoteCommID(), v.LocalCommID())
	if c == nil {
		e.stats.Dropped++
		return
	}
	switch c.state {
	case StateEstablished:
		e.sendRTU(c, replyAddr(from), c.privateData)
	case StateMRAREPSent:
		e.sendMRA(c, replyAddr(from), mad.MRAedREP, c.serviceTimeout, c.privateData)
	default:
		e.stats.Dropped++
	}
}

// Establish sends the RTU (ib_send_cm_rtu; rdma_establish for an external
// QP) after EventConnectReply.
func (e *Engine) Establish(now time.Time, id ID, privateData []byte) error {
	e.setNow(now)
	c, err := e.lookup("establish", id)
	if err != nil {
		return err
	}
	if len(privateData) > mad.RTUPrivateDataSize {
		return opError("establish", id, ErrInvalidArgument)
	}
	if c.state != StateREPRcvd && c.state != StateMRAREPSent {
		return stateError("establish", c)
	}
	e.sendRTU(c, c.addr, privateData)
	e.setState(c, StateEstablished)
	c.keepPrivate(privateData)
	return nil
}

// recvMRA is cm_mra_handler: the peer needs more time; the outstanding
// MAD's wait becomes the service timeout plus the path's ACK timeout.
func (e *Engine) recvMRA(v mad.MRAView) {
	var c *conn
	switch v.MessageMRAed() {
	case mad.MRAedREQ:
		c = e.acquire(v.RemoteCommID(), 0)
	default:
		c = e.acquire(v.RemoteCommID(), v.LocalCommID())
	}
	if c == nil || c.msg == nil {
		e.stats.Dropped++
		return
	}
	switch {
	case c.state == StateREQSent && v.MessageMRAed() == mad.MRAedREQ:
		e.setState(c, StateMRAREQRcvd)
	case c.state == StateREPSent && v.MessageMRAed() == mad.MRAedREP:
		e.setState(c, StateMRAREPRcvd)
	default:
		e.stats.Dropped++
		return
	}
	// ib_modify_mad: the new wait applies now and to later resends.
	c.curTimeout = convertTimeout(v.ServiceTimeout()) + convertTimeout(c.avTimeout)
	c.msgState = c.state
	e.arm(c, c.curTimeout)
}
