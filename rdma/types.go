package rdma

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// GID is a 128-bit port address in network byte order (IBTA vol. 1
// §4.1.1). For RoCE v2 it is an IPv6 or IPv4-mapped address.
type GID [16]byte

// String formats g as sysfs does: eight groups of four hex digits. Use
// Addr().String() for IPv6 notation.
func (g GID) String() string {
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02x%02x", g[i], g[i+1])
	}
	return b.String()
}

// IsZero reports whether g is all zero (an empty GID table slot).
func (g GID) IsZero() bool { return g == GID{} }

// Addr returns g as an IPv6 address (IPv4-mapped for RoCE v2 over IPv4).
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g) }

// GIDFromAddr returns the GID of an IP address, mapping IPv4 into IPv6
// as RoCE v2 GIDs do.
func GIDFromAddr(a netip.Addr) GID { return a.As16() }

// ParseGID parses the sysfs form (eight groups of up to four hex digits).
func ParseGID(s string) (GID, error) {
	var g GID
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 8 {
		return g, fmt.Errorf("GID %q: want 8 groups", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 16)
		if err != nil || len(p) == 0 || len(p) > 4 {
			return g, fmt.Errorf("GID %q: bad group %q", s, p)
		}
		g[2*i], g[2*i+1] = byte(v>>8), byte(v)
	}
	return g, nil
}

// GUID is an EUI-64 in network byte order (node GUID, system image GUID).
type GUID [8]byte

// String formats g as sysfs does: four colon-separated groups of 16 bits.
func (g GUID) String() string {
	return fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7])
}

// ParseGUID parses the sysfs form "xxxx:xxxx:xxxx:xxxx".
func ParseGUID(s string) (GUID, error) {
	var g GUID
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 4 {
		return g, fmt.Errorf("GUID %q: want 4 groups", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 16)
		if err != nil || len(p) != 4 {
			return g, fmt.Errorf("GUID %q: bad group %q", s, p)
		}
		g[2*i], g[2*i+1] = byte(v>>8), byte(v)
	}
	return g, nil
}

// MTU is a path MTU: the 4-bit IBTA encoding, as enum ibv_mtu.
type MTU uint8

// Path MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Valid reports whether m is MTU256..MTU4096.
func (m MTU) Valid() bool { return m >= MTU256 && m <= MTU4096 }

// Bytes returns the MTU in bytes (256 << (m-1)), or 0 if m is not valid.
func (m MTU) Bytes() int {
	if !m.Valid() {
		return 0
	}
	return 128 << m
}

// MTUFromBytes returns the MTU code for exactly 256, 512, 1024, 2048 or
// 4096 bytes.
func MTUFromBytes(n int) (MTU, bool) {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m, true
		}
	}
	return 0, false
}

// String returns the MTU in bytes ("4096"), or "MTU(N)".
func (m MTU) String() string {
	if m.Valid() {
		return strconv.Itoa(m.Bytes())
	}
	return "MTU(" + strconv.Itoa(int(m)) + ")"
}

// PortSpace is an rdma_cm port space (IBTA annex A11; kernel enum
// rdma_ucm_port_space). It selects the service-ID space and with it the
// QP type.
type PortSpace uint16

// The rdma_cm port spaces.
const (
	PortSpaceIPoIB PortSpace = 0x0002 // RDMA_PS_IPOIB: UD, the IPoIB service space
	PortSpaceTCP   PortSpace = 0x0106 // RDMA_PS_TCP: RC
	PortSpaceUDP   PortSpace = 0x0111 // RDMA_PS_UDP: UD (SIDR)
	PortSpaceIB    PortSpace = 0x013F // RDMA_PS_IB: RC or UD
)

// Valid reports whether ps is one of the four port spaces.
func (ps PortSpace) Valid() bool {
	return ps == PortSpaceIPoIB || ps == PortSpaceTCP || ps == PortSpaceUDP || ps == PortSpaceIB
}

// String returns "TCP", "UDP", "IB", "IPoIB" or "PortSpace(0xNNNN)".
func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceIPoIB:
		return "IPoIB"
	case PortSpaceTCP:
		return "TCP"
	case PortSpaceUDP:
		return "UDP"
	case PortSpaceIB:
		return "IB"
	}
	return fmt.Sprintf("PortSpace(%#04x)", uint16(ps))
}

// PathRecord is the part of an SA PathRecord (IBTA vol. 1 §15.2.5.16)
// that a route carries (struct sa_path_rec, ib_user_path_rec).
type PathRecord struct {
	DGID, SGID GID
	// DLID and SLID are InfiniBand LIDs (0 on RoCE).
	DLID, SLID uint16
	// FlowLabel is 20 bits.
	FlowLabel uint32
	// HopLimit > 0 makes the kernel use the GRH on InfiniBand.
	HopLimit     uint8
	TrafficClass uint8
	Reversible   bool
	// PKey is the partition key (RoCE: 0xffff).
	PKey uint16
	// SL is the service level, 4 bits.
	SL  uint8
	MTU MTU
	// Rate is the static rate (enum ibv_rate).
	Rate uint8
	// PacketLifeTime is the 5-bit path packet lifetime.
	PacketLifeTime uint8
	Flags          uint32
}
