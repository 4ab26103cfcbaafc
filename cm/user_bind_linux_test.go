package cm

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
)

// The engine binds the zero address and :: as every device's address,
// IPv4 and IPv6 (Listen(":port") on the user backend), and a specific
// address, IPv4 or IPv6, only where an RDMA port has it as a RoCE v2 GID.
func TestUserBindAnyAddress(t *testing.T) {
	for _, tc := range []struct {
		addr netip.AddrPort
		want netip.AddrPort
		err  error
	}{
		{netip.AddrPortFrom(netip.Addr{}, 7471), netip.MustParseAddrPort("0.0.0.0:7471"), nil},
		{netip.MustParseAddrPort("[::]:7472"), netip.MustParseAddrPort("[::]:7472"), nil},
		{netip.MustParseAddrPort("0.0.0.0:7473"), netip.MustParseAddrPort("0.0.0.0:7473"), nil},
		{netip.MustParseAddrPort("[fe80::1]:7474"), netip.AddrPort{}, unix.ENODEV},
		{netip.MustParseAddrPort("192.0.2.9:7475"), netip.AddrPort{}, unix.ENODEV},
	} {
		u := &user{ids: map[uint32]*userID{}, bound: map[uint16][]uint32{}}
		x := &userID{}
		u.ids[1] = x
		err := u.bindLocked(1, x, tc.addr)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("bind %v: error %v, want %v", tc.addr, err, tc.err)
			continue
		}
		if x.src != tc.want {
			t.Errorf("bind %v: bound to %v, want %v", tc.addr, x.src, tc.want)
		}
	}
}
