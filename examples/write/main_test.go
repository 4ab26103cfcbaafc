package main

import (
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/examples/internal/exrun"
)

func TestMain(m *testing.M) { exrun.Main(m, main) }

// TestGuest writes 1 MiB from guest b into guest a; both sides' digests
// must agree.
func TestGuest(t *testing.T) {
	srv, cli := exrun.Run(t, "-s -a 192.0.2.1", "-a 192.0.2.1", "listening")
	_, sum, _ := strings.Cut(cli, "sha256 ")
	if !strings.HasPrefix(cli, "client: 1048576 bytes written") || srv != "listening\nserver: 1048576 bytes written, sha256 "+sum {
		t.Errorf("server %q, client %q", srv, cli)
	}
}
