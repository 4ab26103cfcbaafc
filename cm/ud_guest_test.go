//go:build linux

package cm

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestGuestUDSIDR resolves a UD service over loopback on the backend guest
// a has (the kernel CM in the stock pair, the engine under vmexec
// -nocm-a), with a library UD QP on the passive side: CreateQP moves it to
// RTS with RDMA_UDP_QKEY, Accept answers with its QPN, and the client's
// ESTABLISHED carries that QPN, the Q_Key and a global AH. A SIDR request
// to a port of guest b with no listener fails with a *SIDRError (status
// "unsupported service") matching ErrRejected and ECONNREFUSED.
func TestGuestUDSIDR(t *testing.T) {
	guest.Require(t)
	ctx := guestCtx(t, time.Minute)
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	t.Logf("backend %q", ch.Backend())
	addr := netip.AddrPortFrom(localAddr(t), 7391)
	conns0 := engineConns(t, ch)

	l, err := ch.CreateID(rdma.PortSpaceUDP, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy()
	if err := l.Bind(addr); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	id, err := ch.CreateID(rdma.PortSpaceUDP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer id.Destroy()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, addr, 0); err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- id.Connect(ctx, &ConnParam{PrivateData: []byte("ud"), QPNum: nextQPN()}) }()
	ev, err := ch.GetEvent(ctx)
	if err != nil || ev.Type != EventConnectRequest {
		t.Fatalf("server: %v %v", ev, err)
	}
	if string(ev.UD.PrivateData[:2]) != "ud" {
		t.Fatalf("SIDR_REQ private data %q", ev.UD.PrivateData)
	}
	pid := ev.ID
	ev.Ack()
	defer pid.Destroy()
	uq, err := pid.CreateQP(QPInit{})
	if err != nil {
		t.Fatal(err)
	}
	if st := uq.Verbs.State(); st != qp.RTS {
		t.Fatalf("library UD QP in %v, want RTS", st)
	}
	if a, _, err := pid.InitQPAttr(qp.Init); err != nil || a.QKey != UDPQKey {
		t.Fatalf("INIT attributes: %+v %v, want Q_Key %#x", a, err, UDPQKey)
	}
	if err := pid.Accept(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ud := id.UDParam()
	t.Logf("SIDR answer: QPN %#x QKey %#x AH %+v", ud.QPNum, ud.QKey, ud.AH)
	if ud.QPNum != uq.Num() || ud.QKey != UDPQKey || !ud.AH.IsGlobal || ud.AH.GRH.DGID != rdma.GIDFromAddr(addr.Addr()) {
		t.Fatalf("UD param %+v, want the server's QP %#x, RDMA_UDP_QKEY and a global AH to %v", ud, uq.Num(), addr.Addr())
	}

	peer, err := netip.ParseAddr(guest.Peer().Addr)
	if err != nil {
		t.Fatal(err)
	}
	dst := netip.AddrPortFrom(peer, 7399) // nothing listens here
	bad, err := ch.CreateID(rdma.PortSpaceUDP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Destroy()
	if err := bad.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
		t.Fatal(err)
	}
	if err := bad.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	err = bad.Connect(ctx, nil)
	t.Logf("SIDR to %v: %v", dst, err)
	var se *SIDRError
	if !errors.As(err, &se) || se.Status != mad.SIDRUnsupported || se.Addr != dst ||
		!errors.Is(err, ErrRejected) || !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want a *SIDRError with status unsupported service for %v", err, dst)
	}
	// Nothing left in the engine once the IDs are gone.
	for _, x := range []*ID{bad, id, pid, l} {
		if err := x.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	if n := engineConns(t, ch); n != conns0 {
		t.Errorf("the engine holds %d IDs after the UD IDs were destroyed, %d before", n, conns0)
	}
}

// engineConns counts the IDs the user backend's engines hold (-1 on the
// kernel backend).
func engineConns(t *testing.T, ch *Channel) int {
	u, ok := ch.b.(*user)
	if !ok {
		return -1
	}
	n := 0
	for _, p := range u.ports {
		if err := p.d.Do(func(e *engine.Engine, _ time.Time) error { n += e.Len(); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
