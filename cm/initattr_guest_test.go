//go:build linux

package cm

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// countingInit counts the backend's INIT_QP_ATTR commands.
type countingInit struct {
	backend
	n atomic.Int32
}

func (c *countingInit) initQPAttr(h uint32, s qp.State) (qp.Attr, qp.Mask, error) {
	c.n.Add(1)
	return c.backend.initQPAttr(h, s)
}

// TestGuestCreateQPInitAttrShared checks ID.createQPInitAttr against the
// backend (BackendAuto: the kernel CM in the stock guests, the engine
// under vmexec -nocm-a, as make vmtest runs it): CreateQP on IDs that
// have not connected asks for the INIT attributes of an RC QP on a RoCE
// port once per device and port, and what the first ID got is what the
// backend answers every later ID (its own INIT_QP_ATTR, asked after its
// QP is made). UD QPs still ask every time (the Q_Key is the ID's).
func TestGuestCreateQPInitAttrShared(t *testing.T) {
	guest.Require(t)
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatalf("open the rdma_cm: %v", err)
	}
	t.Logf("backend %q", ch.Backend())
	defer ch.Close()
	counter := &countingInit{backend: ch.b}
	ch.b = counter
	local, err := netip.ParseAddr(guest.Local().Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kctx(t, time.Minute)
	resolved := func(ps rdma.PortSpace, typ qp.QPType) *ID { return routeResolvedID(t, ctx, ch, local, ps, typ) }
	c := qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}

	spaces := []rdma.PortSpace{rdma.PortSpaceTCP, rdma.PortSpaceIB, rdma.PortSpaceTCP, rdma.PortSpaceIB, rdma.PortSpaceTCP}
	user := ch.Backend() == BackendUser
	if user { // the engine has the TCP port space only, and no UD
		spaces = []rdma.PortSpace{rdma.PortSpaceTCP, rdma.PortSpaceTCP, rdma.PortSpaceTCP}
	}
	var rc []*ID
	for _, ps := range spaces {
		rc = append(rc, resolved(ps, qp.RC))
	}
	before := counter.n.Load()
	for i, id := range rc {
		q, err := id.CreateQP(QPInit{Cap: c})
		if err != nil {
			t.Fatalf("RC ID %d: CreateQP: %v", i, err)
		}
		t.Cleanup(func() { id.DestroyQP() })
		if s := q.Verbs.State(); s != qp.Init {
			t.Errorf("RC ID %d: QP in %v after CreateQP, want INIT", i, s)
		}
	}
	if got := counter.n.Load() - before; got != 1 {
		t.Errorf("%d RC QPs asked INIT_QP_ATTR %d times, want once", len(rc), got)
	}
	vd, err := rc[0].device()
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	for i := range vd.activeInit {
		if vd.activeInit[i].Load() != nil {
			entries++
		}
	}
	cached := vd.activeInit[rc[0].devPort].Load()
	if cached == nil || entries != 1 {
		t.Fatalf("shared INIT attributes for port %d: %v (%d entries), want one", rc[0].devPort, cached != nil, entries)
	}
	if cached.attr.State != qp.Init || cached.mask&qp.MaskState == 0 {
		t.Errorf("shared INIT attributes %+v mask %v: not INIT", cached.attr, cached.mask)
	}
	for i, id := range rc {
		a, m, err := id.InitQPAttr(qp.Init) // the kernel's answer for this ID
		if err != nil {
			t.Fatalf("RC ID %d: InitQPAttr: %v", i, err)
		}
		if diff := cmp.Diff(cmInitAttr{cached.attr, cached.mask}, cmInitAttr{a, m}, cmp.AllowUnexported(cmInitAttr{})); diff != "" {
			t.Errorf("RC ID %d: the kernel's INIT attributes differ from the shared ones (-shared +kernel):\n%s", i, diff)
		}
	}

	if user {
		return
	}
	var ud []*ID
	for range 3 {
		ud = append(ud, resolved(rdma.PortSpaceUDP, qp.UD))
	}
	before = counter.n.Load()
	for i, id := range ud {
		if _, err := id.CreateQP(QPInit{Cap: c}); err != nil {
			t.Fatalf("UD ID %d: CreateQP: %v", i, err)
		}
		t.Cleanup(func() { id.DestroyQP() })
	}
	if got := counter.n.Load() - before; got != int32(len(ud)) {
		t.Errorf("%d UD QPs asked INIT_QP_ATTR %d times, want once each", len(ud), got)
	}
}
