//go:build linux

package cm

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// createQPLoop sets up cmtime's create qp step on the channel's backend
// (BackendAuto: the kernel CM in the stock guests, the engine under
// vmexec -nocm-a): a route-resolved ID and the CQs of a first QP made on
// an ID of their own, as cmtime's static init attributes share them. It
// returns one QP create+destroy.
func createQPLoop(t testing.TB) (step func()) {
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { ch.Close() })
	local, err := netip.ParseAddr(guest.Local().Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kctx(t, time.Minute)
	id := routeResolvedID(t, ctx, ch, local, rdma.PortSpaceTCP, qp.RC)
	owner := routeResolvedID(t, ctx, ch, local, rdma.PortSpaceTCP, qp.RC)
	c := qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
	first, err := owner.CreateQP(QPInit{Cap: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.DestroyQP() })
	init := QPInit{Cap: c, SendCQ: first.SendCQ, RecvCQ: first.RecvCQ}
	t.Logf("backend %q", ch.Backend())
	step = func() {
		if _, err := id.CreateQP(init); err != nil {
			t.Fatal(err)
		}
		if err := id.DestroyQP(); err != nil {
			t.Fatal(err)
		}
	}
	return step
}

// routeResolvedID makes a synchronous ID of type t in port space ps on ch,
// with its address and route resolved towards dst (a fresh port), and
// destroys it when the test ends.
func routeResolvedID(t testing.TB, ctx context.Context, ch *Channel, dst netip.Addr, ps rdma.PortSpace, typ qp.QPType) *ID {
	t.Helper()
	id, err := ch.CreateID(ps, &IDOptions{Sync: true, QPType: typ})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { id.Destroy() })
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, netip.AddrPortFrom(dst, freePort()), 0); err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestGuestCreateQPAllocs bounds the Go heap allocations of one QP
// create+destroy with shared CQs: the library QP, and the verbs QP with its rxe state
// (rings and doorbell inside), on both backends (the kernel CM's
// INIT_QP_ATTR allocates nothing since its commands no longer go through
// rawConn.Control). The loop re-creates the QP of one ID, so the library
// QP is a new allocation each time; an ID's first QP lives in the ID
// (ID.qpMem), as in cmtime's step, which makes that one allocation.
func TestGuestCreateQPAllocs(t *testing.T) {
	guest.Require(t)
	step := createQPLoop(t)
	got := testing.AllocsPerRun(50, step)
	const want = 2.0
	if got > want {
		t.Errorf("QP create+destroy: %v allocations, want at most %v", got, want)
	}
	t.Logf("QP create+destroy: %v allocations", got)
}

// BenchmarkGuestCreateQPAuto is BenchmarkGuestCreateQP on BackendAuto,
// so that under vmexec -nocm-a it measures the engine's create qp step:
//
//	CGO_ENABLED=0 go test -run '^$' -bench GuestCreateQPAuto -benchmem -benchtime 2000x -exec "$PWD/bin/vmexec -nocm-a" ./cm/
func BenchmarkGuestCreateQPAuto(b *testing.B) {
	guest.Require(b)
	step := createQPLoop(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		step()
	}
}
