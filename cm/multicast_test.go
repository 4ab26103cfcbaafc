package cm

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

// TestJoinNonMulticastRefused: a join on an address that is not a group is
// ErrInvalidArgument, names the address, reaches no backend and leaves no
// group behind; a group address on the same ID then joins and leaves.
func TestJoinNonMulticastRefused(t *testing.T) {
	fb := newFake()
	ch := newChannel(fb)
	t.Cleanup(func() { ch.Close() })
	id, err := ch.CreateID(rdma.PortSpaceUDP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Bind(netip.MustParseAddrPort("192.0.2.1:0")); err != nil {
		t.Fatal(err)
	}
	calls := len(fb.callLog())
	for _, a := range []string{"192.0.2.9", "2001:db8::1", "0.0.0.0", "::", "255.255.255.255"} {
		addr := netip.MustParseAddr(a)
		m, err := id.JoinMulticast(testCtx(t), addr, false, nil)
		if !errors.Is(err, ErrInvalidArgument) || m != nil {
			t.Errorf("join %s: %v, want ErrInvalidArgument", a, err)
			continue
		}
		if want := "cm: join multicast group " + addr.String() + ": not a multicast address: "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("join %s: %q", a, err)
		}
	}
	if n := len(fb.callLog()); n != calls {
		t.Errorf("refused joins reached the backend: %v", fb.callLog()[calls:])
	}
	ch.mu.Lock()
	left := len(ch.mcs)
	ch.mu.Unlock()
	if left != 0 {
		t.Errorf("%d groups left after refused joins", left)
	}
	for _, a := range []string{"239.1.2.3", "ff0e::1"} {
		m, err := id.JoinMulticast(testCtx(t), netip.MustParseAddr(a), true, nil)
		if err != nil {
			t.Fatalf("join %s: %v", a, err)
		}
		if err := m.Leave(); err != nil {
			t.Fatalf("leave %s: %v", a, err)
		}
	}
	log := fb.callLog()[calls:]
	if len(log) != 4 || log[0] != "join" || log[1] != "leave" {
		t.Errorf("backend calls %q, want join and leave twice", log)
	}
}

// TestDestroyForgetsGroups: destroying an ID drops its groups from the
// channel (the backend left them), and a late Leave is a no-op.
func TestDestroyForgetsGroups(t *testing.T) {
	fb := newFake()
	ch := newChannel(fb)
	t.Cleanup(func() { ch.Close() })
	id, err := ch.CreateID(rdma.PortSpaceUDP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Bind(netip.MustParseAddrPort("192.0.2.1:0")); err != nil {
		t.Fatal(err)
	}
	m, err := id.JoinMulticast(testCtx(t), netip.MustParseAddr("239.1.2.3"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Destroy(); err != nil {
		t.Fatal(err)
	}
	ch.mu.Lock()
	left := len(ch.mcs)
	ch.mu.Unlock()
	if left != 0 {
		t.Errorf("%d groups left after Destroy", left)
	}
	calls := len(fb.callLog())
	if err := m.Leave(); err != nil {
		t.Errorf("Leave after Destroy: %v", err)
	}
	if n := len(fb.callLog()); n != calls {
		t.Errorf("Leave after Destroy reached the backend: %v", fb.callLog()[calls:])
	}
}
