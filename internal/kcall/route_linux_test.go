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
