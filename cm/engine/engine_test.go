package engine_test

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// IBTA 12.9.6 / cm.c: REQ → REP → RTU, then DREQ → DREP and TimeWait on
// both sides, with the field values the Linux rdma_cm sends on RoCE.
func TestHandshakeAndTeardown(t *testing.T) {
	w, a, b := newWire(t)
	active, passive := establish(t, w, a, b)

	reqs := w.sentOf(mad.AttrREQ, 0)
	if len(reqs) != 1 {
		t.Fatalf("%d REQs:\n%s", len(reqs), w.trace())
	}
	req, err := mad.ParseREQ(reqs[0].mad[:])
	if err != nil {
		t.Fatal(err)
	}
	// cma_connect_ib: both response timeouts 20, 15 CM retries; local ACK
	// timeout cm_ack_timeout(15, 18) = 19; permissive LIDs off-subnet;
	// flow label (33805 × 31 + 7174) & 0xfffff = 6553.
	p := req.Primary()
	if req.LocalCMResponseTimeout() != 20 || req.RemoteCMResponseTimeout() != 20 || req.MaxCMRetries() != 15 ||
		p.LocalACKTimeout != 19 || p.LocalLID != 0xffff || p.RemoteLID != 0xffff || p.SubnetLocal ||
		p.FlowLabel != 6553 || req.ServiceID() != mad.ServiceID(rdma.PortSpaceTCP, testPort) || uint32(active) != req.LocalCommID() {
		t.Errorf("REQ fields: %s primary %+v", mad.Describe(reqs[0].mad[:]), p)
	}
	if got := req.Header().TransactionID(); got != engine.KernelTID(2, req.LocalCommID()) {
		t.Errorf("REQ TID %#x", got)
	}
	rep, _ := mad.ParseREP(w.sentOf(mad.AttrREP, 0)[0].mad[:])
	if rep.TargetACKDelay() != rxeACKDelay || rep.RemoteCommID() != uint32(active) || rep.LocalCommID() != uint32(passive) ||
		rep.Header().TransactionID() != req.Header().TransactionID() {
		t.Errorf("REP fields: %s", mad.Describe(rep.Bytes()))
	}
	// The passive event carries the IP header's addresses and the swapped
	// resources.
	ev := b.events[0]
	if !ev.Conn.HasIP || ev.Conn.Src.Port() != testSourcePort || ev.Conn.Dst.Port() != testPort ||
		ev.Conn.Src.Addr() != a.ip || ev.Conn.RemoteQPN != 0x11 || ev.Conn.StartingPSN != req.StartingPSN() {
		t.Errorf("CONNECT_REQUEST info %+v", ev.Conn)
	}
	if len(ev.PrivateData) != mad.REQUserDataSize {
		t.Errorf("CONNECT_REQUEST private data %d bytes, want the 56 after the IP header", len(ev.PrivateData))
	}

	start := len(w.sent)
	if err := a.e.Disconnect(w.now, active, []byte("bye")); err != nil {
		t.Fatal(err)
	}
	w.run()
	mustState(t, a, active, engine.StateDREQSent)
	if ev := b.lastEvent(t); ev.Type != engine.EventDisconnectRequest || string(ev.PrivateData[:3]) != "bye" {
		t.Fatalf("b: %v", &ev)
	}
	mustState(t, b, passive, engine.StateDREQRcvd)
	if err := b.e.Disconnect(w.now, passive, nil); err != nil {
		t.Fatal(err)
	}
	w.run()
	mustState(t, a, active, engine.StateTimeWait)
	mustState(t, b, passive, engine.StateTimeWait)
	if got := len(w.sentOf(mad.AttrDREQ, start)) + len(w.sentOf(mad.AttrDREP, start)); got != 2 {
		t.Fatalf("teardown sent %d MADs:\n%s", got, w.trace())
	}
	dreq, _ := mad.ParseDREQ(w.sentOf(mad.AttrDREQ, start)[0].mad[:])
	if dreq.RemoteQPNEECN() != 0x22 || dreq.Header().TransactionID() != req.Header().TransactionID() {
		t.Errorf("DREQ %s tid %#x", mad.Describe(dreq.Bytes()), dreq.Header().TransactionID())
	}
	drep, _ := mad.ParseDREP(w.sentOf(mad.AttrDREP, start)[0].mad[:])
	if drep.Header().TransactionID() != dreq.Header().TransactionID() {
		t.Errorf("DREP TID %#x, want the DREQ's", drep.Header().TransactionID())
	}

	// cm_enter_timewait: 2^(19-8) ms = 2048 ms on both sides (the active
	// side's av.timeout is cm_ack_timeout(15, 18) = 19; the passive side's
	// is the REQ's local ACK timeout, 19).
	w.advance(2047 * time.Millisecond)
	mustState(t, a, active, engine.StateTimeWait)
	mustState(t, b, passive, engine.StateTimeWait)
	w.advance(time.Millisecond)
	mustState(t, a, active, engine.StateIdle)
	mustState(t, b, passive, engine.StateIdle)
	if a.lastEvent(t).Type != engine.EventTimewaitExit || b.lastEvent(t).Type != engine.EventTimewaitExit {
		t.Fatalf("events a %v b %v", a.eventTypes(), b.eventTypes())
	}
	for _, n := range []*node{a, b} {
		if n.e.Timers() != 0 {
			t.Errorf("%s: %d timers left", n.name, n.e.Timers())
		}
	}
	if err := a.e.Destroy(w.now, active); err != nil {
		t.Fatal(err)
	}
	if err := b.e.Destroy(w.now, passive); err != nil {
		t.Fatal(err)
	}
	w.run()
	if a.e.Len() != 0 || b.e.Len() != 1 { // b keeps its listener
		t.Fatalf("IDs left: a %d b %d", a.e.Len(), b.e.Len())
	}
	if got := []engine.EventType{engine.EventConnectReply, engine.EventDisconnectReply, engine.EventTimewaitExit}; !slices.Equal(a.eventTypes(), got) {
		t.Errorf("a events %v, want %v", a.eventTypes(), got)
	}
}

