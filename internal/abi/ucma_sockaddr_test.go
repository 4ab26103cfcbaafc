package abi

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

func TestSockaddrRoundTrip(t *testing.T) {
	for _, s := range []string{"192.0.2.1:7174", "[2001:db8::1]:1", "[fe80::1%3]:65535", "0.0.0.0:0"} {
		ap := netip.MustParseAddrPort(s)
		var b [SizeofSockaddrStorage]byte
		for i := range b {
			b[i] = 0xee // PutSockaddr must clear what it does not set
		}
		n := PutSockaddr(b[:], ap)
		got, ok := ParseSockaddr(b[:n])
		if !ok || got != ap {
			t.Fatalf("%s: round trip gave %v, %v", s, got, ok)
		}
		if ap.Addr().Is4() {
			if n != SizeofSockaddrIn || binary.NativeEndian.Uint16(b[:]) != AFInet {
				t.Fatalf("%s: size %d family %d", s, n, binary.NativeEndian.Uint16(b[:]))
			}
			if b[2] != byte(ap.Port()>>8) || b[3] != byte(ap.Port()) {
				t.Fatalf("%s: port not big-endian: % x", s, b[:4])
			}
			for _, z := range b[8:16] {
				if z != 0 {
					t.Fatalf("%s: sin_zero not cleared: % x", s, b[:16])
				}
			}
		} else if n != SizeofSockaddrIn6 || b[4] != 0 {
			t.Fatalf("%s: size %d flowinfo % x", s, n, b[4:8])
		}
	}
	// 4-in-6 is sent as AF_INET, as the kernel's rdma_addr_size expects.
	var b [SizeofSockaddrIn6]byte
	if n := PutSockaddr(b[:], netip.MustParseAddrPort("[::ffff:192.0.2.1]:9")); n != SizeofSockaddrIn {
		t.Fatalf("4-in-6: size %d", n)
	}
	if _, ok := ParseSockaddr(b[:3]); ok {
		t.Fatal("short sockaddr parsed")
	}
	if _, ok := ParseSockaddr([]byte{99, 0, 0, 0}); ok {
		t.Fatal("unknown family parsed")
	}
}

func TestSockaddrIB(t *testing.T) {
	in := SockaddrIB{PKey: 0xffff, FlowInfo: 0x12345, ServiceID: 0x0000000001060000 | 7174, SIDMask: ^uint64(0), ScopeID: 3}
	in.GID[0], in.GID[15] = 0xfe, 0x01
	var b [SizeofSockaddrStorage]byte
	if n := PutSockaddrIB(b[:], in); n != SizeofSockaddrIB {
		t.Fatalf("size %d", n)
	}
	if b[24] != 0 || b[31] != byte(7174&0xff) {
		t.Fatalf("service ID not big-endian at 24: % x", b[24:32])
	}
	out, ok := ParseSockaddrIB(b[:])
	if !ok || out != in {
		t.Fatalf("round trip %+v %v", out, ok)
	}
	if _, ok := ParseSockaddrIB(b[:40]); ok {
		t.Fatal("short sockaddr_ib parsed")
	}
}
