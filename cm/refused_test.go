package cm

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// connectTo runs a synchronous ID through ResolveAddr and ResolveRoute to
// dst on the fake backend.
func connectTo(t *testing.T, f *fakeBackend, dst netip.AddrPort) *ID {
	t.Helper()
	c := newChannel(f)
	t.Cleanup(func() { c.Close() })
	id, err := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventAddrResolved})
	if err := id.ResolveAddr(testCtx(t), netip.AddrPort{}, dst, 0); err != nil {
		t.Fatal(err)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventRouteResolved})
	if err := id.ResolveRoute(testCtx(t), 0); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestConnectRefused: the REJ the peer's CM sends for a port with no
// listener (reason 8, invalid service ID; the kernel CM reports it as
// REJECTED with status 8 and so does the user backend) reads "connection
// refused", names the address, and matches ECONNREFUSED as net's errors
// do, ErrRejected, and a *RejectError with the reason.
func TestConnectRefused(t *testing.T) {
	dst := netip.MustParseAddrPort("192.0.2.2:7471")
	const want = "cm: connect to 192.0.2.2:7471: connection refused: no listener (reason 8, invalid service ID)"
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if err.Error() != want {
			t.Errorf("%s: %q, want %q", what, err, want)
		}
		var re *RejectError
		if !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, ErrRejected) || !errors.Is(err, rdma.ErrRejected) ||
			!errors.As(err, &re) || re.Reason != mad.RejectInvalidServiceID || re.Addr != dst {
			t.Errorf("%s: %v does not match ECONNREFUSED, ErrRejected and a *RejectError with reason 8 and the address", what, err)
		}
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno != syscall.ECONNREFUSED {
			t.Errorf("%s: the errno is %v, want ECONNREFUSED", what, errno)
		}
	}

	f := newFake()
	id := connectTo(t, f, dst)
	go f.push(rawEvent{uid: id.uid, typ: EventRejected, status: int32(mad.RejectInvalidServiceID)})
	check("sync Connect", id.Connect(testCtx(t), nil))

	// An asynchronous ID gets the same error from the event.
	f = newFake()
	c := newChannel(f)
	defer c.Close()
	ctx := testCtx(t)
	aid, err := c.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := func(want EventType) *Event {
		t.Helper()
		ev, err := c.GetEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != want {
			t.Fatalf("event %v, want %v", ev.Type, want)
		}
		t.Cleanup(func() { ev.Ack() })
		return ev
	}
	if err := aid.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
		t.Fatal(err)
	}
	f.push(rawEvent{uid: aid.uid, typ: EventAddrResolved})
	next(EventAddrResolved)
	if err := aid.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	f.push(rawEvent{uid: aid.uid, typ: EventRouteResolved})
	next(EventRouteResolved)
	if err := aid.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	f.push(rawEvent{uid: aid.uid, typ: EventRejected, status: int32(mad.RejectInvalidServiceID)})
	check("Event.Err", next(EventRejected).Err())
}

// TestConnectRejectedByApp: another REJ reason reads "rejected" with the
// reason's name, and still matches ErrRejected and ECONNREFUSED (as
// librdmacm's rdma_connect reports every REJECTED).
func TestConnectRejectedByApp(t *testing.T) {
	dst := netip.MustParseAddrPort("192.0.2.2:7471")
	f := newFake()
	id := connectTo(t, f, dst)
	go f.push(rawEvent{uid: id.uid, typ: EventRejected, status: int32(mad.RejectConsumerDefined)})
	err := id.Connect(testCtx(t), nil)
	const want = "cm: connect to 192.0.2.2:7471: connection rejected: reason 28 (consumer defined)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if !errors.Is(err, ErrRejected) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("%v: not ErrRejected and ECONNREFUSED", err)
	}
}

// TestResolveAddrNamesAddress: a failed ResolveAddr names the operation
// and the address, whether the backend refuses the command or reports
// ADDR_ERROR, with the sentinel and the errno reachable.
func TestResolveAddrNamesAddress(t *testing.T) {
	dst := netip.MustParseAddrPort("192.0.2.99:7471")
	const want = "cm: resolve address 192.0.2.99: network is unreachable"
	for _, viaEvent := range []bool{false, true} {
		f := newFake()
		if !viaEvent {
			f.failOn["resolveAddr"] = unix.ENETUNREACH
		}
		c := newChannel(f)
		id, err := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
		if err != nil {
			t.Fatal(err)
		}
		if viaEvent {
			go f.push(rawEvent{uid: id.uid, typ: EventAddrError, status: -int32(unix.ENETUNREACH)})
		}
		err = id.ResolveAddr(testCtx(t), netip.AddrPort{}, dst, 0)
		if err == nil || err.Error() != want {
			t.Errorf("event %v: got %v, want %q", viaEvent, err, want)
		}
		if !errors.Is(err, ErrNoRoute) || !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("event %v: %v: not ErrNoRoute and ENETUNREACH", viaEvent, err)
		}
		if viaEvent {
			// ADDR_ERROR with ENODEV: the route leads through a netdev
			// without RDMA; ErrNoRoute, not ErrNoDevice.
			c2 := newChannel(f)
			id2, err := c2.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
			if err != nil {
				t.Fatal(err)
			}
			go f.push(rawEvent{uid: id2.uid, typ: EventAddrError, status: -int32(unix.ENODEV)})
			err = id2.ResolveAddr(testCtx(t), netip.AddrPort{}, dst, 0)
			if want := "cm: resolve address 192.0.2.99: address does not route over RDMA: " + syscall.ENODEV.Error(); err == nil || err.Error() != want {
				t.Errorf("got %v, want %q", err, want)
			}
			if !errors.Is(err, ErrNoRoute) || errors.Is(err, ErrNoDevice) || !errors.Is(err, syscall.ENODEV) {
				t.Errorf("%v: want ErrNoRoute and ENODEV, not ErrNoDevice", err)
			}
			c2.Close()
		}
		c.Close()
	}
}