// cm.c ib_send_cm_req + MAD layer: an unanswered REQ is resent every
// 2·conv(PLT) + conv(remote CM response timeout) = 2·1024 + 4096 ms, 15
// times; then REQ_ERROR and no REJ (cm_process_send_error).
func TestREQTimeout(t *testing.T) {
	w, a, b := newWire(t)
	w.drop = func(s sent) bool { return true }
	id, err := a.e.Connect(w.now, w.connectParams(a, b))
	if err != nil {
		t.Fatal(err)
	}
	w.run()
	const interval = 6144 * time.Millisecond
	w.advance(interval - time.Millisecond)
	if n := len(w.sentOf(mad.AttrREQ, 0)); n != 1 {
		t.Fatalf("%d REQs before the first timeout", n)
	}
	w.advance(time.Millisecond)
	if n := len(w.sentOf(mad.AttrREQ, 0)); n != 2 {
		t.Fatalf("%d REQs after the first timeout", n)
	}
	w.advance(14 * interval)
	reqs := w.sentOf(mad.AttrREQ, 0)
	if len(reqs) != 16 || reqs[15].retry != 15 || !bytes.Equal(reqs[0].mad[:], reqs[15].mad[:]) {
		t.Fatalf("%d REQs, last retry %d", len(reqs), reqs[len(reqs)-1].retry)
	}
	mustState(t, a, id, engine.StateREQSent)
	w.advance(interval)
	mustState(t, a, id, engine.StateIdle)
	if ev := a.lastEvent(t); ev.Type != engine.EventReqError || ev.ID != id {
		t.Fatalf("event %v", &ev)
	}
	if len(w.sent) != 16 {
		t.Fatalf("something besides the REQs was sent:\n%s", w.trace())
	}
	if a.e.Timers() != 0 {
		t.Fatal("timer left after REQ_ERROR")
	}
	if a.e.Stats().Retransmits != 15 {
		t.Fatalf("retransmits %d", a.e.Stats().Retransmits)
	}
}

