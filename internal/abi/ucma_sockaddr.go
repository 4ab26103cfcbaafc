package abi

import (
	"encoding/binary"
	"net/netip"
	"strconv"
)

// Sockaddrs as ucma carries them: the family is host-endian, port and
// address are in network byte order (struct sockaddr_in, sockaddr_in6,
// sockaddr_ib).

// PutSockaddr writes ap as a sockaddr_in (IPv4, including 4-in-6 mapped
// addresses unmapped) or sockaddr_in6 into b and returns its size. b must
// hold at least SizeofSockaddrIn6 bytes. An IPv6 zone must be a numeric
// interface index; other zones give 0.
func PutSockaddr(b []byte, ap netip.AddrPort) int {
	clear(b[:SizeofSockaddrIn6])
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		binary.NativeEndian.PutUint16(b[0:], AFInet)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		v4 := a.Unmap().As4()
		copy(b[4:8], v4[:])
		return SizeofSockaddrIn
	}
	binary.NativeEndian.PutUint16(b[0:], AFInet6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	v6 := a.As16()
	copy(b[8:24], v6[:])
	if z := a.Zone(); z != "" {
		if idx, err := strconv.ParseUint(z, 10, 32); err == nil {
			binary.NativeEndian.PutUint32(b[24:], uint32(idx))
		}
	}
	return SizeofSockaddrIn6
}

// SockaddrFamily returns the family of the sockaddr in b, 0 if b is too
// short.
func SockaddrFamily(b []byte) uint16 {
	if len(b) < 2 {
		return 0
	}
	return binary.NativeEndian.Uint16(b)
}

// ParseSockaddr decodes an AF_INET or AF_INET6 sockaddr. ok is false for
// other families and short input.
func ParseSockaddr(b []byte) (ap netip.AddrPort, ok bool) {
	switch SockaddrFamily(b) {
	case AFInet:
		if len(b) < SizeofSockaddrIn {
			return ap, false
		}
		a := netip.AddrFrom4([4]byte(b[4:8]))
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:])), true
	case AFInet6:
		if len(b) < SizeofSockaddrIn6 {
			return ap, false
		}
		a := netip.AddrFrom16([16]byte(b[8:24]))
		if scope := binary.NativeEndian.Uint32(b[24:]); scope != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(scope), 10))
		}
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:])), true
	}
	return ap, false
}

// SockaddrIB is struct sockaddr_ib decoded (AF_IB addresses: a GID and a
// service ID).
type SockaddrIB struct {
	PKey      uint16
	FlowInfo  uint32
	GID       [16]byte
	ServiceID uint64
	SIDMask   uint64
	ScopeID   uint64
}

// ParseSockaddrIB decodes an AF_IB sockaddr.
func ParseSockaddrIB(b []byte) (s SockaddrIB, ok bool) {
	if SockaddrFamily(b) != AFIB || len(b) < SizeofSockaddrIB {
		return s, false
	}
	s.PKey = binary.BigEndian.Uint16(b[2:])
	s.FlowInfo = binary.BigEndian.Uint32(b[4:])
	copy(s.GID[:], b[8:24])
	s.ServiceID = binary.BigEndian.Uint64(b[24:])
	s.SIDMask = binary.BigEndian.Uint64(b[32:])
	s.ScopeID = binary.NativeEndian.Uint64(b[40:])
	return s, true
}

// PutSockaddrIB writes s as a sockaddr_ib into b (at least
// SizeofSockaddrIB bytes) and returns its size.
func PutSockaddrIB(b []byte, s SockaddrIB) int {
	clear(b[:SizeofSockaddrIB])
	binary.NativeEndian.PutUint16(b[0:], AFIB)
	binary.BigEndian.PutUint16(b[2:], s.PKey)
	binary.BigEndian.PutUint32(b[4:], s.FlowInfo)
	copy(b[8:24], s.GID[:])
	binary.BigEndian.PutUint64(b[24:], s.ServiceID)
	binary.BigEndian.PutUint64(b[32:], s.SIDMask)
	binary.NativeEndian.PutUint64(b[40:], s.ScopeID)
	return SizeofSockaddrIB
}
