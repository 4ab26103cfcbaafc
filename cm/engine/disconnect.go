package engine

import (
	"time"

	"github.com/go-rdma/rdmacm/mad"
)

// sendDREQ is ib_send_cm_dreq: only an ESTABLISHED connection sends one;
// it is resent like the REQ or REP was.
func (e *Engine) sendDREQ(c *conn, pd []byte) error {
	if c.state != StateEstablished {
		return stateError("disconnect", c)
	}
	o := e.out(c.addr)
	e.formatDREQ(c, o, pd)
	e.setState(c, StateDREQSent)
	e.track(c, o, StateDREQSent)
	return nil
}

// Disconnect sends a DREQ from ESTABLISHED, or the DREP answering a DREQ
// (DREQ_RCVD), as rdma_disconnect does (ib_send_cm_dreq, then
// ib_send_cm_drep). A driven QP goes to ERR first (cma_modify_qp_err).
func (e *Engine) Disconnect(now time.Time, id ID, privateData []byte) error {
	e.setNow(now)
	const op = "disconnect"
	c, err := e.lookup(op, id)
	if err != nil {
		return err
	}
	switch c.state {
	case StateEstablished:
		if len(privateData) > mad.DREQPrivateDataSize {
			return opError(op, id, ErrInvalidArgument)
		}
		e.qpErr(c)
		return e.sendDREQ(c, privateData)
	case StateDREQRcvd:
		if len(privateData) > mad.DREPPrivateDataSize {
			return opError(op, id, ErrInvalidArgument)
		}
		e.qpErr(c)
		e.sendDREPLocked(c, privateData)
		return nil
	}
	return stateError(op, c)
}

// sendDREPLocked is cm_send_drep_locked: TimeWait, then the DREP.
func (e *Engine) sendDREPLocked(c *conn, pd []byte) {
	c.keepPrivate(pd)
	e.enterTimewait(c)
	e.sendDREP(c, c.addr, pd)
}

// recvDREQ is cm_dreq_handler.
func (e *Engine) recvDREQ(from Addr, v mad.DREQView) {
	c := e.acquire(v.RemoteCommID(), v.LocalCommID())
	if c == nil {
		// An unknown connection is answered anyway (cm_issue_drep).
		e.stats.Dropped++
		e.issueDREP(from, v)
		return
	}
	if c.localQPN != v.RemoteQPNEECN() {
		e.stats.Dropped++
		return
	}
	switch c.state {
	case StateREPSent, StateDREQSent, StateMRAREPRcvd:
		e.cancelMsg(c)
	case StateEstablished:
	case StateTimeWait:
		// Our DREP was lost: send it again, with the stored TID.
		e.sendDREP(c, replyAddr(from), c.privateData)
		return
	default: // DREQ_RCVD: duplicate; others: not connected
		e.stats.Dropped++
		return
	}
	e.unpend(c)
	e.setState(c, StateDREQRcvd)
	c.tid = v.Header().TransactionID()
	e.newEvent(EventDisconnectRequest, c).PrivateData = e.keep(v.PrivateData())
}

// recvDREP is cm_drep_handler.
func (e *Engine) recvDREP(v mad.DREPView) {
	c := e.acquire(v.RemoteCommID(), v.LocalCommID())
	if c == nil || c.state != StateDREQSent && c.state != StateDREQRcvd {
		e.stats.Dropped++
		return
	}
	e.enterTimewait(c)
	e.newEvent(EventDisconnectReply, c).PrivateData = e.keep(v.PrivateData())
}

// acquireRejected is cm_acquire_rejected_id: a REJ with reason TIMEOUT
// names the sender's CA GUID in its ARI and is matched through the remote
// ID table; a REJ of a REQ by our ID alone; any other by both IDs.
func (e *Engine) acquireRejected(v mad.REJView) *conn {
	if v.Reason() == mad.RejectTimeout {
		ari := v.ARIField()
		var guid uint64
		for _, b := range ari[:8] {
			guid = guid<<8 | uint64(b)
		}
		c := e.remoteIDs.get(remoteKey{guid, v.LocalCommID()})
		if c == nil {
			return nil
		}
		return e.acquire(c.localID, c.remoteID)
	}
	if v.MessageRejected() == mad.RejectedREQ {
		return e.acquire(v.RemoteCommID(), 0)
	}
	return e.acquire(v.RemoteCommID(), v.LocalCommID())
}

// recvREJ is cm_rej_handler.
func (e *Engine) recvREJ(v mad.REJView) {
	c := e.acquireRejected(v)
	if c == nil {
		e.stats.Dropped++
		return
	}
	switch c.state {
	case StateREQSent, StateMRAREQRcvd, StateREPSent, StateMRAREPRcvd, StateREQRcvd, StateMRAREQSent:
		e.cancelMsg(c)
		e.unpend(c)
		if v.Reason() == mad.RejectStaleConn {
			e.enterTimewait(c)
		} else {
			e.resetToIdle(c)
		}
	case StateDREQSent, StateREPRcvd, StateMRAREPSent, StateEstablished:
		// ESTABLISHED: the kernel accepts a REJ there while no LAP is
		// outstanding, which is always the case here.
		e.enterTimewait(c)
	default:
		e.stats.Dropped++
		return
	}
	e.qpErr(c)
	ev := e.newEvent(EventRejected, c)
	ev.Reason, ev.MessageRejected = v.Reason(), v.MessageRejected()
	ev.ARI, ev.PrivateData = e.keep(v.ARI()), e.keep(v.PrivateData())
}

// Destroy ends an ID as cm_destroy_id does: a pending REQ is withdrawn
// with REJ 4 (TIMEOUT, ARI = our CA GUID), an unanswered request gets REJ
// 28, an established connection a single DREQ, a received DREQ its DREP,
// a SIDR request a SIDR_REP with status REJECT. An ID that ends in
// TimeWait keeps its communication ID until TimeWait is over.
func (e *Engine) Destroy(now time.Time, id ID) error {
	e.setNow(now)
	c, err := e.lookup("destroy", id)
	if err != nil {
		return err
	}
	switch c.state {
	case StateSIDRREQRcvd:
		e.sendSIDRREP(c, &SIDRReplyParams{Status: mad.SIDRReject})
	case StateREQSent, StateMRAREQRcvd:
		e.cancelMsg(c)
		_ = e.sendRejLocked(c, mad.RejectTimeout, beGUID(e.cfg.CAGUID), nil)
	case StateREQRcvd, StateMRAREQSent, StateREPRcvd, StateMRAREPSent, StateREPSent, StateMRAREPRcvd:
		e.cancelMsg(c)
		_ = e.sendRejLocked(c, mad.RejectConsumerDefined, nil, nil)
	case StateEstablished:
		// cm_issue_dreq: one DREQ, not resent.
		e.formatDREQ(c, e.out(c.addr), nil)
		e.enterTimewait(c)
	case StateDREQSent:
		e.enterTimewait(c)
	case StateDREQRcvd:
		e.sendDREPLocked(c, nil)
	}
	e.qpErr(c)
	e.unpend(c)
	if c.state == StateTimeWait {
		c.destroyed = true
		return nil
	}
	e.release(c)
	return nil
}
