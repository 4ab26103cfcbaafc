package main

import (
	"regexp"
	"testing"

	"github.com/go-rdma/rdmacm/examples/internal/exrun"
)

func TestMain(m *testing.M) { exrun.Main(m, main) }

// TestGuest runs a unary call and a 16 MiB server-streaming call over
// rsockets, server in guest a, client in guest b (go test -exec vmexec).
func TestGuest(t *testing.T) {
	srv, cli := exrun.Run(t, "-s -a 192.0.2.1", "-a 192.0.2.1 -size 16777216", "listening")
	if !regexp.MustCompile(`^listening on 192\.0\.2\.1:50051\nserver: Echo 100000 bytes\nserver: Download 16777216 bytes\n$`).MatchString(srv) {
		t.Errorf("server output %q", srv)
	}
	if !regexp.MustCompile(`^client: Echo 100000 bytes, identical, \S+\nclient: Download 16777216 bytes, identical, \S+ MB/s\n$`).MatchString(cli) {
		t.Errorf("client output %q", cli)
	}
}
