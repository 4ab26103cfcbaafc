package testfabric

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/sa"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// resolveIB asks f's SA for the path from a to b as the rdma_cm does
// (sa.CMQuery through the sans-I/O resolver) and returns the record.
// connectOver connects a to b's port over the SA's path p on port 1 and
// runs the fabric until it is quiet.
func connectOver(t *testing.T, f *Fabric, a, b *Node, port uint16, p sa.PathRecord) engine.ID {
	t.Helper()
	params := a.ConnectParams(b, port)
	params.Path = engine.Path{PathRecord: p.PathRecord, Port: 1}
	id, err := a.Engine.Connect(f.Now, params)
	if err != nil {
		t.Fatal(err)
	}
	f.Run(1000)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	return id
}

func resolveIB(t *testing.T, f *Fabric, admin *SubnetAdmin, a, b *Node, sid uint64) sa.PathRecord {
	t.Helper()
	r := sa.NewResolver(sa.ResolverConfig{})
	o, err := r.Query(f.Now, 1, sa.CMQuery(a.GID, b.GID, 0xffff, sid))
	if err != nil {
		t.Fatal(err)
	}
	ans, ok := admin.Answer(o.MAD[:])
	if !ok {
		t.Fatal("the SA did not answer")
	}
	res, ok := r.Receive(ans[:])
	if !ok || res.Err != nil || len(res.Paths) != 1 {
		t.Fatalf("SA result %+v (taken %v)", res, ok)
	}
	return res.Paths[0]
}

// ibWire records the MADs delivered on an InfiniBand fabric, copied.
type ibWire struct{ msgs []Message }

func (w *ibWire) hook(f *Fabric) {
	f.OnMessage = func(m Message) {
		if m.Fate == Delivered {
			m.MAD = append([]byte(nil), m.MAD...)
			w.msgs = append(w.msgs, m)
		}
	}
}

// check fails t unless every delivered MAD went to the LID of the node
// that got it, on SL sl, without a GRH, and reports the kinds seen.
func (w *ibWire) check(t *testing.T, f *Fabric, sl uint8) map[mad.AttributeID]int {
	t.Helper()
	kinds := map[mad.AttributeID]int{}
	for _, m := range w.msgs {
		kinds[m.Kind]++
		if m.DLID != f.Nodes[m.To].LID || m.DLID == 0 || m.GRH || m.SL != sl {
			t.Errorf("%v from node %d to node %d: DLID %d SL %d GRH %v; want DLID %d SL %d, no GRH",
				m.Kind, m.From+1, m.To+1, m.DLID, m.SL, m.GRH, f.Nodes[m.To].LID, sl)
		}
	}
	return kinds
}

