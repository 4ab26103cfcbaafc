//go:build linux

package cm

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// UD IDs on the user backend (RDMA_PS_UDP), as the rdma_cm runs them over
// ib_cm's SIDR: Connect sends a SIDR_REQ (cma_resolve_ib_udp), whose
// SIDR_REP becomes ESTABLISHED with the peer's QPN, Q_Key and an address
// handle from the resolved route (cma_sidr_rep_handler); a listener's
// SIDR_REQ becomes CONNECT_REQUEST, answered by Accept or Reject with a
// SIDR_REP (cma_send_sidr_rep).

// udPortSpace reports whether the user backend serves UD IDs of ps: only
// RDMA_PS_UDP (IPoIB's Q_Key comes from an IPoIB broadcast group, which
// RoCE has not; AF_IB is not wired).
func udPortSpace(ps rdma.PortSpace) bool { return ps == rdma.PortSpaceUDP }

// connectUD is rdma_connect on a UD ID: a SIDR_REQ with the IP header and
// the caller's private data (at most 180 bytes).
func (u *user) connectUD(h uint32, x *userID, p *ConnParam) error {
	if len(p.PrivateData) > mad.SIDRREQUserDataSize {
		u.mu.Unlock()
		return unix.EINVAL
	}
	port := x.port
	sp := engine.SIDRParams{Context: uint64(h), PortSpace: x.ps, Src: x.src, Dst: x.dst, Path: x.path,
		PrivateData: p.PrivateData}
	u.mu.Unlock()
	return port.d.Do(func(eng *engine.Engine, now time.Time) error {
		id, err := eng.ResolveSIDR(now, sp)
		if err != nil {
			return err
		}
		// Recorded before the driver can deliver the SIDR_REP.
		u.mu.Lock()
		x.eid, x.hasConn = id, true
		port.byEngine[id] = h
		u.mu.Unlock()
		return nil
	})
}

// acceptUD is rdma_accept on a UD ID: a SIDR_REP with status SUCCESS, the
// QP's number and RDMA_UDP_QKEY (the kernel takes the Q_Key from the
// caller only for AF_IB, which this backend does not serve).
func (u *user) acceptUD(port *userPort, eid engine.ID, x *userID, uid uint64, p *ConnParam) error {
	if len(p.PrivateData) > mad.SIDRREPPrivateDataSize || p.QPNum > 0xffffff {
		return unix.EINVAL
	}
	u.mu.Lock()
	x.uid = uid
	u.mu.Unlock()
	rp := engine.SIDRReplyParams{Status: mad.SIDRSuccess, QPN: p.QPNum, QKey: UDPQKey, PrivateData: p.PrivateData}
	return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.ReplySIDR(now, eid, rp) })
}

// rejectUD is rdma_reject on a UD ID: a SIDR_REP with status REJECT.
func rejectUD(port *userPort, eid engine.ID, pd []byte) error {
	if len(pd) > mad.SIDRREPPrivateDataSize {
		return unix.EINVAL
	}
	rp := engine.SIDRReplyParams{Status: mad.SIDRReject, PrivateData: pd}
	return port.d.Do(func(eng *engine.Engine, now time.Time) error { return eng.ReplySIDR(now, eid, rp) })
}

// initQPAttrUD is rdma_init_qp_attr on a UD ID (cma_ib_init_qp_attr):
// INIT takes the port, P_Key index 0 and RDMA_UDP_QKEY; RTR and RTS only
// the state (and RTS the send PSN), as librdmacm's ucma_init_ud_qp does.
func initQPAttrUD(port uint8, s qp.State) (qp.Attr, qp.Mask, error) {
	p := qp.CMParams{Port: port, QKey: UDPQKey}
	switch s {
	case qp.Init:
		return qp.InitAttr(p, qp.UD)
	case qp.RTR:
		return qp.RTRAttr(p, qp.UD)
	case qp.RTS:
		return qp.RTSAttr(p, qp.UD)
	}
	return qp.Attr{}, 0, unix.EINVAL
}

// udAH is the address handle of a resolved UD ID's peer
// (ib_init_ah_attr_from_path on the route cma_resolve_iboe_route made).
func udAH(x *userID) qp.AH {
	return qp.AH{
		GRH: qp.GRH{DGID: x.path.DGID, FlowLabel: engine.RoCEFlowLabel(x.src.Port(), x.dst.Port()),
			SGIDIndex: x.path.SGIDIndex, HopLimit: x.path.HopLimit, TrafficClass: x.path.TrafficClass},
		IsGlobal: true, PortNum: x.path.Port,
	}
}

// sidrEventLocked maps the engine's SIDR events (cma_ib_handler's
// IB_CM_SIDR_REP_RECEIVED and IB_CM_SIDR_REQ_ERROR): a SIDR_REP with
// SUCCESS is ESTABLISHED, one with another status UNREACHABLE with that
// status (positive, as the kernel reports it), and no answer UNREACHABLE
// with -ETIMEDOUT. It reports whether ev was one of them.
func sidrEventLocked(x *userID, ev *engine.Event, r *rawEvent) bool {
	switch ev.Type {
	case engine.EventSIDRReply:
		r.ud.PrivateData = append([]byte(nil), ev.PrivateData...)
		if ev.SIDR.Status != mad.SIDRSuccess {
			r.typ, r.status = EventUnreachable, int32(ev.SIDR.Status)
			return true
		}
		r.typ = EventEstablished
		r.ud.QPNum, r.ud.QKey, r.ud.AH = ev.SIDR.QPN, ev.SIDR.QKey, udAH(x)
	case engine.EventSIDRError:
		r.typ, r.status = EventUnreachable, etimedout
	default:
		return false
	}
	return true
}

// sidrRequestLocked is cma_ib_req_handler for a SIDR_REQ: a new UD ID for
// the listener's request, reported to the listener's uid with the
// request's private data (after the IP header).
func (u *user) sidrRequestLocked(p *userPort, ev *engine.Event) {
	lh, ok := p.byEngine[ev.Listener]
	l := u.ids[lh]
	if !ok || l == nil {
		return // the listener is being destroyed; the engine rejects with it
	}
	x := &userID{ps: l.ps, qpType: l.qpType, port: p, eid: ev.ID, hasConn: true, routed: true, tos: l.tos}
	if ev.SIDR.HasIP {
		x.src, x.dst = ev.SIDR.Dst, ev.SIDR.Src
	}
	if gid, ok := p.gidOf(rdma.GIDFromAddr(x.src.Addr())); ok && x.src.IsValid() {
		x.gid = gid
	}
	h := u.add(x)
	p.byEngine[ev.ID] = h
	pd := append([]byte(nil), ev.PrivateData...)
	u.queueLocked(rawEvent{uid: l.uid, handle: h, typ: EventConnectRequest,
		conn: ConnParam{PrivateData: pd}, ud: UDParam{PrivateData: pd}})
}
