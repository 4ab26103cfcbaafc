package main

import (
	"regexp"
	"testing"

	"github.com/go-rdma/rdmacm/examples/internal/exrun"
)

func TestMain(m *testing.M) { exrun.Main(m, main) }

// TestGuest serves a 64 MiB body over rsockets from guest a to a net/http
// client in guest b and takes a 16 MiB upload back; both ends check
// every byte.
func TestGuest(t *testing.T) {
	srv, cli := exrun.Run(t, "-s -a 192.0.2.1", "-a 192.0.2.1 -size 67108864 -upload 16777216", "listening")
	if !regexp.MustCompile(`^listening on 192\.0\.2\.1:8080\nserver: GET /body from 192\.0\.2\.2:\d+: 67108864 bytes, ok\nserver: POST /upload from 192\.0\.2\.2:\d+: 16777216 bytes, identical\n$`).MatchString(srv) {
		t.Errorf("server output %q", srv)
	}
	if !regexp.MustCompile(`^client: GET /body: 67108864 bytes, identical, \S+ MB/s\nclient: POST /upload: 16777216 bytes, identical, \S+ MB/s\n$`).MatchString(cli) {
		t.Errorf("client output %q", cli)
	}
}
