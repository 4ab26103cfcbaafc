package uverbs

import (
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

func TestIsMulticastGID(t *testing.T) {
	for s, want := range map[string]bool{
		"ff0e::ffff:239.1.2.3": true, // RoCE v1 MGID of an IPv4 group
		"::ffff:239.1.2.3":     true, // RoCE v2 MGID of an IPv4 group
		"::ffff:224.0.0.1":     true,
		"ff12:401b::1":         true, // IB IPv4 broadcast-style MGID
		"::ffff:192.0.2.1":     false,
		"fe80::1":              false,
		"::":                   false,
		"2001:db8::1":          false,
	} {
		if got := IsMulticastGID(rdma.GID(netip.MustParseAddr(s).As16())); got != want {
			t.Errorf("IsMulticastGID(%s) = %v", s, got)
		}
	}
}
