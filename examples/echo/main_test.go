package main

import (
	"regexp"
	"testing"

	"github.com/go-rdma/rdmacm/examples/internal/exrun"
)

func TestMain(m *testing.M) { exrun.Main(m, main) }

// TestGuest runs the echo between the guests: 1,000 × 4 KiB.
func TestGuest(t *testing.T) {
	srv, cli := exrun.Run(t, "-s -a 192.0.2.1", "-a 192.0.2.1", "listening")
	if srv != "listening\nserver: echoed 1000 messages\n" {
		t.Errorf("server output %q", srv)
	}
	if !regexp.MustCompile(`^client: 1000 x 4096 B, p50 \S+ p99 \S+ max \S+\n$`).MatchString(cli) {
		t.Errorf("client output %q", cli)
	}
}