// TestInfiniBandConnectDisconnect runs the rdma_cm's whole RC life on an
// InfiniBand subnet with ib_cm's addressing: an SA path, the REQ to its
// DLID, a passive ConnectRequest whose path is LID-routed (RoCE false,
// the LIDs swapped to that side, hop limit 0), REP, RTU, DREQ and DREP
// each to the peer's LID without a GRH, and QP address vectors of DLID
// and SL without a GRH on both sides. A third node sees nothing.
func TestInfiniBandConnectDisconnect(t *testing.T) {
	f := NewInfiniBand(3, 7, nil)
	f.RecordEvents = true
	a, b, c := f.Nodes[0], f.Nodes[1], f.Nodes[2]
	a.Policy = Policy{AutoEstablish: true, ManageQP: true}
	b.Policy = Policy{AutoAccept: true, AutoDisconnect: true, ManageQP: true}
	admin := f.SubnetAdmin()
	admin.SL, admin.MTU, admin.Rate, admin.PacketLifeTime = 3, rdma.MTU2048, 16, 14
	const port = 7471
	if _, err := b.Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
		t.Fatal(err)
	}
	p := resolveIB(t, f, admin, a, b, mad.ServiceID(rdma.PortSpaceTCP, port))
	var w ibWire
	w.hook(f)
	rtr := map[int]qp.AH{}
	f.OnQP = func(n *Node, tr *engine.QPTransition) {
		if tr.To == qp.RTR {
			rtr[n.Index] = tr.Attr.AH
			if tr.Attr.PathMTU != rdma.MTU2048 {
				t.Errorf("node %s RTR path MTU %v", n.Name, tr.Attr.PathMTU)
			}
		}
	}
	id := connectOver(t, f, a, b, port, p)
	if st, _ := a.Engine.State(id); st != engine.StateEstablished {
		t.Fatalf("active side in %v", st)
	}
	var req *engine.Event
	for i := range f.Events {
		if ev := &f.Events[i]; ev.Node == 2 && ev.Type == engine.EventConnectRequest {
			req = &ev.Event
		}
	}
	if req == nil {
		t.Fatal("no CONNECT_REQUEST at the passive side")
	}
	got := req.Conn.Path
	want := engine.Path{PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: b.GID, DGID: a.GID, SLID: b.LID, DLID: a.LID,
		SL: 3, Rate: 16, MTU: rdma.MTU2048, PacketLifeTime: got.PacketLifeTime}, Port: 1}
	if got != want {
		t.Fatalf("passive path\n got %+v\nwant %+v", got, want)
	}
	for i, peer := range []*Node{b, a} {
		ah, ok := rtr[i]
		if !ok || ah.DLID != peer.LID || ah.SL != 3 || ah.IsGlobal || ah.StaticRate != 16 || ah.PortNum != 1 {
			t.Errorf("node %d RTR address vector %+v (seen %v); want DLID %d, SL 3, rate 16, no GRH", i+1, ah, ok, peer.LID)
		}
	}

	if err := a.Engine.Disconnect(f.Now, id, nil); err != nil {
		t.Fatal(err)
	}
	f.Run(1000)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	kinds := w.check(t, f, 3)
	for _, k := range []mad.AttributeID{mad.AttrREQ, mad.AttrREP, mad.AttrRTU, mad.AttrDREQ, mad.AttrDREP} {
		if kinds[k] != 1 {
			t.Errorf("%v delivered %d times, want once (all: %v)", k, kinds[k], kinds)
		}
	}
	for _, m := range w.msgs {
		if m.To == c.Index || m.From == c.Index {
			t.Errorf("node 3 took part: %v %d->%d", m.Kind, m.From+1, m.To+1)
		}
	}
	var exits int
	for _, ev := range f.Events {
		if ev.Type == engine.EventTimewaitExit {
			exits++
		}
		if ev.Type == engine.EventDisconnectReply && ev.Node != 1 || ev.Type == engine.EventDisconnectRequest && ev.Node != 2 {
			t.Errorf("%v at node %d", ev.Type, ev.Node)
		}
	}
	if exits != 2 {
		t.Fatalf("%d TIMEWAIT_EXITs, want one per side", exits)
	}
	for _, n := range []*Node{a, b} {
		for qpn, st := range n.QPs {
			if st != qp.Err {
				t.Errorf("node %s QP %#x in %v after the disconnect", n.Name, qpn, st)
			}
		}
	}
}

// TestInfiniBandReject: a consumer's REJ and cm_issue_rej's REJ for an
// unknown service both go to the requester's LID without a GRH.
func TestInfiniBandReject(t *testing.T) {
	f := NewInfiniBand(2, 3, nil)
	f.RecordEvents = true
	a, b := f.Nodes[0], f.Nodes[1]
	b.OnEvent = func(n *Node, ev *engine.Event) {
		if ev.Type == engine.EventConnectRequest {
			if err := n.Engine.Reject(f.Now, ev.ID, mad.RejectConsumerDefined, nil, []byte("busy")); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := b.Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7471}); err != nil {
		t.Fatal(err)
	}
	var w ibWire
	w.hook(f)
	for _, port := range []uint16{7471, 9999} {
		if _, err := f.Connect(0, 1, port); err != nil {
			t.Fatal(err)
		}
	}
	f.Run(1000)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if kinds := w.check(t, f, 0); kinds[mad.AttrREQ] != 2 || kinds[mad.AttrREJ] != 2 || len(kinds) != 2 {
		t.Fatalf("delivered %v, want 2 REQs and 2 REJs", kinds)
	}
	var reasons []mad.RejectReason
	for _, ev := range f.Events {
		if ev.Type == engine.EventRejected && ev.Node == 1 {
			reasons = append(reasons, ev.Reason)
			if ev.Reason == mad.RejectConsumerDefined && string(trimZero(ev.PrivateData)) != "busy" {
				t.Errorf("REJ private data %q", ev.PrivateData)
			}
		}
	}
	if len(reasons) != 2 || reasons[0] != mad.RejectConsumerDefined || reasons[1] != mad.RejectInvalidServiceID {
		t.Fatalf("active side rejected with %v, want consumer-defined then invalid service ID", reasons)
	}
	if a.Engine.Len() != 2 { // the two IDs, back in IDLE
		t.Errorf("active engine holds %d IDs", a.Engine.Len())
	}
}