// cm_dup_req_handler: a duplicate REQ while the rdma_cm's MRA is armed
// (MRA_REQ_SENT) is answered by an MRA with service timeout 24; the
// active side then waits conv(24) + conv(av.timeout) (cm_mra_handler).
func TestDuplicateREQGetsMRA(t *testing.T) {
	w, a, b := newWire(t)
	if _, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort}); err != nil {
		t.Fatal(err)
	}
	id, err := a.e.Connect(w.now, w.connectParams(a, b))
	if err != nil {
		t.Fatal(err)
	}
	w.run()
	passive := b.lastEvent(t).ID
	mustState(t, b, passive, engine.StateMRAREQSent)
	if n := len(w.sentOf(mad.AttrMRA, 0)); n != 0 {
		t.Fatal("MRA sent without a duplicate")
	}
	w.advance(6144 * time.Millisecond) // the REQ is resent
	mras := w.sentOf(mad.AttrMRA, 0)
	if len(mras) != 1 {
		t.Fatalf("MRAs %d:\n%s", len(mras), w.trace())
	}
	m, _ := mad.ParseMRA(mras[0].mad[:])
	if m.MessageMRAed() != mad.MRAedREQ || m.ServiceTimeout() != 24 || m.RemoteCommID() != uint32(id) || m.LocalCommID() != uint32(passive) {
		t.Fatalf("MRA %s", mad.Describe(m.Bytes()))
	}
	mustState(t, a, id, engine.StateMRAREQRcvd)
	if len(b.events) != 1 {
		t.Fatalf("duplicate REQ reported: %v", b.eventTypes())
	}
	// New wait: 2^16 ms + 2^(19-8) ms (av.timeout = PLT + 1 = 19).
	before := len(w.sentOf(mad.AttrREQ, 0))
	w.advance(65536*time.Millisecond + 2048*time.Millisecond - time.Millisecond)
	if n := len(w.sentOf(mad.AttrREQ, 0)); n != before {
		t.Fatalf("REQ resent before the MRA's wait: %d", n)
	}
	w.advance(time.Millisecond)
	if n := len(w.sentOf(mad.AttrREQ, 0)); n != before+1 {
		t.Fatalf("REQ not resent after the MRA's wait: %d", n)
	}
	// Accepting now still works: MRA_REQ_RCVD accepts the REP.
	if err := b.e.Accept(w.now, passive, engine.AcceptParams{QPN: 0x22, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	w.run()
	mustState(t, a, id, engine.StateMRAREPSent)
}

// cm_dup_rep_handler: a duplicate REP for an ESTABLISHED connection gets
// the RTU again; one while the active side's MRA is armed gets an MRA of
// the REP.
func TestDuplicateREP(t *testing.T) {
	w, a, b := newWire(t)
	if _, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort}); err != nil {
		t.Fatal(err)
	}
	id, _ := a.e.Connect(w.now, w.connectParams(a, b))
	w.run()
	passive := b.lastEvent(t).ID
	if err := b.e.Accept(w.now, passive, engine.AcceptParams{QPN: 0x22, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	w.run()
	mustState(t, a, id, engine.StateMRAREPSent)
	// The REP's timer (conv(20) = 4096 ms) resends it: MRA(REP) answers.
	w.advance(4096 * time.Millisecond)
	mras := w.sentOf(mad.AttrMRA, 0)
	if len(mras) != 1 {
		t.Fatalf("MRAs:\n%s", w.trace())
	}
	if m, _ := mad.ParseMRA(mras[0].mad[:]); m.MessageMRAed() != mad.MRAedREP {
		t.Fatalf("MRA of %v", m.MessageMRAed())
	}
	mustState(t, b, passive, engine.StateMRAREPRcvd)
	if err := a.e.Establish(w.now, id, []byte("rtu")); err != nil {
		t.Fatal(err)
	}
	w.run()
	mustState(t, b, passive, engine.StateEstablished)
	// Replay the REP: the active side answers with the same RTU.
	rep := w.sentOf(mad.AttrREP, 0)[0]
	n := len(w.sentOf(mad.AttrRTU, 0))
	a.e.Receive(w.now, engine.Addr{Port: 1, GID: b.gid, QPN: 1}, rep.mad[:])
	w.run()
	rtus := w.sentOf(mad.AttrRTU, 0)
	if len(rtus) != n+1 || rtus[n].mad != rtus[0].mad {
		t.Fatalf("duplicate REP: RTUs %d\n%s", len(rtus), w.trace())
	}
}

// cm_rep_handler: a REP whose remote ID matches no ID in REQ_SENT is
// dropped; Linux sends no REJ for it (neither INVALID_COMM_ID nor
// STALE_CONN).
func TestREPForUnknownIDDropped(t *testing.T) {
	w, a, b := newWire(t)
	_, _ = establish(t, w, a, b)
	rep := w.sentOf(mad.AttrREP, 0)[0]
	m, _ := mad.ParseREP(rep.mad[:])
	var r mad.REP
	m.Decode(&r)
	r.RemoteCommID ^= 0xdead
	r.LocalCommID ^= 0xbeef
	buf, _ := r.Marshal()
	before := len(w.sent)
	dropped := a.e.Stats().Dropped
	a.e.Receive(w.now, engine.Addr{Port: 1, GID: b.gid, QPN: 1}, buf)
	w.run()
	if len(w.sent) != before || a.e.Stats().Dropped != dropped+1 {
		t.Fatalf("unknown REP answered:\n%s", w.trace())
	}
}

// cm_match_req: no listener → REJ 8 (INVALID_SERVICE_ID), built by
// cm_issue_rej from the REQ: remote ID = REQ local ID, local ID = REQ data
// bytes 4..7 (the ECE vendor word), TID = the REQ's.
func TestNoListenerREJ8(t *testing.T) {
	w, a, b := newWire(t)
	p := w.connectParams(a, b)
	p.ECE = ece.ECE{VendorID: 0x15b3, Options: 0x30000001}
	id, err := a.e.Connect(w.now, p)
	if err != nil {
		t.Fatal(err)
	}
	w.run()
	rejs := w.sentOf(mad.AttrREJ, 0)
	if len(rejs) != 1 {
		t.Fatalf("REJs:\n%s", w.trace())
	}
	r, _ := mad.ParseREJ(rejs[0].mad[:])
	req, _ := mad.ParseREQ(w.sentOf(mad.AttrREQ, 0)[0].mad[:])
	if r.Reason() != mad.RejectInvalidServiceID || r.MessageRejected() != mad.RejectedREQ || r.RemoteCommID() != uint32(id) ||
		r.LocalCommID() != 0x15b3 || r.Header().TransactionID() != req.Header().TransactionID() {
		t.Fatalf("REJ %s", mad.Describe(r.Bytes()))
	}
	if ev := a.lastEvent(t); ev.Type != engine.EventRejected || ev.Reason != mad.RejectInvalidServiceID {
		t.Fatalf("a: %v", &ev)
	}
	mustState(t, a, id, engine.StateIdle)
	if b.e.Len() != 0 {
		t.Fatal("b kept an ID for the refused REQ")
	}
}

// cm_match_req: a REQ from a (CA GUID, QPN) that has an established
// connection is stale: REJ 10 (STALE_CONN) for the REQ, and a DREQ on the
// old connection. The requester, rejected with 10, enters TimeWait
// (cm_rej_handler).
func TestStaleConnectionREJ10(t *testing.T) {
	w, a, b := newWire(t)
	old, oldPassive := establish(t, w, a, b)
	start := len(w.sent)
	p := w.connectParams(a, b) // same QPN 0x11 from the same CA
	p.Src = netip.AddrPortFrom(a.ip, testSourcePort+1)
	id, err := a.e.Connect(w.now, p)
	if err != nil {
		t.Fatal(err)
	}
	w.run()
	rejs := w.sentOf(mad.AttrREJ, start)
	if len(rejs) != 1 {
		t.Fatalf("REJs:\n%s", w.trace())
	}
	if r, _ := mad.ParseREJ(rejs[0].mad[:]); r.Reason() != mad.RejectStaleConn || r.MessageRejected() != mad.RejectedREQ || r.RemoteCommID() != uint32(id) {
		t.Fatalf("REJ %s", mad.Describe(r.Bytes()))
	}
	mustState(t, a, id, engine.StateTimeWait)
	dreqs := w.sentOf(mad.AttrDREQ, start)
	if len(dreqs) != 1 || dreqs[0].from != b {
		t.Fatalf("DREQ on the old connection missing:\n%s", w.trace())
	}
	mustState(t, b, oldPassive, engine.StateDREQSent)
	mustState(t, a, old, engine.StateDREQRcvd)
}

// Simultaneous DREQs (IBTA 12.9.6, cm_dreq_handler in DREQ_SENT): each
// side cancels its DREQ, reports DREQ_RECEIVED, and its DREP puts it in
// TimeWait; the crossing DREPs are dropped.
func TestSimultaneousDREQ(t *testing.T) {
	w, a, b := newWire(t)
	active, passive := establish(t, w, a, b)
	if err := a.e.Disconnect(w.now, active, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.e.Disconnect(w.now, passive, nil); err != nil {
		t.Fatal(err)
	}
	w.run()
	mustState(t, a, active, engine.StateDREQRcvd)
	mustState(t, b, passive, engine.StateDREQRcvd)
	for _, n := range []*node{a, b} {
		if ev := n.lastEvent(t); ev.Type != engine.EventDisconnectRequest {
			t.Fatalf("%s: %v", n.name, &ev)
		}
	}
	_ = a.e.Disconnect(w.now, active, nil)
	_ = b.e.Disconnect(w.now, passive, nil)
	w.run()
	mustState(t, a, active, engine.StateTimeWait)
	mustState(t, b, passive, engine.StateTimeWait)
	// Nothing is resent: the DREQs were cancelled.
	n := len(w.sent)
	w.advance(time.Minute)
	if len(w.sent) != n {
		t.Fatalf("resent after crossing DREQs:\n%s", w.trace())
	}
	mustState(t, a, active, engine.StateIdle)
}

// cm_dreq_handler: a DREQ for an unknown connection is answered with a
// DREP built from it (cm_issue_drep); a DREQ in TimeWait gets the DREP
// again; a DREQ naming another QPN is ignored.
func TestDREQUnknownAndTimeWait(t *testing.T) {
	w, a, b := newWire(t)
	active, passive := establish(t, w, a, b)
	_ = a.e.Disconnect(w.now, active, nil)
	w.run()
	_ = b.e.Disconnect(w.now, passive, []byte("drep"))
	w.run()
	dreq := w.sentOf(mad.AttrDREQ, 0)[0]
	n := len(w.sentOf(mad.AttrDREP, 0))
	b.e.Receive(w.now, engine.Addr{Port: 1, GID: a.gid, QPN: 1}, dreq.mad[:])
	w.run()
	dreps := w.sentOf(mad.AttrDREP, 0)
	if len(dreps) != n+1 || dreps[n].mad != dreps[0].mad {
		t.Fatalf("DREQ in TimeWait:\n%s", w.trace())
	}
	// After TimeWait and Destroy the ID is unknown: still a DREP.
	w.advance(3 * time.Second)
	_ = b.e.Destroy(w.now, passive)
	b.e.Receive(w.now, engine.Addr{Port: 1, GID: a.gid, QPN: 1}, dreq.mad[:])
	w.run()
	dreps = w.sentOf(mad.AttrDREP, 0)
	d, _ := mad.ParseDREP(dreps[len(dreps)-1].mad[:])
	if len(dreps) != n+2 || d.LocalCommID() != uint32(passive) || d.RemoteCommID() != uint32(active) {
		t.Fatalf("DREQ for unknown ID:\n%s", w.trace())
	}
	// Wrong QPN: ignored.
	var m mad.DREQ
	v, _ := mad.ParseDREQ(dreq.mad[:])
	v.Decode(&m)
	m.RemoteQPNEECN = 0x999
	w2, c, d2 := newWire(t)
	act, _ := establish(t, w2, c, d2)
	m.LocalCommID, m.RemoteCommID = uint32(act), w2.sentOf(mad.AttrREP, 0)[0].repLocal()
	buf, _ := m.Marshal()
	before := len(w2.sent)
	d2.e.Receive(w2.now, engine.Addr{Port: 1, GID: c.gid, QPN: 1}, buf)
	w2.run()
	if len(w2.sent) != before {
		t.Fatalf("DREQ with a wrong QPN answered:\n%s", w2.trace())
	}
}

func (s sent) repLocal() uint32 {
	v, _ := mad.ParseREP(s.mad[:])
	return v.LocalCommID()
}

// rdma_reject_ece: REJ 35 from MRA_REQ_SENT carries the passive local ID
// and MessageRejected REQ (cm_format_rej), as in the kernel capture
// ece-rej35.pcap; the active side reports REJECTED with reason 35.
func TestRejectECE(t *testing.T) {
	w, a, b := newWire(t)
	_, _ = b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	p := w.connectParams(a, b)
	p.ECE = ece.ECE{VendorID: 0x15b3, Options: 0x30000001}
	id, _ := a.e.Connect(w.now, p)
	w.run()
	req := b.lastEvent(t)
	if req.ECE != (ece.ECE{VendorID: 0x15b3, Options: 0x30000001}) {
		t.Fatalf("remote ECE %v", req.ECE)
	}
	if err := b.e.Reject(w.now, req.ID, mad.RejectVendorOptionNotSupported, nil, nil); err != nil {
		t.Fatal(err)
	}
	w.run()
	r, _ := mad.ParseREJ(w.sentOf(mad.AttrREJ, 0)[0].mad[:])
	if r.Reason() != 35 || r.LocalCommID() != uint32(req.ID) || r.MessageRejected() != mad.RejectedREQ || r.ARILength() != 0 {
		t.Fatalf("REJ %s", mad.Describe(r.Bytes()))
	}
	if ev := a.lastEvent(t); ev.Type != engine.EventRejected || ev.Reason != 35 || ev.ID != id {
		t.Fatalf("a: %v", &ev)
	}
	mustState(t, a, id, engine.StateIdle)
	mustState(t, b, req.ID, engine.StateIdle)
	if a.e.Timers()+b.e.Timers() != 0 {
		t.Fatal("timers left")
	}
}

// cm_destroy_id in REQ_SENT: REJ 4 (TIMEOUT) with our CA GUID as ARI; the
// passive side finds its ID through the remote ID table
// (cm_acquire_rejected_id) and reports REJECTED.
func TestDestroyDuringREQSent(t *testing.T) {
	w, a, b := newWire(t)
	_, _ = b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	id, _ := a.e.Connect(w.now, w.connectParams(a, b))
	w.run()
	passive := b.lastEvent(t).ID
	if err := a.e.Destroy(w.now, id); err != nil {
		t.Fatal(err)
	}
	w.run()
	r, _ := mad.ParseREJ(w.sentOf(mad.AttrREJ, 0)[0].mad[:])
	if r.Reason() != mad.RejectTimeout || r.MessageRejected() != mad.RejectedOther || !bytes.Equal(r.ARI(), beGUID(a.guid)) {
		t.Fatalf("REJ %s", mad.Describe(r.Bytes()))
	}
	if ev := b.lastEvent(t); ev.Type != engine.EventRejected || ev.ID != passive || ev.Reason != mad.RejectTimeout {
		t.Fatalf("b: %v", &ev)
	}
	if a.e.Len() != 0 {
		t.Fatal("a kept the destroyed ID")
	}
	if _, err := a.e.Connect(w.now, w.connectParams(a, b)); err != nil {
		t.Fatal(err)
	}
}

func beGUID(g uint64) []byte {
	return []byte{byte(g >> 56), byte(g >> 48), byte(g >> 40), byte(g >> 32), byte(g >> 24), byte(g >> 16), byte(g >> 8), byte(g)}
}

// The REP is resent every conv(REQ local CM response timeout) = 4096 ms,
// REQ.MaxCMRetries = 15 times; then REP_ERROR, no REJ.
func TestREPTimeout(t *testing.T) {
	w, a, b := newWire(t)
	_, _ = b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	_, _ = a.e.Connect(w.now, w.connectParams(a, b))
	w.run()
	passive := b.lastEvent(t).ID
	w.drop = func(s sent) bool { return s.from == b }
	_ = b.e.Accept(w.now, passive, engine.AcceptParams{QPN: 0x22})
	w.run()
	w.advance(16*4096*time.Millisecond - time.Millisecond)
	mustState(t, b, passive, engine.StateREPSent)
	w.advance(time.Millisecond)
	mustState(t, b, passive, engine.StateIdle)
	if ev := b.lastEvent(t); ev.Type != engine.EventRepError {
		t.Fatalf("b: %v", &ev)
	}
	if n := len(w.sentOf(mad.AttrREP, 0)); n != 16 {
		t.Fatalf("%d REPs", n)
	}
	if n := len(w.sentOf(mad.AttrREJ, 0)); n != 0 {
		t.Fatal("REJ sent on REP timeout")
	}
}

// DREQ retries run out: DREQ_ERROR and TimeWait (cm_process_send_error).
func TestDREQTimeout(t *testing.T) {
	w, a, b := newWire(t)
	active, _ := establish(t, w, a, b)
	w.drop = func(s sent) bool { return true }
	_ = a.e.Disconnect(w.now, active, nil)
	// The DREQ uses the REQ's interval: 6144 ms, 15 retries.
	w.advance(16 * 6144 * time.Millisecond)
	mustState(t, a, active, engine.StateTimeWait)
	if ev := a.lastEvent(t); ev.Type != engine.EventDreqError {
		t.Fatalf("a: %v", &ev)
	}
	if n := len(w.sentOf(mad.AttrDREQ, 0)); n != 16 {
		t.Fatalf("%d DREQs", n)
	}
}

// A local communication ID is never reused while its TimeWait lasts, even
// after Destroy.
func TestNoIDReuseInTimeWait(t *testing.T) {
	w, a, b := newWire(t)
	rep := &repeatSource{ids: []uint32{0x100}}
	a2 := newNode(t, "a", "192.0.2.1", 1, func(c *engine.Config) { c.Source = rep })
	w.nodes[0] = a2
	active, _ := establish(t, w, a2, b)
	if uint32(active) != 0x100 {
		t.Fatalf("ID %v", active)
	}
	_ = a2.e.Destroy(w.now, active) // DREQ, TimeWait
	w.run()
	if _, err := a2.e.Connect(w.now, w.connectParams(a2, b)); !errors.Is(err, engine.ErrNoResources) || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("Connect during TimeWait with the only ID: %v", err)
	}
	w.advance(3 * time.Second)
	if a2.e.Len() != 0 {
		t.Fatalf("tombstone kept after TimeWait: %d", a2.e.Len())
	}
	if _, err := a2.e.Connect(w.now, w.connectParams(a2, b)); err != nil {
		t.Fatalf("Connect after TimeWait: %v", err)
	}
	_ = a
}

type repeatSource struct{ ids []uint32 }

func (r *repeatSource) CommID() uint32       { return r.ids[0] }
func (r *repeatSource) PSN() uint32          { return 0x123456 }
func (r *repeatSource) TID(id uint32) uint64 { return uint64(id) }

// SIDR (IBTA 12.11): a SIDR_REQ to a UD listener is reported; ReplySIDR
// answers with QPN and Q_Key; no listener gives status UNSUPPORTED.
func TestSIDR(t *testing.T) {
	w, a, b := newWire(t)
	_, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceUDP, Port: 9000, QPType: qp.UD})
	if err != nil {
		t.Fatal(err)
	}
	sp := engine.SIDRParams{PortSpace: rdma.PortSpaceUDP, Src: w.connectParams(a, b).Src,
		Dst: w.connectParams(a, b).Dst, Path: a.path(b), PrivateData: []byte("hello")}
	sp.Dst = netipPort(sp.Dst, 9000)
	id, err := a.e.ResolveSIDR(w.now, sp)
	if err != nil {
		t.Fatal(err)
	}
	w.run()
	req := b.lastEvent(t)
	if req.Type != engine.EventSIDRRequest || string(req.PrivateData[:5]) != "hello" || !req.SIDR.HasIP {
		t.Fatalf("b: %v", &req)
	}
	if err := b.e.ReplySIDR(w.now, req.ID, engine.SIDRReplyParams{QPN: 0x33, QKey: 0x01234567, ECE: ece.ECE{VendorID: 0x15b3, Options: 1}}); err != nil {
		t.Fatal(err)
	}
	w.run()
	rep := a.lastEvent(t)
	if rep.Type != engine.EventSIDRReply || rep.SIDR.QPN != 0x33 || rep.SIDR.QKey != 0x01234567 || rep.SIDR.Status != mad.SIDRSuccess ||
		rep.ECE.VendorID != 0x15b3 {
		t.Fatalf("a: %v %+v", &rep, rep.SIDR)
	}
	mustState(t, a, id, engine.StateIdle)
	// No listener on that port: UNSUPPORTED.
	sp.Dst = netipPort(sp.Dst, 9001)
	_, _ = a.e.ResolveSIDR(w.now, sp)
	w.run()
	if rep := a.lastEvent(t); rep.SIDR.Status != mad.SIDRUnsupported {
		t.Fatalf("a: %v", &rep)
	}
	// A REQ to the UD listener is refused by the rdma_cm: REJ 28.
	p := w.connectParams(a, b)
	p.Dst = netipPort(p.Dst, 9000)
	p.PortSpace = rdma.PortSpaceUDP
	_, _ = a.e.Connect(w.now, p)
	w.run()
	if ev := a.lastEvent(t); ev.Type != engine.EventRejected || ev.Reason != mad.RejectConsumerDefined {
		t.Fatalf("REQ to a UD listener: %v", &ev)
	}
}

