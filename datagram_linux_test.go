//go:build linux

package rdmacm

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

// TestParseGRH reads both forms of the 40 bytes before a UD message: the
// IPv4 header of RoCE v2 at offset 20 (with a valid checksum), and a GRH,
// whose SGID may put 0x45 at offset 20 without being an IPv4 header.
func TestParseGRH(t *testing.T) {
	v4 := make([]byte, GRHSize)
	ip := v4[20:]
	ip[0], ip[1], ip[8], ip[9] = 0x45, 0x20, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 20+8+100)
	copy(ip[12:], []byte{192, 0, 2, 2})
	copy(ip[16:], []byte{192, 0, 2, 1})
	binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip))
	h := parseGRH(v4)
	if h.src != rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.2")) {
		t.Errorf("IPv4 with its checksum: %+v", h)
	}
	binary.BigEndian.PutUint16(ip[10:], 0) // rxe's loopback sends none
	h = parseGRH(v4)
	if h.src != rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.2")) || h.dst != rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.1")) || h.tclass != 0x20 {
		t.Errorf("IPv4: %+v", h)
	}

	g := make([]byte, GRHSize)
	binary.BigEndian.PutUint32(g, 6<<28|0x12<<20|0xabcde)
	src := rdma.GID(netip.MustParseAddr("fd00::45:45").As16())
	src[12] = 0x45 // offset 20 of the GRH, but no valid IPv4 header behind it
	dst := rdma.GID(netip.MustParseAddr("fd00::1").As16())
	copy(g[8:], src[:])
	copy(g[24:], dst[:])
	h = parseGRH(g)
	if h.src != src || h.dst != dst || h.tclass != 0x12 || h.flow != 0xabcde {
		t.Errorf("GRH: %+v", h)
	}
}
