package abi

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strconv"
	"testing"
)

// sockaddrSeed lays out a sockaddr the way ucma's QUERY ADDR response
// carries it (family host-endian, port and address network order).
func sockaddrSeed(s string) []byte {
	b := make([]byte, SizeofSockaddrIn6)
	return b[:PutSockaddr(b, netip.MustParseAddrPort(s))]
}

// FuzzParseSockaddr decodes arbitrary bytes as a kernel-written sockaddr.
// It succeeds exactly for AF_INET and AF_INET6 with enough bytes; writing
// the result back reproduces the fields the kernel sent (family, port,
// address, scope id; sin6_flowinfo and sin_zero are not kept), except that
// an IPv4-mapped IPv6 address comes back as AF_INET, and parsing that
// gives the same address and port again.
func FuzzParseSockaddr(f *testing.F) {
	for _, s := range []string{"192.0.2.1:7174", "[2001:db8::1]:1", "[fe80::5054:ff:fe00:1%2]:4791", "[::ffff:192.0.2.2]:7471", "0.0.0.0:0"} {
		f.Add(sockaddrSeed(s))
	}
	ib := make([]byte, SizeofSockaddrIB)
	PutSockaddrIB(ib, SockaddrIB{PKey: 0xffff, ServiceID: 0x0106_0000_0000_1c06})
	f.Add(ib)
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		ap, ok := ParseSockaddr(b)
		fam := SockaddrFamily(b)
		if len(b) < 2 && fam != 0 {
			t.Fatalf("family %d from %d bytes", fam, len(b))
		}
		wantOK := fam == AFInet && len(b) >= SizeofSockaddrIn || fam == AFInet6 && len(b) >= SizeofSockaddrIn6
		if ok != wantOK {
			t.Fatalf("family %d, %d bytes: ok=%v", fam, len(b), ok)
		}
		if !ok {
			return
		}
		out := make([]byte, SizeofSockaddrIn6)
		n := PutSockaddr(out, ap)
		zero := func(p []byte) bool { return bytes.Equal(p, make([]byte, len(p))) }
		switch {
		case fam == AFInet:
			if n != SizeofSockaddrIn || !bytes.Equal(out[:8], b[:8]) || !zero(out[8:]) {
				t.Fatalf("AF_INET % x written back as % x", b[:SizeofSockaddrIn], out[:n])
			}
		case ap.Addr().Is4In6():
			if n != SizeofSockaddrIn || SockaddrFamily(out) != AFInet || !bytes.Equal(out[2:4], b[2:4]) || !bytes.Equal(out[4:8], b[20:24]) {
				t.Fatalf("mapped % x written back as % x", b[:SizeofSockaddrIn6], out[:n])
			}
		default:
			if n != SizeofSockaddrIn6 || !bytes.Equal(out[:4], b[:4]) || !zero(out[4:8]) || !bytes.Equal(out[8:n], b[8:SizeofSockaddrIn6]) {
				t.Fatalf("AF_INET6 % x written back as % x", b[:SizeofSockaddrIn6], out[:n])
			}
		}
		back, ok := ParseSockaddr(out[:n])
		if want := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()); !ok || back != want {
			t.Fatalf("%v written and parsed again: %v, %v", want, back, ok)
		}
	})
}

// FuzzPutSockaddr writes arbitrary addresses and parses them back: the
// address (unmapped), port and a numeric zone survive; a zone that is no
// 32-bit interface index, or index 0, is dropped.
func FuzzPutSockaddr(f *testing.F) {
	f.Add("192.0.2.1", uint16(7174))
	f.Add("fe80::1%3", uint16(65535))
	f.Add("fe80::1%eth0", uint16(1))
	f.Add("::ffff:10.0.0.1", uint16(0))
	f.Add("2001:db8::1%4294967296", uint16(4791))
	f.Fuzz(func(t *testing.T, s string, port uint16) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return
		}
		b := bytes.Repeat([]byte{0xee}, SizeofSockaddrStorage)
		n := PutSockaddr(b, netip.AddrPortFrom(a, port))
		got, ok := ParseSockaddr(b[:n])
		want := a.Unmap()
		if want.Is6() {
			want = want.WithZone("")
			if idx, err := strconv.ParseUint(a.Zone(), 10, 32); err == nil && idx != 0 {
				want = want.WithZone(strconv.FormatUint(idx, 10))
			}
		}
		if !ok || got != netip.AddrPortFrom(want, port) {
			t.Fatalf("%s port %d: parsed back %v, %v; want %v", s, port, got, ok, netip.AddrPortFrom(want, port))
		}
		if !bytes.Equal(b[SizeofSockaddrIn6:], bytes.Repeat([]byte{0xee}, SizeofSockaddrStorage-SizeofSockaddrIn6)) {
			t.Fatal("PutSockaddr wrote past sockaddr_in6")
		}
	})
}

// FuzzParseSockaddrIB decodes arbitrary bytes as an AF_IB sockaddr: it
// succeeds exactly for AF_IB with all 48 bytes, and writing it back
// reproduces those bytes, which parse to the same value.
func FuzzParseSockaddrIB(f *testing.F) {
	ib := make([]byte, SizeofSockaddrIB)
	PutSockaddrIB(ib, SockaddrIB{PKey: 0xffff, FlowInfo: 0x12345, GID: [16]byte{0xfe, 0x80, 15: 1},
		ServiceID: 0x0106_0000_0000_1c06, SIDMask: ^uint64(0), ScopeID: 2})
	f.Add(ib)
	f.Add(ib[:SizeofSockaddrIB-1])
	f.Add(sockaddrSeed("[2001:db8::1]:1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := ParseSockaddrIB(b)
		wantOK := len(b) >= 2 && binary.NativeEndian.Uint16(b) == AFIB && len(b) >= SizeofSockaddrIB
		if ok != wantOK {
			t.Fatalf("% x: ok=%v", b, ok)
		}
		if !ok {
			return
		}
		out := make([]byte, SizeofSockaddrIB)
		if n := PutSockaddrIB(out, s); n != SizeofSockaddrIB || !bytes.Equal(out, b[:SizeofSockaddrIB]) {
			t.Fatalf("% x written back as % x", b[:SizeofSockaddrIB], out)
		}
		if back, ok := ParseSockaddrIB(out); !ok || back != s {
			t.Fatalf("%+v parsed again as %+v, %v", s, back, ok)
		}
	})
}