// cm_lap_handler / cm_apr_handler: LAP and APR are dropped on RoCE.
func TestLAPDropped(t *testing.T) {
	w, a, b := newWire(t)
	active, passive := establish(t, w, a, b)
	lap := mad.LAP{LocalCommID: uint32(active), RemoteCommID: uint32(passive), RemoteQPNEECN: 0x22}
	buf, _ := lap.Marshal()
	before := len(w.sent)
	b.e.Receive(w.now, engine.Addr{Port: 1, GID: a.gid, QPN: 1}, buf)
	apr := mad.APR{LocalCommID: uint32(active), RemoteCommID: uint32(passive)}
	buf, _ = apr.Marshal()
	b.e.Receive(w.now, engine.Addr{Port: 1, GID: a.gid, QPN: 1}, buf)
	w.run()
	if len(w.sent) != before || b.e.Stats().LAPDropped != 2 {
		t.Fatalf("LAP/APR answered or not counted: %+v", b.e.Stats())
	}
	mustState(t, b, passive, engine.StateEstablished)
}

// With ManageQP the engine drives the QP as librdmacm does for library
// QPs; every transition passes qp.Check in the order given (the wire
// helper checks From against the QP's current state).
func TestManagedQPTransitions(t *testing.T) {
	w, a, b := newWire(t)
	_, _ = b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	p := w.connectParams(a, b)
	p.ManageQP = true
	id, err := a.e.Connect(w.now, p)
	if err != nil {
		t.Fatal(err)
	}
	w.run()
	req := b.lastEvent(t)
	if err := b.e.Accept(w.now, req.ID, engine.AcceptParams{QPN: 0x22, ResponderResources: 1, InitiatorDepth: 1, RNRRetryCount: 7, ManageQP: true}); err != nil {
		t.Fatal(err)
	}
	w.run()
	if ev := a.lastEvent(t); ev.Type != engine.EventEstablished {
		t.Fatalf("a: %v (managed QP must establish by itself)", &ev)
	}
	mustState(t, a, id, engine.StateEstablished)
	mustState(t, b, req.ID, engine.StateEstablished)
	want := func(n *node, seq ...qp.State) {
		t.Helper()
		var got []qp.State
		for _, tr := range n.qps {
			got = append(got, tr.To)
		}
		if !slices.Equal(got, seq) {
			t.Fatalf("%s: QP states %v, want %v", n.name, got, seq)
		}
	}
	want(a, qp.Init, qp.Init, qp.RTR, qp.RTS)
	want(b, qp.Init, qp.RTR, qp.RTS)
	// RTR carries the peer's QPN and PSNs cross over.
	rtrA, rtsA := a.qps[2].Attr, a.qps[3].Attr
	rtrB, rtsB := b.qps[1].Attr, b.qps[2].Attr
	if rtrA.DestQPN != 0x22 || rtrB.DestQPN != 0x11 || rtrA.RQPSN != rtsB.SQPSN || rtrB.RQPSN != rtsA.SQPSN ||
		rtsA.Timeout != 19 || rtsB.Timeout != 19 || rtrA.PathMTU != rdma.MTU1024 {
		t.Fatalf("QP attrs: rtrA %+v rtsA %+v rtrB %+v rtsB %+v", rtrA, rtsA, rtrB, rtsB)
	}
	// InitQPAttr agrees with what was applied.
	attr, mask, err := b.e.InitQPAttr(req.ID, qp.RTR)
	if err != nil || mask != b.qps[1].Mask || attr.DestQPN != 0x11 {
		t.Fatalf("InitQPAttr RTR: %v %v %+v", err, mask, attr)
	}
	_ = a.e.Disconnect(w.now, id, nil)
	w.run()
	want(a, qp.Init, qp.Init, qp.RTR, qp.RTS, qp.Err)
	// cm_init_qp_rtr_attr refuses DREQ_RCVD.
	if _, _, err := b.e.InitQPAttr(req.ID, qp.RTR); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("InitQPAttr in DREQ_RCVD: %v", err)
	}
}

