//go:build linux

package cm

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// countingInit counts the backend's INIT_QP_ATTR commands and keeps each
// ID's last answer.
type countingInit struct {
	backend
	n    atomic.Int32
	mu   sync.Mutex
	last map[uint32]initAnswer
}

// initAnswer is one INIT_QP_ATTR answer.
type initAnswer struct {
	Attr qp.Attr
	Mask qp.Mask
}

func (c *countingInit) initQPAttr(h uint32, s qp.State) (qp.Attr, qp.Mask, error) {
	c.n.Add(1)
	a, m, err := c.backend.initQPAttr(h, s)
	c.mu.Lock()
	c.last[h] = initAnswer{a, m}
	c.mu.Unlock()
	return a, m, err
}

// TestGuestCreateQPInitAttrAsked checks that CreateQP asks the backend
// (BackendAuto: the kernel CM in the stock guests, the engine under
// vmexec -nocm-a, as make vmtest runs it) for every QP's INIT attributes,
// as librdmacm does, instead of reusing an earlier ID's answer: the
// P_Key index in it follows the port's P_Key table, which can change
// under a live device. Each QP is then in INIT, and the answer it got is
// what the backend answers its ID again.
func TestGuestCreateQPInitAttrAsked(t *testing.T) {
	guest.Require(t)
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatalf("open the rdma_cm: %v", err)
	}
	t.Logf("backend %q", ch.Backend())
	defer ch.Close()
	counter := &countingInit{backend: ch.b, last: map[uint32]initAnswer{}}
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
	if user { // the engine's connected IDs are the TCP port space's
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
	if got := counter.n.Load() - before; got != int32(len(rc)) {
		t.Errorf("%d RC QPs asked INIT_QP_ATTR %d times, want once each", len(rc), got)
	}
	for i, id := range rc {
		counter.mu.Lock()
		got, ok := counter.last[id.handle]
		counter.mu.Unlock()
		a, m, err := id.InitQPAttr(qp.Init) // the backend's answer for this ID now
		if err != nil {
			t.Fatalf("RC ID %d: InitQPAttr: %v", i, err)
		}
		if !ok {
			t.Fatalf("RC ID %d: CreateQP did not ask for its own INIT attributes", i)
		}
		if diff := cmp.Diff(got, initAnswer{a, m}); diff != "" {
			t.Errorf("RC ID %d: CreateQP's INIT attributes differ from the backend's (-CreateQP +backend):\n%s", i, diff)
		}
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
