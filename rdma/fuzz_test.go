package rdma

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseGID parses arbitrary sysfs GID text: what parses formats back
// to the canonical sysfs form (8 groups of 4 lowercase hex digits), which
// parses to the same GID; and any 16 bytes survive String then ParseGID.
func FuzzParseGID(f *testing.F) {
	f.Add("fe80:0000:0000:0000:5054:00ff:fe00:0001\n", []byte{0xfe, 0x80, 15: 1})
	f.Add("0000:0000:0000:0000:0000:ffff:c000:0201", []byte{10: 0xff, 11: 0xff, 12: 192, 15: 1})
	f.Add("0:0:0:0:0:0:0:0", []byte{})
	f.Add("::1", []byte{1})
	f.Add("fe80:0:0:0:0:0:0:10000", bytes.Repeat([]byte{0xff}, 16))
	f.Fuzz(func(t *testing.T, s string, b []byte) {
		if g, err := ParseGID(s); err == nil {
			c := g.String()
			if len(c) != 39 || strings.ToLower(c) != c {
				t.Fatalf("%q parsed to %s, not the sysfs form", s, c)
			}
			if back, err := ParseGID(c); err != nil || back != g {
				t.Fatalf("%q: %s parses to %v, %v", s, c, back, err)
			}
		}
		var g GID
		copy(g[:], b)
		if back, err := ParseGID(g.String()); err != nil || back != g {
			t.Fatalf("%x: %s parses to %v, %v", g[:], g, back, err)
		}
	})
}

// FuzzParseGUID is FuzzParseGID for node and system image GUIDs (four
// groups of exactly 4 hex digits).
func FuzzParseGUID(f *testing.F) {
	f.Add("5054:00ff:fe00:0001\n", []byte{0x50, 0x54, 0, 0xff, 0xfe, 0, 0, 1})
	f.Add("0002:c903:0031:7bd0", []byte{})
	f.Add("5054:ff:fe00:1", []byte{0xff})
	f.Fuzz(func(t *testing.T, s string, b []byte) {
		if g, err := ParseGUID(s); err == nil {
			c := g.String()
			if len(c) != 19 || strings.ToLower(c) != c {
				t.Fatalf("%q parsed to %s, not the sysfs form", s, c)
			}
			if back, err := ParseGUID(c); err != nil || back != g {
				t.Fatalf("%q: %s parses to %v, %v", s, c, back, err)
			}
		}
		var g GUID
		copy(g[:], b)
		if back, err := ParseGUID(g.String()); err != nil || back != g {
			t.Fatalf("%x: %s parses to %v, %v", g[:], g, back, err)
		}
	})
}
