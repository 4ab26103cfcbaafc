//go:build linux

package kcall

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRouteSourceLoopback(t *testing.T) {
	got, err := RouteSource([4]byte{127, 0, 0, 7})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 127 {
		t.Fatalf("route to 127.0.0.7 from %v, want a loopback address", got)
	}
}

func TestRouteSourceUnreachable(t *testing.T) {
	// The limited broadcast address: connect refuses it without
	// SO_BROADCAST (EACCES, ip4_datagram_connect), or finds no route; the
	// error is the errno.
	_, err := RouteSource([4]byte{255, 255, 255, 255})
	var errno unix.Errno
	if err == nil || !errors.As(err, &errno) {
		t.Fatalf("error %v (%T), want an errno", err, err)
	}
}

func TestRouteSource6(t *testing.T) {
	lo := [16]byte{15: 1}
	got, err := RouteSource6(lo, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENETUNREACH) {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	if err != nil || got != lo {
		t.Fatalf("route to ::1 from %v, %v; want ::1", got, err)
	}
	// A link-local destination without its interface has no route.
	if _, err := RouteSource6([16]byte{0: 0xfe, 1: 0x80, 15: 9}, 0); err == nil {
		t.Fatal("a link-local destination without a scope found a route")
	}
}
