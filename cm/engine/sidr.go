package engine

import (
	"time"

	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
)

// ResolveSIDR sends a SIDR_REQ to learn the QPN and Q_Key of a UD service
// (ib_send_cm_sidr_req; the rdma_cm's cma_resolve_ib_udp).
func (e *Engine) ResolveSIDR(now time.Time, p SIDRParams) (ID, error) {
	e.setNow(now)
	const op = "resolve SIDR"
	if err := e.checkPath(&p.Path); err != nil {
		return 0, errorf("%s: %w", op, err)
	}
	if p.MaxRetries > 15 || p.Timeout < 0 {
		return 0, errorf("%s: retries or timeout out of range: %w", op, ErrInvalidArgument)
	}
	m := &e.scratch.sidrREQ
	*m = mad.SIDRREQ{ServiceID: p.ServiceID, PartitionKey: p.Path.PKey}
	if p.PortSpace != 0 {
		if !p.Dst.IsValid() || len(p.PrivateData) > mad.SIDRREQUserDataSize {
			return 0, errorf("%s: destination or private data: %w", op, ErrInvalidArgument)
		}
		m.ServiceID = mad.ServiceID(p.PortSpace, p.Dst.Port())
		if err := ipPrivateData(m.PrivateData[:], p.Src, p.Dst, p.PrivateData); err != nil {
			return 0, errorf("%s: %w", op, err)
		}
	} else if err := m.SetPrivateData(p.PrivateData); err != nil {
		return 0, errorf("%s: %w: %w", op, ErrInvalidArgument, err)
	}
	c, err := e.newConn(StateIdle)
	if err != nil {
		return 0, errorf("%s: %w", op, err)
	}
	c.context = p.Context
	c.serviceID = m.ServiceID
	c.addr = pathAddr(&p.Path)
	c.avTimeout = min(p.Path.PacketLifeTime+1, mad.MaxTimeout)
	c.timeout = p.Timeout
	if c.timeout == 0 {
		c.timeout = defaultSIDRTimeout
	}
	c.maxCMRetries = p.MaxRetries
	if c.maxCMRetries == 0 {
		c.maxCMRetries = defaultMaxCMRetries
	}
	c.tid = e.cfg.Source.TID(c.localID)
	m.TransactionID = c.tid
	m.RequestID = c.localID
	o := e.out(c.addr)
	encoded(m.MarshalTo(o.MAD[:]))
	e.setState(c, StateSIDRREQSent)
	e.track(c, o, StateSIDRREQSent)
	return ID(c.localID), nil
}

// recvSIDRREQ is cm_sidr_req_handler plus the rdma_cm's checks. The
// kernel keys duplicates by request ID and source LID, which is 0 for
// every RoCE peer; the engine adds the source GID, which is zero for an
// InfiniBand peer without a GRH. The SIDR_REP goes back to the sender's
// address: its LID on InfiniBand (cm_init_av_for_response).
func (e *Engine) recvSIDRREQ(from Addr, v mad.SIDRREQView) {
	key := sidrKey{gid: from.GID, lid: from.LID, id: v.RequestID()}
	if e.sidrRemote[key] != nil {
		e.stats.Dropped++
		return
	}
	c, err := e.newConn(StateIdle)
	if err != nil {
		e.stats.Dropped++
		return
	}
	c.passive = true
	c.remoteID = v.RequestID()
	c.serviceID = v.ServiceID()
	c.tid = v.Header().TransactionID()
	c.addr = replyAddr(from)
	c.sidrKey, c.sidrIn = key, true
	e.sidrRemote[key] = c
	e.setState(c, StateSIDRREQRcvd)

	l := e.listeners[c.serviceID]
	if l == nil {
		e.sendSIDRREP(c, &SIDRReplyParams{Status: mad.SIDRUnsupported})
		e.release(c)
		return
	}
	info := SIDRInfo{ServiceID: c.serviceID, PKey: v.PartitionKey()}
	pd := v.PrivateData()
	ok := l.listen.qpType == qp.UD
	if ok && l.listen.ip {
		pd, ok = e.checkIPHeader(l, pd, &info.HasIP, &info.Src, &info.Dst)
	}
	if !ok { // the rdma_cm refuses: cm_destroy_id answers REJECT
		e.sendSIDRREP(c, &SIDRReplyParams{Status: mad.SIDRReject})
		e.release(c)
		return
	}
	if l.listen.backlog > 0 && l.listen.pending >= l.listen.backlog || !e.admit(l) {
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
	e.event(Event{Type: EventSIDRRequest, ID: ID(c.localID), Listener: ID(l.localID), Context: c.context,
		PrivateData: e.keep(pd), SIDR: info})
}

// ReplySIDR answers a SIDR request (ib_send_cm_sidr_rep). The ECE goes
// on the wire only with status SUCCESS, as the rdma_cm sends it, and only
// its vendor bits 15:0, as cm_format_sidr_rep writes them.
func (e *Engine) ReplySIDR(now time.Time, id ID, p SIDRReplyParams) error {
	e.setNow(now)
	const op = "reply SIDR"
	c, err := e.lookup(op, id)
	if err != nil {
		return err
	}
	if c.state != StateSIDRREQRcvd {
		return stateError(op, c)
	}
	if p.QPN > 0xffffff || len(p.Info) > mad.SIDRREPInfoSize || len(p.PrivateData) > mad.SIDRREPPrivateDataSize {
		return opError(op, id, ErrInvalidArgument)
	}
	e.sendSIDRREP(c, &p)
	e.unpend(c)
	return nil
}

// sendSIDRREP is cm_send_sidr_rep_locked: the ID goes back to IDLE and
// leaves the SIDR table.
func (e *Engine) sendSIDRREP(c *conn, p *SIDRReplyParams) {
	m := &e.scratch.sidrREP
	*m = mad.SIDRREP{Header: header(c.tid), RequestID: c.remoteID, Status: p.Status, QPN: p.QPN,
		ServiceID: c.serviceID, QKey: p.QKey}
	if p.Status == mad.SIDRSuccess {
		m.AttributeModifier = p.ECE.Options
		m.VendorID = p.ECE.VendorID & 0xffff
	}
	_ = m.SetInfo(p.Info)
	_ = m.SetPrivateData(p.PrivateData)
	encoded(m.MarshalTo(e.out(c.addr).MAD[:]))
	e.setState(c, StateIdle)
	if c.sidrIn {
		if e.sidrRemote[c.sidrKey] == c {
			delete(e.sidrRemote, c.sidrKey)
		}
		c.sidrIn = false
	}
}

// recvSIDRREP is cm_sidr_rep_handler.
func (e *Engine) recvSIDRREP(v mad.SIDRREPView) {
	c := e.acquire(v.RequestID(), 0)
	if c == nil || c.state != StateSIDRREQSent {
		e.stats.Dropped++
		return
	}
	e.cancelMsg(c)
	e.setState(c, StateIdle)
	e.event(Event{Type: EventSIDRReply, ID: ID(c.localID), Context: c.context, PrivateData: e.keep(v.PrivateData()),
		ECE: v.ECE(), SIDR: SIDRInfo{Status: v.Status(), QPN: v.QPN(), QKey: v.QKey(), ServiceID: v.ServiceID(),
			Info: e.keep(v.Info())}})
}