// API state checks return EINVAL-matching errors, as ib_send_cm_* do.
func TestInvalidStates(t *testing.T) {
	w, a, b := newWire(t)
	active, passive := establish(t, w, a, b)
	for _, err := range []error{
		a.e.Accept(w.now, active, engine.AcceptParams{}),
		a.e.Establish(w.now, active, nil),
		b.e.MRA(w.now, passive, 24, nil),
	} {
		if !errors.Is(err, engine.ErrInvalidState) || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("error %v", err)
		}
	}
	if err := b.e.Notify(w.now, passive); !errors.Is(err, syscall.EISCONN) {
		t.Errorf("Notify when established: %v", err)
	}
	if err := a.e.Disconnect(w.now, 0x1234, nil); !errors.Is(err, engine.ErrUnknownID) {
		t.Errorf("unknown ID: %v", err)
	}
	if _, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort}); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("second listener: %v", err)
	}
	p := w.connectParams(a, b)
	p.PrivateData = make([]byte, 57)
	if _, err := a.e.Connect(w.now, p); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Errorf("57 bytes of private data: %v", err)
	}
}

// cm_migrate (ib_cm_notify with IB_EVENT_PATH_MIG): accepted on an
// ESTABLISHED connection, where it sends nothing and changes nothing (no
// alternate path on RoCE); EINVAL in any other state.
func TestMigrate(t *testing.T) {
	w, a, b := newWire(t)
	pending, err := a.e.Connect(w.now, w.connectParams(a, b))
	if err != nil {
		t.Fatal(err)
	}
	mustState(t, a, pending, engine.StateREQSent)
	if err := a.e.Migrate(w.now, pending); !errors.Is(err, engine.ErrInvalidState) || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Migrate in REQ_SENT: %v", err)
	}

	w, a, b = newWire(t)
	active, passive := establish(t, w, a, b)
	for _, x := range []struct {
		n  *node
		id engine.ID
	}{{a, active}, {b, passive}} {
		events := len(x.n.events)
		if err := x.n.e.Migrate(w.now, x.id); err != nil {
			t.Errorf("%s: Migrate when established: %v", x.n.name, err)
		}
		if x.n.e.HasReady() {
			t.Errorf("%s: Migrate produced output: %+v", x.n.name, x.n.e.Ready())
		}
		w.run()
		if len(x.n.events) != events {
			t.Errorf("%s: Migrate delivered events: %v", x.n.name, x.n.eventTypes()[events:])
		}
		mustState(t, x.n, x.id, engine.StateEstablished)
	}
	if err := a.e.Migrate(w.now, 0x1234); !errors.Is(err, engine.ErrUnknownID) {
		t.Errorf("Migrate of an unknown ID: %v", err)
	}
	w.drop = func(sent) bool { return true } // a stays in DREQ_SENT
	if err := a.e.Disconnect(w.now, active, nil); err != nil {
		t.Fatal(err)
	}
	w.run()
	mustState(t, a, active, engine.StateDREQSent)
	if err := a.e.Migrate(w.now, active); !errors.Is(err, engine.ErrInvalidState) || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Migrate in DREQ_SENT: %v", err)
	}
}

