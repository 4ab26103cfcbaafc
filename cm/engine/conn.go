package engine

import (
	"encoding/binary"
	"time"

	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// conn is one ID: a connection (either side), a listener or a SIDR
// exchange. Its fields follow the kernel's struct cm_id_private. Those
// that a TimeWait exit, Destroy and release read come first, in the first
// cache line: a batch of exits then reads one line of each cold conn, not
// all four.
type conn struct {
	localID uint32
	// parent is the listener a passive ID came from.
	parent  uint32
	heapIdx int32

	state State
	// msgState is the state the outstanding MAD was sent in (the kernel's
	// msg->context[1]); a timeout in another state is stale.
	msgState State

	passive     bool
	destroyed   bool // Destroy was called; kept only to finish TimeWait
	manageQP    bool
	roce        bool
	inRemoteID  bool
	inRemoteQPN bool
	sidrIn      bool
	pending     bool // passive, counted in the listener's backlog
	// halfOpen: passive, counted in ho's half-open bound (backlog.go);
	// repQueued: also in ho's RTU queue, between hoPrev and hoNext.
	halfOpen  bool
	repQueued bool
	hasPD     bool // privateData is set
	qpType    qp.QPType
	qpState   qp.State

	msg     *[mad.MADSize]byte
	listen  *listenInfo
	context uint64

	remoteID uint32
	// retriesLeft counts resends left for the outstanding MAD; retrySent
	// counts those done.
	retriesLeft, retrySent uint8
	maxCMRetries           uint8
	// avTimeout is the QP local ACK timeout of the path (cm_av.timeout):
	// PacketLifeTime + 1, then cm_ack_timeout with the REP's ACK delay on
	// the active side. TimeWait lasts convertTimeout(avTimeout).
	avTimeout          uint8
	serviceTimeout     uint8
	initiatorDepth     uint8
	responderResources uint8
	retryCount         uint8
	rnrRetryCount      uint8
	targetACKDelay     uint8
	rate               uint8
	transport          mad.TransportServiceType
	pathMTU            rdma.MTU
	pkey               uint16

	localQPN, remoteQPN uint32
	sqPSN, rqPSN        uint32
	remoteCAGUID        uint64
	serviceID           uint64
	tid                 uint64

	// timeout is the retransmission interval (the kernel's timeout_ms);
	// curTimeout is the one in force, changed by an MRA.
	timeout, curTimeout time.Duration

	// addr is where this ID's MADs go (cm_av).
	addr    Addr
	sidrKey sidrKey
	// privateData is kept to resend an RTU, MRA or DREP for a duplicate.
	privateData []byte

	ho             *listenInfo
	hoPrev, hoNext *conn

	// 256 bytes in all: the allocator's 256-byte class puts each conn on
	// whole cache lines, so the fields above it come first in one line.
	_ [8]byte
}

type listenInfo struct {
	ps      rdma.PortSpace
	addr    rdma.GID
	anyAddr bool
	// family is 4 or 6 for a wildcard restricted to one family (AFOnly).
	family  uint8
	ip      bool
	qpType  qp.QPType
	backlog int
	pending int
	// halfOpen counts the passive IDs in a half-open state; repHead and
	// repTail are the oldest and newest of them waiting for an RTU.
	halfOpen         int
	repHead, repTail *conn
}

// keepPrivate keeps a copy of pd to resend with an answer to a duplicate.
func (c *conn) keepPrivate(pd []byte) {
	c.privateData, c.hasPD = nil, false
	if len(pd) > 0 {
		c.privateData, c.hasPD = append([]byte(nil), pd...), true
	}
}

func (c *conn) key() remoteKey    { return remoteKey{c.remoteCAGUID, c.remoteID} }
func (c *conn) qpnKey() remoteKey { return remoteKey{c.remoteCAGUID, c.remoteQPN} }

// insertRemoteID is cm_insert_remote_id: it returns the connection already
// known under the same (remote CA GUID, remote ID), or records c.
func (e *Engine) insertRemoteID(c *conn) *conn {
	o := e.remoteIDs.insert(c)
	if o == nil {
		c.inRemoteID = true
	}
	return o
}

// insertRemoteQPN is cm_insert_remote_qpn (stale connection detection).
func (e *Engine) insertRemoteQPN(c *conn) *conn {
	o := e.remoteQPNs.insert(c)
	if o == nil {
		c.inRemoteQPN = true
	}
	return o
}

// removeRemote is cm_remove_remote.
func (e *Engine) removeRemote(c *conn) {
	// An ID in a table is the entry under its key (checkInvariants):
	// insert never replaces an entry and the key fields do not change
	// while the ID is in.
	if c.inRemoteID {
		e.remoteIDs.remove(c)
		c.inRemoteID = false
	}
	if c.inRemoteQPN {
		e.remoteQPNs.remove(c)
		c.inRemoteQPN = false
	}
}

// resetToIdle is cm_reset_to_idle.
func (e *Engine) resetToIdle(c *conn) {
	e.cancelMsg(c)
	e.setState(c, StateIdle)
	e.removeRemote(c)
}

// enterTimewait is cm_enter_timewait: the ID leaves the remote tables and
// waits convertTimeout(av.timeout). Unlike the kernel, any outstanding MAD
// is cancelled here (the kernel cancels it in every caller but
// cm_send_rej_locked, whose stale REP then stops at the state check).
func (e *Engine) enterTimewait(c *conn) {
	e.cancelMsg(c)
	e.removeRemote(c)
	e.setState(c, StateTimeWait)
	e.arm(c, convertTimeout(c.avTimeout))
}

// track makes o the ID's outstanding MAD: resent every c.timeout,
// c.maxCMRetries times (ib_post_send_mad with msg->timeout_ms and
// msg->retries). state is the state it is sent in.
func (e *Engine) track(c *conn, o *Outbound, state State) {
	if c.msg == nil {
		c.msg = e.allocMsg()
	}
	*c.msg = o.MAD
	c.msgState = state
	c.retriesLeft = c.maxCMRetries
	c.retrySent = 0
	c.curTimeout = c.timeout
	e.arm(c, c.timeout)
}

// cancelMsg is ib_cancel_mad.
func (e *Engine) cancelMsg(c *conn) {
	if c.msg == nil {
		return
	}
	if len(e.msgs) < 1024 {
		e.msgs = append(e.msgs, c.msg)
	}
	c.msg = nil
	if c.state != StateTimeWait {
		e.disarm(c)
	}
}

// fire runs c's timer.
func (e *Engine) fire(c *conn) {
	if c.msg == nil {
		if c.state == StateTimeWait {
			e.timewaitExit(c)
		}
		return
	}
	if c.retriesLeft > 0 {
		c.retriesLeft--
		c.retrySent++
		o := e.out(c.addr)
		o.MAD = *c.msg
		o.Retry = c.retrySent
		e.stats.Retransmits++
		e.arm(c, c.curTimeout)
		return
	}
	e.sendError(c)
}

// sendError is cm_process_send_error for a MAD whose retries ran out. No
// REJ goes on the wire.
func (e *Engine) sendError(c *conn) {
	state := c.msgState
	e.cancelMsg(c)
	if state != c.state {
		return
	}
	var t EventType
	switch state {
	case StateREQSent, StateMRAREQRcvd:
		e.resetToIdle(c)
		t = EventReqError
	case StateREPSent, StateMRAREPRcvd:
		e.resetToIdle(c)
		e.unpend(c)
		t = EventRepError
	case StateDREQSent:
		e.enterTimewait(c)
		t = EventDreqError
	case StateSIDRREQSent:
		e.setState(c, StateIdle)
		t = EventSIDRError
	default:
		return
	}
	if t != EventDreqError {
		e.qpErr(c)
	}
	e.bareEvent(t, c)
}

// timewaitExit is cm_timewait_handler.
func (e *Engine) timewaitExit(c *conn) {
	if c.destroyed {
		e.release(c)
		return
	}
	e.setState(c, StateIdle)
	e.bareEvent(EventTimewaitExit, c)
}

// unpend takes a passive ID out of its listener's backlog.
func (e *Engine) unpend(c *conn) {
	if !c.pending {
		return
	}
	c.pending = false
	if l := e.conns.get(c.parent); l != nil && l.listen != nil {
		l.listen.pending--
	}
}

// --- QP transitions for IDs whose QP the engine drives ---

func (e *Engine) cmParams(c *conn) qp.CMParams {
	return qp.CMParams{
		Port:      c.addr.Port,
		PKeyIndex: c.addr.PKeyIndex,
		Path: qp.Path{
			PathRecord: rdma.PathRecord{DGID: c.addr.GID, DLID: c.addr.LID, HopLimit: c.addr.HopLimit,
				TrafficClass: c.addr.TrafficClass, FlowLabel: c.addr.FlowLabel, SL: c.addr.SL, Rate: c.rate, MTU: c.pathMTU},
			SGIDIndex: c.addr.SGIDIndex, RoCE: c.roce,
		},
		RemoteQPN:          c.remoteQPN,
		LocalPSN:           c.rqPSN,
		RemotePSN:          c.sqPSN,
		AckTimeout:         c.avTimeout,
		RetryCount:         c.retryCount,
		RNRRetryCount:      c.rnrRetryCount,
		InitiatorDepth:     c.initiatorDepth,
		ResponderResources: c.responderResources,
	}
}

type qpBuilder func(qp.CMParams, qp.QPType) (qp.Attr, qp.Mask, error)

// qpMove emits one transition built by b.
func (e *Engine) qpMove(c *conn, b qpBuilder) error {
	a, m, err := b(e.cmParams(c), c.qpType)
	if err != nil {
		return err
	}
	to := c.qpState
	if m&qp.MaskState != 0 {
		to = a.State
	}
	e.ready.QPTransitions = append(e.ready.QPTransitions, QPTransition{
		ID: ID(c.localID), QPN: c.localQPN, Type: c.qpType, From: c.qpState, To: to, Attr: a, Mask: m,
	})
	c.qpState = to
	return nil
}

// qpErr moves a driven QP to ERR (cma_modify_qp_err), when that is legal.
func (e *Engine) qpErr(c *conn) {
	if !c.manageQP || c.qpState == qp.Reset || c.qpState == qp.Err {
		return
	}
	e.ready.QPTransitions = append(e.ready.QPTransitions, QPTransition{
		ID: ID(c.localID), QPN: c.localQPN, Type: c.qpType, From: c.qpState, To: qp.Err,
		Attr: qp.Attr{State: qp.Err}, Mask: qp.MaskState,
	})
	c.qpState = qp.Err
}

// --- message formatting (cm_format_*) ---

func header(tid uint64) mad.Header { return mad.Header{TransactionID: tid} }

// encoded checks the result of a MarshalTo. Every field was range-checked
// at the API boundary or comes from a parsed MAD of the same width, so
// encoding cannot fail; a failure is a bug in the engine. (The builders
// are called on their concrete types: through mad.Message the structs
// would escape to the heap.)
func encoded(_ int, err error) {
	if err != nil {
		panic("engine: internal encode error: " + err.Error())
	}
}

// formatREJ is cm_format_rej: the local ID and MessageRejected depend on
// the state the REJ is sent from.
func (e *Engine) sendREJ(c *conn, from State, reason mad.RejectReason, ari, pd []byte) {
	m := &e.scratch.rej
	*m = mad.REJ{Header: header(c.tid), RemoteCommID: c.remoteID, LocalCommID: c.localID, Reason: reason}
	switch from {
	case StateREQRcvd:
		m.LocalCommID = 0
		m.MessageRejected = mad.RejectedREQ
	case StateMRAREQSent:
		m.MessageRejected = mad.RejectedREQ
	case StateREPRcvd, StateMRAREPSent:
		m.MessageRejected = mad.RejectedREP
	default:
		m.MessageRejected = mad.RejectedOther
	}
	_ = m.SetARI(ari)
	_ = m.SetPrivateData(pd)
	encoded(m.MarshalTo(e.out(c.addr).MAD[:]))
}

// sendRejLocked is cm_send_rej_locked.
func (e *Engine) sendRejLocked(c *conn, reason mad.RejectReason, ari, pd []byte) error {
	from := c.state
	switch from {
	case StateREQSent, StateMRAREQRcvd, StateREQRcvd, StateMRAREQSent, StateREPRcvd, StateMRAREPSent:
		e.resetToIdle(c)
	case StateREPSent, StateMRAREPRcvd:
		e.enterTimewait(c)
	default:
		return stateError("reject", c)
	}
	e.unpend(c)
	e.sendREJ(c, from, reason, ari, pd)
	return nil
}

func (e *Engine) sendMRA(c *conn, to Addr, what mad.MRAedMessage, serviceTimeout uint8, pd []byte) {
	m := &e.scratch.mra
	*m = mad.MRA{Header: header(c.tid), LocalCommID: c.localID, RemoteCommID: c.remoteID,
		MessageMRAed: what, ServiceTimeout: serviceTimeout}
	_ = m.SetPrivateData(pd)
	encoded(m.MarshalTo(e.out(to).MAD[:]))
}

func (e *Engine) sendRTU(c *conn, to Addr, pd []byte) {
	m := &e.scratch.rtu
	*m = mad.RTU{Header: header(c.tid), LocalCommID: c.localID, RemoteCommID: c.remoteID}
	_ = m.SetPrivateData(pd)
	encoded(m.MarshalTo(e.out(to).MAD[:]))
}

func (e *Engine) sendDREP(c *conn, to Addr, pd []byte) {
	m := &e.scratch.drep
	*m = mad.DREP{Header: header(c.tid), LocalCommID: c.localID, RemoteCommID: c.remoteID}
	_ = m.SetPrivateData(pd)
	encoded(m.MarshalTo(e.out(to).MAD[:]))
}

// formatDREQ is cm_format_dreq; its TID is cm_form_tid again.
func (e *Engine) formatDREQ(c *conn, o *Outbound, pd []byte) {
	m := &e.scratch.dreq
	*m = mad.DREQ{Header: header(e.cfg.Source.TID(c.localID)), LocalCommID: c.localID,
		RemoteCommID: c.remoteID, RemoteQPNEECN: c.remoteQPN}
	_ = m.SetPrivateData(pd)
	encoded(m.MarshalTo(o.MAD[:]))
}

// issueREJ is cm_issue_rej: a REJ answering a received MAD without an ID.
// Like the kernel it reads the received MAD as if it were a REJ: the REJ's
// remote ID is data bytes 0..3 and its local ID data bytes 4..7 (for a
// REQ, the vendor ID word).
func (e *Engine) issueREJ(from Addr, rcv []byte, reason mad.RejectReason, what mad.RejectedMessage) {
	m := &e.scratch.rej
	*m = mad.REJ{
		Header:          header(binary.BigEndian.Uint64(rcv[8:16])),
		RemoteCommID:    binary.BigEndian.Uint32(rcv[24:28]),
		LocalCommID:     binary.BigEndian.Uint32(rcv[28:32]),
		MessageRejected: what,
		Reason:          reason,
	}
	encoded(m.MarshalTo(e.out(replyAddr(from)).MAD[:]))
}

// issueDREP is cm_issue_drep: a DREP for a DREQ that matched no ID.
func (e *Engine) issueDREP(from Addr, v mad.DREQView) {
	m := &e.scratch.drep
	*m = mad.DREP{Header: header(v.Header().TransactionID()),
		LocalCommID: v.RemoteCommID(), RemoteCommID: v.LocalCommID()}
	encoded(m.MarshalTo(e.out(replyAddr(from)).MAD[:]))
}

// replyAddr is the address of a response built from a received MAD
// (cm_alloc_response_msg): back to the sender's GSI QP.
func replyAddr(from Addr) Addr {
	from.QPN = gsiQPN
	return from
}
