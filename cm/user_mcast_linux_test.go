//go:build linux

package cm

import (
	"net/netip"
	"testing"
)

// TestRoCEMGID checks cma_iboe_set_mgid's mapping of a group to its MGID.
func TestRoCEMGID(t *testing.T) {
	for _, c := range []struct {
		group string
		v2    bool
		want  string
	}{
		{"239.1.2.3", true, "::ffff:239.1.2.3"},
		{"239.1.2.3", false, "ff0e::ffff:ef01:203"}, // ff0e::ffff:239.1.2.3
		{"::ffff:224.0.0.9", true, "::ffff:224.0.0.9"},
		{"ff0e::1234", false, "ff0e::1234"},
	} {
		g := roceMGID(netip.MustParseAddr(c.group), c.v2)
		if got := netip.AddrFrom16(g).String(); got != c.want {
			t.Errorf("MGID of %s (v2 %v) = %s, want %s", c.group, c.v2, got, c.want)
		}
	}
}