// cma_ib_req_handler: a REQ to an IP listener with a bad IP header, or for
// another address, is refused with REJ 28 and local ID 0 (REQ_RCVD).
func TestIPHeaderChecks(t *testing.T) {
	w, a, b := newWire(t)
	_, _ = b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort, Addr: b.ip})
	p := w.connectParams(a, b)
	p.PortSpace = 0
	p.ServiceID = mad.ServiceID(rdma.PortSpaceTCP, testPort)
	p.PrivateData = []byte{1} // CMA version 1
	id, _ := a.e.Connect(w.now, p)
	w.run()
	r, _ := mad.ParseREJ(w.sentOf(mad.AttrREJ, 0)[0].mad[:])
	if r.Reason() != mad.RejectConsumerDefined || r.LocalCommID() != 0 || r.RemoteCommID() != uint32(id) {
		t.Fatalf("REJ %s", mad.Describe(r.Bytes()))
	}
	p = w.connectParams(a, b)
	p.Dst = netipAddr(p.Dst, a.ip) // addressed to another IP
	p.Path.DGID = b.gid
	p.QPN = 0x12
	_, _ = a.e.Connect(w.now, p)
	w.run()
	if n := len(w.sentOf(mad.AttrREJ, 0)); n != 2 {
		t.Fatalf("REJs %d:\n%s", n, w.trace())
	}
}

