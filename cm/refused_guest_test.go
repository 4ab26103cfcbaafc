//go:build linux

package cm

import (
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestGuestConnectRefused connects from guest a to a port of guest b with
// no listener, on the backend guest a has (the kernel CM in the stock
// pair, the engine under vmexec -nocm-a): b's kernel CM answers the REQ
// with REJ reason 8 (invalid service ID), and the error reads "connection
// refused", names the address, matches ECONNREFUSED and ErrRejected, and
// keeps the reason. A ResolveAddr to an address with no route names the
// operation and the address.
func TestGuestConnectRefused(t *testing.T) {
	guest.Require(t)
	ctx := guestCtx(t, 2*time.Minute)
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	t.Logf("backend %q", ch.Backend())
	peer, err := netip.ParseAddr(guest.Peer().Addr)
	if err != nil {
		t.Fatal(err)
	}
	const port = 7399 // nothing listens here
	dst := netip.AddrPortFrom(peer, port)

	id, err := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer id.Destroy()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	err = id.Connect(ctx, &ConnParam{QPNum: nextQPN()})
	t.Logf("connect to %v: %v", dst, err)
	want := "cm: connect to " + dst.String() + ": connection refused: no listener (reason 8, invalid service ID)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	var re *RejectError
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, ErrRejected) ||
		!errors.As(err, &re) || re.Reason != mad.RejectInvalidServiceID || re.Addr != dst {
		t.Errorf("%v: want ECONNREFUSED, ErrRejected and a *RejectError with reason 8 and %v", err, dst)
	}

	// TEST-NET-2: no route in either guest.
	nowhere := netip.MustParseAddrPort("198.51.100.1:7399")
	id2, err := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer id2.Destroy()
	err = id2.ResolveAddr(ctx, netip.AddrPort{}, nowhere, time.Second)
	t.Logf("resolve %v: %v", nowhere, err)
	if err == nil || !strings.HasPrefix(err.Error(), "cm: resolve address 198.51.100.1: ") || strings.Count(err.Error(), ": ") != 2 {
		t.Errorf("got %v, want cm: resolve address 198.51.100.1: and the cause", err)
	}
	if !errors.Is(err, ErrNoRoute) {
		t.Errorf("%v: not ErrNoRoute", err)
	}
}
