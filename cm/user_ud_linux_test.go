//go:build linux

package cm

import (
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestUserSIDREvents maps the engine's SIDR events as cma_sidr_rep_handler
// does: SUCCESS → ESTABLISHED with the QPN, Q_Key and an AH from the
// route; another status → UNREACHABLE with it; no answer → UNREACHABLE
// -ETIMEDOUT.
func TestUserSIDREvents(t *testing.T) {
	x := &userID{src: netip.MustParseAddrPort("192.0.2.1:40000"), dst: netip.MustParseAddrPort("192.0.2.2:7174"),
		path: engine.Path{PathRecord: rdma.PathRecord{DGID: rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.2")), HopLimit: 64, TrafficClass: 32},
			Port: 1, SGIDIndex: 3}}
	var r rawEvent
	ev := &engine.Event{Type: engine.EventSIDRReply, SIDR: engine.SIDRInfo{QPN: 0x11, QKey: UDPQKey}, PrivateData: []byte("pd")}
	if !sidrEventLocked(x, ev, &r) || r.typ != EventEstablished || r.ud.QPNum != 0x11 || r.ud.QKey != UDPQKey || string(r.ud.PrivateData) != "pd" {
		t.Fatalf("SUCCESS: %+v", r)
	}
	ah := r.ud.AH
	if !ah.IsGlobal || ah.PortNum != 1 || ah.GRH.SGIDIndex != 3 || ah.GRH.DGID != x.path.DGID || ah.GRH.HopLimit != 64 ||
		ah.GRH.TrafficClass != 32 || ah.GRH.FlowLabel != engine.RoCEFlowLabel(40000, 7174) {
		t.Errorf("AH %+v", ah)
	}
	r = rawEvent{}
	ev = &engine.Event{Type: engine.EventSIDRReply, SIDR: engine.SIDRInfo{Status: mad.SIDRNoQP}}
	if !sidrEventLocked(x, ev, &r) || r.typ != EventUnreachable || r.status != int32(mad.SIDRNoQP) {
		t.Errorf("NO_QP: %+v", r)
	}
	r = rawEvent{}
	if !sidrEventLocked(x, &engine.Event{Type: engine.EventSIDRError}, &r) || r.typ != EventUnreachable || r.status != etimedout {
		t.Errorf("no answer: %+v", r)
	}
	if sidrEventLocked(x, &engine.Event{Type: engine.EventEstablished}, &r) {
		t.Error("ESTABLISHED taken as a SIDR event")
	}
	for _, s := range []qp.State{qp.Init, qp.RTR, qp.RTS} {
		a, m, err := initQPAttrUD(1, s)
		if err != nil || a.State != s || m&qp.MaskState == 0 {
			t.Fatalf("%v: %+v %v %v", s, a, m, err)
		}
		if s == qp.Init && (a.QKey != UDPQKey || a.Port != 1 || m&qp.MaskQKey == 0) {
			t.Errorf("INIT: %+v %v", a, m)
		}
	}
	if _, _, err := initQPAttrUD(1, qp.Err); err == nil {
		t.Error("ERR accepted")
	}
}