// On RoCE a REQ whose path names a GID no peer can have (unspecified,
// loopback, multicast) is refused (REJ 12, INVALID_GID) to the packet's
// source, as the kernel's cm_init_av_by_path fails to resolve it; the
// replies would otherwise go nowhere.
func TestREQPathUnroutableGIDREJ12(t *testing.T) {
	for _, addr := range []string{"::", "0.0.0.0", "127.0.0.1", "::1", "ff02::1", "239.1.2.3"} {
		sgid := rdma.GIDFromAddr(netip.MustParseAddr(addr))
		w, a, b := newWire(t)
		_, _ = b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
		p := w.connectParams(a, b)
		p.Path.SGID = sgid
		id, err := a.e.Connect(w.now, p)
		if err != nil {
			t.Fatal(err)
		}
		w.run() // the wire fails the test if a MAD goes to an unknown GID
		rejs := w.sentOf(mad.AttrREJ, 0)
		if len(rejs) != 1 || rejs[0].from != b || rejs[0].to != a {
			t.Fatalf("path SGID %v: REJs:\n%s", sgid, w.trace())
		}
		if r, _ := mad.ParseREJ(rejs[0].mad[:]); r.Reason() != mad.RejectInvalidGID || r.RemoteCommID() != uint32(id) {
			t.Fatalf("REJ %s", mad.Describe(r.Bytes()))
		}
		if ev := a.lastEvent(t); ev.Type != engine.EventRejected || ev.Reason != mad.RejectInvalidGID {
			t.Fatalf("a: %v", &ev)
		}
		if b.e.Len() != 1 || len(b.events) != 0 { // the listener only
			t.Fatalf("b kept the refused REQ: %d IDs, events %v", b.e.Len(), b.eventTypes())
		}
	}
}

