package main

import (
	"testing"

	"github.com/go-rdma/rdmacm/examples/internal/exrun"
)

func TestMain(m *testing.M) { exrun.Main(m, main) }

// TestGuest: the client offers 0x30000001, the server has 0x10000001 and
// answers the intersection, 0x10000001; rxe's QPs apply none.
func TestGuest(t *testing.T) {
	srv, cli := exrun.Run(t, "-s -a 192.0.2.1 -ece 0x15b3:0x10000001", "-a 192.0.2.1 -ece 0x15b3:0x30000001", "listening")
	if want := "listening\nsent vendor=0x15b3 options=0x10000001, received vendor=0x15b3 options=0x30000001\napplied none: the device has no ECE\n"; srv != want {
		t.Errorf("server %q, want %q", srv, want)
	}
	if want := "sent vendor=0x15b3 options=0x30000001, received vendor=0x15b3 options=0x10000001\napplied none: the device has no ECE\n"; cli != want {
		t.Errorf("client %q, want %q", cli, want)
	}
}