func trimZero(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// TestInfiniBandSIDR resolves a UD service by SIDR on an InfiniBand
// subnet: the SIDR_REQ goes to the path's DLID, the SIDR_REP back to the
// requester's LID. Two requesters without a GRH (so with no source GID)
// that draw the same request ID are told apart by their LIDs, as the
// kernel's SIDR table keys them: each gets its own SIDR_REP.
func TestInfiniBandSIDR(t *testing.T) {
	f := NewInfiniBand(3, 5, nil)
	f.RecordEvents = true
	a, b, c := f.Nodes[0], f.Nodes[1], f.Nodes[2]
	// Node 2 answers once both requests are in: both are then in its
	// SIDR table at once.
	var pending []engine.ID
	b.OnEvent = func(_ *Node, ev *engine.Event) {
		if ev.Type == engine.EventSIDRRequest {
			pending = append(pending, ev.ID)
		}
	}
	if _, err := b.Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceUDP, Port: 7000, QPType: qp.UD}); err != nil {
		t.Fatal(err)
	}
	var w ibWire
	w.hook(f)
	var sidrREQ []byte
	f.Filter = func(from, to *Node, m []byte) Action {
		if attrOf(m) == mad.AttrSIDRREQ && from == a && sidrREQ == nil {
			sidrREQ = append([]byte(nil), m...)
			// The same request from node 3, with node 1's request ID.
			f.Inject(c.Index, b.Index, sidrREQ)
		}
		return Deliver
	}
	cp := a.ConnectParams(b, 7000)
	id, err := a.Engine.ResolveSIDR(f.Now, engine.SIDRParams{PortSpace: rdma.PortSpaceUDP, Src: cp.Src, Dst: cp.Dst, Path: cp.Path})
	if err != nil {
		t.Fatal(err)
	}
	f.Stabilize()
	if len(pending) != 2 {
		t.Fatalf("%d SIDR requests at node 2, want 2", len(pending))
	}
	for _, pid := range pending {
		if err := b.Engine.ReplySIDR(f.Now, pid, engine.SIDRReplyParams{QPN: 0x99, QKey: 0x01234567}); err != nil {
			t.Fatal(err)
		}
	}
	f.Run(1000)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	w.check(t, f, 0)
	var reps []int
	for _, m := range w.msgs {
		if m.Kind == mad.AttrSIDRREP {
			reps = append(reps, m.To)
		}
	}
	if len(reps) != 2 || reps[0] == reps[1] || reps[0]+reps[1] != a.Index+c.Index {
		t.Fatalf("SIDR_REPs to nodes %v, want one to node 1 and one to node 3", reps)
	}
	var reply *engine.Event
	for i, ev := range f.Events {
		if ev.Type == engine.EventSIDRReply && ev.Node == 1 {
			reply = &f.Events[i].Event
		}
	}
	if reply == nil || reply.ID != id || reply.SIDR.Status != mad.SIDRSuccess || reply.SIDR.QKey != 0x01234567 || reply.SIDR.QPN != 0x99 {
		t.Fatalf("SIDR reply %+v", reply)
	}
}

// TestInfiniBandRoutedREQ: a path with a hop limit above 1 (another
// subnet) makes the REQ carry the permissive LID and SubnetLocal 0
// (cm_format_req); the passive side then takes the packet's source LID
// and SL and the received GRH (cm_process_routed_req), so the REP and
// the QP's address vector carry a GRH to the requester's GID and LID.
func TestInfiniBandRoutedREQ(t *testing.T) {
	f := NewInfiniBand(2, 11, nil)
	f.RecordEvents = true
	a, b := f.Nodes[0], f.Nodes[1]
	a.Policy = Policy{AutoEstablish: true}
	b.Policy = Policy{AutoAccept: true, ManageQP: true}
	if _, err := b.Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7471}); err != nil {
		t.Fatal(err)
	}
	var req mad.REQ
	var w ibWire
	w.hook(f)
	var ah *qp.AH
	f.OnQP = func(n *Node, tr *engine.QPTransition) {
		if n == b && tr.To == qp.RTR {
			ah = &tr.Attr.AH
		}
	}
	p := a.ConnectParams(b, 7471)
	p.Path.HopLimit, p.Path.SL = 4, 6
	if _, err := a.Engine.Connect(f.Now, p); err != nil {
		t.Fatal(err)
	}
	f.Run(1000)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range w.msgs {
		if !m.GRH || m.DLID != f.Nodes[m.To].LID || m.SL != 6 {
			t.Errorf("%v to node %d: DLID %d SL %d GRH %v", m.Kind, m.To+1, m.DLID, m.SL, m.GRH)
		}
		if m.Kind == mad.AttrREQ {
			if err := req.UnmarshalMAD(m.MAD); err != nil {
				t.Fatal(err)
			}
		}
	}
	if pri := req.Primary; pri.SubnetLocal || pri.LocalLID != 0xffff || pri.RemoteLID != 0xffff || pri.HopLimit != 4 {
		t.Fatalf("REQ primary path %+v", pri)
	}
	var got *engine.Path
	for i := range f.Events {
		if ev := &f.Events[i]; ev.Type == engine.EventConnectRequest {
			got = &ev.Conn.Path
		}
	}
	if got == nil || got.RoCE || got.DLID != a.LID || got.SLID != 0 || got.SL != 6 || got.HopLimit != 0xff || got.DGID != a.GID {
		t.Fatalf("passive path %+v", got)
	}
	if ah == nil || !ah.IsGlobal || ah.DLID != a.LID || ah.GRH.DGID != a.GID || ah.GRH.HopLimit != 0xff || ah.SL != 6 {
		t.Fatalf("passive RTR address vector %+v", ah)
	}
}