// cma_match_private_data: a wildcard listener takes requests of both
// families; with AFOnly, only those of the family it was bound with.
func TestAFOnly(t *testing.T) {
	w, a, b := newWire(t)
	for i, c := range []struct {
		addr   netip.Addr
		afOnly bool
		take   bool
	}{
		{netip.IPv6Unspecified(), true, false},
		{netip.IPv6Unspecified(), false, true},
		{netip.IPv4Unspecified(), true, true},
	} {
		port := testPort + uint16(i) + 1
		if _, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port, Addr: c.addr, AFOnly: c.afOnly}); err != nil {
			t.Fatal(err)
		}
		p := w.connectParams(a, b) // IPv4
		p.Dst = netip.AddrPortFrom(p.Dst.Addr(), port)
		p.QPN = 0x20 + uint32(i)
		events, rejs := len(b.events), len(w.sentOf(mad.AttrREJ, 0))
		if _, err := a.e.Connect(w.now, p); err != nil {
			t.Fatal(err)
		}
		w.run()
		took := len(b.events) > events
		if took != c.take || (len(w.sentOf(mad.AttrREJ, 0)) > rejs) == c.take {
			t.Errorf("listener %v AFOnly %v: request taken %v, want %v\n%s", c.addr, c.afOnly, took, c.take, w.trace())
		}
	}
}

// A listener's backlog drops extra requests silently (ENOMEM in
// cma_ib_req_handler); the peer's retransmission gets through once the
// backlog has room.
func TestBacklog(t *testing.T) {
	w, a, b := newWire(t)
	l, _ := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort, Backlog: 1})
	p := w.connectParams(a, b)
	id1, _ := a.e.Connect(w.now, p)
	p.QPN = 0x12
	id2, _ := a.e.Connect(w.now, p)
	w.run()
	if len(b.events) != 1 || len(w.sentOf(mad.AttrREJ, 0)) != 0 {
		t.Fatalf("backlog 1: events %v\n%s", b.eventTypes(), w.trace())
	}
	_ = b.e.Accept(w.now, b.events[0].ID, engine.AcceptParams{QPN: 0x22})
	w.run()
	w.advance(6144 * time.Millisecond)
	if len(b.events) != 2 || b.events[1].Listener != l {
		t.Fatalf("retried REQ not reported: %v", b.eventTypes())
	}
	_, _ = id1, id2
}

func netipPort(ap netip.AddrPort, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr(), port)
}
func netipAddr(ap netip.AddrPort, a netip.Addr) netip.AddrPort {
	return netip.AddrPortFrom(a, ap.Port())
}
