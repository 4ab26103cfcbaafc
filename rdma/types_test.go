package rdma

import (
	"net/netip"
	"testing"
)

func TestGID(t *testing.T) {
	g := GIDFromAddr(netip.MustParseAddr("192.0.2.1"))
	const sysfs = "0000:0000:0000:0000:0000:ffff:c000:0201"
	if g.String() != sysfs || g.Addr().String() != "::ffff:192.0.2.1" || g.IsZero() || !(GID{}).IsZero() {
		t.Errorf("GID %v / %v", g, g.Addr())
	}
	p, err := ParseGID(sysfs)
	if err != nil || p != g {
		t.Errorf("ParseGID = %v, %v", p, err)
	}
	for _, bad := range []string{"", "::1", "0:0:0:0:0:0:0:10000", "0:0:0:0:0:0:0:x"} {
		if _, err := ParseGID(bad); err == nil {
			t.Errorf("ParseGID(%q) succeeded", bad)
		}
	}
}

func TestGUID(t *testing.T) {
	g, err := ParseGUID("5254:00ff:fe12:3456")
	if err != nil || g != (GUID{0x52, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56}) || g.String() != "5254:00ff:fe12:3456" {
		t.Errorf("ParseGUID = %v, %v", g, err)
	}
	if _, err := ParseGUID("5254:00ff:fe12"); err == nil {
		t.Error("3 groups parsed")
	}
}

func TestMTU(t *testing.T) {
	for m, n := range map[MTU]int{MTU256: 256, MTU512: 512, MTU1024: 1024, MTU2048: 2048, MTU4096: 4096} {
		if !m.Valid() || m.Bytes() != n {
			t.Errorf("%d: Bytes %d", m, m.Bytes())
		}
		if got, ok := MTUFromBytes(n); !ok || got != m {
			t.Errorf("MTUFromBytes(%d) = %v", n, got)
		}
	}
	if MTU(0).Valid() || MTU(6).Bytes() != 0 || MTU(6).String() != "MTU(6)" || MTU4096.String() != "4096" {
		t.Error("invalid MTUs")
	}
	if _, ok := MTUFromBytes(1500); ok {
		t.Error("MTUFromBytes(1500)")
	}
}

func TestPortSpace(t *testing.T) {
	for ps, s := range map[PortSpace]string{PortSpaceIPoIB: "IPoIB", PortSpaceTCP: "TCP", PortSpaceUDP: "UDP", PortSpaceIB: "IB"} {
		if !ps.Valid() || ps.String() != s {
			t.Errorf("%#x: %v", uint16(ps), ps)
		}
	}
	if PortSpace(0x0107).Valid() || PortSpace(0x0107).String() != "PortSpace(0x0107)" {
		t.Error("unknown port space")
	}
}