// TestInfiniBandLIDCheck proves the fabric routes by LID and that the
// check bites: a REQ whose DLID is node 3's goes to node 3 whatever its
// DGID says (node 3 has no listener and rejects it; node 2 sees
// nothing); a REQ to a LID no node has, or with a GRH for another node's
// GID, is lost and fails the run with an error.
func TestInfiniBandLIDCheck(t *testing.T) {
	t.Run("routed by DLID", func(t *testing.T) {
		f := NewInfiniBand(3, 1, nil)
		f.RecordEvents = true
		if _, err := f.Nodes[1].Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7471}); err != nil {
			t.Fatal(err)
		}
		var w ibWire
		w.hook(f)
		p := f.Nodes[0].ConnectParams(f.Nodes[1], 7471)
		p.Path.DLID = f.Nodes[2].LID
		if _, err := f.Nodes[0].Engine.Connect(f.Now, p); err != nil {
			t.Fatal(err)
		}
		f.Run(1000)
		if err := f.Err(); err != nil {
			t.Fatal(err)
		}
		if len(w.msgs) != 2 || w.msgs[0].To != 2 || w.msgs[1].Kind != mad.AttrREJ || w.msgs[1].To != 0 {
			t.Fatalf("delivered %+v, want the REQ at node 3 and its REJ at node 1", w.msgs)
		}
		for _, ev := range f.Events {
			if ev.Node == 2 {
				t.Errorf("node 2 reported %v", ev.Type)
			}
		}
	})
	for _, c := range []struct {
		name string
		edit func(f *Fabric, p *engine.Path)
		want string
	}{
		{"unknown LID", func(f *Fabric, p *engine.Path) { p.DLID = 9 }, "to LID 0x9 QP 1: no such node"},
		{"GRH for another node", func(f *Fabric, p *engine.Path) { p.HopLimit, p.DGID = 1, f.Nodes[2].GID }, "with a GRH for"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := NewInfiniBand(3, 1, nil)
			if _, err := f.Nodes[1].Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7471}); err != nil {
				t.Fatal(err)
			}
			p := f.Nodes[0].ConnectParams(f.Nodes[1], 7471)
			c.edit(f, &p.Path)
			p.MaxCMRetries = 1
			if _, err := f.Nodes[0].Engine.Connect(f.Now, p); err != nil {
				t.Fatal(err)
			}
			f.Run(1000)
			st := f.Stats()
			if st.Delivered != 0 || st.Lost != 2 || st.Sent != 2 { // the REQ and its one resend
				t.Fatalf("wire %+v, want two REQs sent and lost, none delivered", st)
			}
			err := f.Err()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("fabric error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestInfiniBandPathChecks: Connect and ResolveSIDR take a path whose
// RoCE flag matches its port's link layer, and on InfiniBand a unicast
// DLID.
func TestInfiniBandPathChecks(t *testing.T) {
	ib := NewInfiniBand(2, 1, nil)
	roce := New(2, 1)
	base := ib.Nodes[0].ConnectParams(ib.Nodes[1], 7471)
	for _, c := range []struct {
		name string
		f    *Fabric
		edit func(p *engine.Path)
	}{
		{"RoCE path on an InfiniBand port", ib, func(p *engine.Path) { p.RoCE = true }},
		{"DLID 0", ib, func(p *engine.Path) { p.DLID = 0 }},
		{"multicast DLID", ib, func(p *engine.Path) { p.DLID = 0xc001 }},
		{"InfiniBand path on a RoCE port", roce, func(p *engine.Path) {}},
	} {
		p := base
		c.edit(&p.Path)
		e := c.f.Nodes[0].Engine
		if _, err := e.Connect(c.f.Now, p); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("%s: Connect: %v", c.name, err)
		}
		if _, err := e.ResolveSIDR(c.f.Now, engine.SIDRParams{ServiceID: 1, Path: p.Path}); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("%s: ResolveSIDR: %v", c.name, err)
		}
		if e.Len() != 0 {
			t.Errorf("%s: the engine holds %d IDs", c.name, e.Len())
		}
	}
	if _, err := engine.New(engine.Config{Source: engine.NewSeededSource(1, 1), InfiniBandPorts: []uint8{0}}); err == nil {
		t.Error("port 0 as an InfiniBand port was accepted")
	}
}
