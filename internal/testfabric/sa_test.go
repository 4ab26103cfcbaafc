package testfabric

import (
	"errors"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/sa"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestSAPathThenConnect resolves an InfiniBand path as the rdma_cm does
// (a PathRecord Get to the SA, over a link that loses the first two
// sends and duplicates the answer), then connects over it: the REQ's
// primary path carries the SA's LIDs, SL, rate and MTU, and both sides
// are established. The fabric is an InfiniBand subnet: the MADs go by
// LID.
func TestSAPathThenConnect(t *testing.T) {
	f := NewInfiniBand(2, 1, nil)
	f.RecordEvents = true
	a, b := f.Nodes[0], f.Nodes[1]
	for _, n := range f.Nodes {
		n.Policy = Policy{AutoAccept: true, AutoEstablish: true}
	}
	admin := f.SubnetAdmin()
	admin.SL, admin.MTU, admin.Rate, admin.PacketLifeTime = 5, rdma.MTU2048, 16, 14
	const port = 7471
	if _, err := b.Engine.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
		t.Fatal(err)
	}

	r := sa.NewResolver(sa.ResolverConfig{Timeout: 500 * time.Millisecond})
	o, err := r.Query(f.Now, 1, sa.CMQuery(a.GID, b.GID, 0xffff, mad.ServiceID(rdma.PortSpaceTCP, port)))
	if err != nil {
		t.Fatal(err)
	}
	out, lost := []sa.Outbound{o}, 2
	var res sa.Result
	for done := false; !done; {
		for _, o := range out {
			if lost > 0 {
				lost--
				continue
			}
			ans, ok := admin.Answer(o.MAD[:])
			if !ok {
				t.Fatal("the SA did not answer a PathRecord query")
			}
			for range 2 {
				if got, ok := r.Receive(ans[:]); ok {
					if done {
						t.Fatal("a duplicate answer made a second result")
					}
					res, done = got, true
				}
			}
		}
		if !done {
			f.Advance(500 * time.Millisecond)
			var results []sa.Result
			out, results = r.Advance(f.Now, out[:0], nil)
			if len(results) > 0 {
				t.Fatalf("query ended without an answer: %v", results[0].Err)
			}
		}
	}
	if res.Err != nil || len(res.Paths) != 1 || admin.Answered != 1 {
		t.Fatalf("result %+v after %d answers", res, admin.Answered)
	}
	p := res.Paths[0]
	if p.SLID != admin.LID(a) || p.DLID != admin.LID(b) || p.SL != 5 || p.MTU != rdma.MTU2048 || !p.Reversible {
		t.Fatalf("path %+v", p)
	}

	var req mad.REQ
	f.OnMessage = func(m Message) {
		if m.Kind == mad.AttrREQ && m.Fate == Delivered {
			if err := req.UnmarshalMAD(m.MAD); err != nil {
				t.Errorf("REQ on the wire: %v", err)
			}
		}
	}
	id := connectOver(t, f, a, b, port, p)
	got := req.Primary
	if got.LocalLID != p.SLID || got.RemoteLID != p.DLID || got.SL != p.SL || got.PacketRate != p.Rate ||
		!got.SubnetLocal || got.LocalGID != a.GID || got.RemoteGID != b.GID || req.PathMTU != p.MTU {
		t.Fatalf("REQ primary path %+v, MTU %v; want the SA's path %+v", got, req.PathMTU, p.PathRecord)
	}
	// The active side is established once it sends the RTU, the passive
	// side when the RTU arrives.
	if st, _ := a.Engine.State(id); st != engine.StateEstablished {
		t.Fatalf("active side in %v, want established", st)
	}
	// The application's QP (rdma_init_qp_attr) goes to the SA's LID
	// without a GRH.
	attr, _, err := a.Engine.InitQPAttr(id, qp.RTR)
	if ah := attr.AH; err != nil || ah.DLID != p.DLID || ah.SL != p.SL || ah.IsGlobal || ah.StaticRate != p.Rate || attr.PathMTU != p.MTU {
		t.Fatalf("RTR attributes %+v: %v", attr, err)
	}
	passive := false
	for _, ev := range f.Events {
		passive = passive || ev.Node == 2 && ev.Type == engine.EventEstablished
	}
	if !passive {
		t.Fatal("the passive side never reported established")
	}
}

// TestSAAnswersErrors: a query for an unknown GID gets no records
// (rdma.ErrNoRoute at the resolver), one without both GIDs in its mask
// insufficient components (rdma.ErrInvalidArgument).
func TestSAAnswersErrors(t *testing.T) {
	f := New(2, 1)
	admin := f.SubnetAdmin()
	r := sa.NewResolver(sa.ResolverConfig{})
	for _, c := range []struct {
		q    sa.Query
		want error
	}{
		{sa.CMQuery(f.Nodes[0].GID, rdma.GID{0xfe, 0x80, 15: 9}, 0xffff, 1), rdma.ErrNoRoute},
		{sa.Query{Method: sa.MethodGetTable, CompMask: sa.CompDGID, Record: sa.PathRecord{PathRecord: rdma.PathRecord{DGID: f.Nodes[1].GID}}},
			rdma.ErrInvalidArgument},
	} {
		o, err := r.Query(f.Now, 1, c.q)
		if err != nil {
			t.Fatal(err)
		}
		ans, ok := admin.Answer(o.MAD[:])
		if !ok {
			t.Fatal("no answer")
		}
		res, ok := r.Receive(ans[:])
		if !ok || !errors.Is(res.Err, c.want) {
			t.Errorf("result %v (taken %v), want %v", res.Err, ok, c.want)
		}
	}
	if _, ok := admin.Answer(make([]byte, 256)); ok {
		t.Error("the SA answered a MAD that is not a query")
	}
}
