package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cmd/internal/twintest"
	"github.com/go-rdma/rdmacm/internal/vmtest"
)

// TestStreamNeverHangs: our twin against rstream in both roles, where
// rstream against rstream completes: matched flags, a bare server (the
// default sets) with a custom client, a server left idle before the
// client comes, and a CPU hog in the server's guest. Every client must
// finish within stressLimit. STRESS_ROUNDS (default 1) repeats the set;
// make vmtest-stress runs more rounds.
func TestStreamNeverHangs(t *testing.T) {
	p := guests.Pair(t)
	rounds := 1
	if s := os.Getenv("STRESS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("STRESS_ROUNDS=%q: want a positive count", s)
		}
		rounds = n
	}
	type role struct{ name, server, client string }
	roles := []role{{"go-server", goStream, cStream}, {"go-client", cStream, goStream}}
	// Flags each side gets; rstream completes every one against itself
	// (a bare server answers a 64-byte custom client from its latency set).
	flags := []struct{ name, server, client string }{
		{"matched-64", "-S 64 -C 100 -I 1", "-S 64 -C 100 -I 1"},
		{"matched-4k", "-S 4096 -C 100 -I 1", "-S 4096 -C 100 -I 1"},
		{"bare-server", "", "-S 64 -C 100 -I 1"},
	}
	port := 7800
	for r := 0; r < rounds; r++ {
		for i, f := range flags {
			for _, ro := range roles {
				port++
				idle := time.Duration(i%2) * 3 * time.Second
				hog := (r+i)%2 == 0
				name := fmt.Sprintf("%d/%s/%s/idle=%v/hog=%v", r, ro.name, f.name, idle, hog)
				t.Run(name, func(t *testing.T) { stressCase(t, p, ro.server, f.server, ro.client, f.client, port, idle, hog) })
			}
		}
	}
}

// stressLimit bounds one client run: these take 0.1–2 s in the guests.
const stressLimit = 40 * time.Second

func stressCase(t *testing.T, p *vmtest.Pair, server, sflags, client, cflags string, port int, idle time.Duration, hog bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*stressLimit)
	defer cancel()
	srv, cli := p.B, p.A
	if hog {
		h, err := srv.Start(ctx, "while :; do :; done")
		if err != nil {
			t.Fatal(err)
		}
		defer h.Stop(context.Background())
	}
	marker := ""
	if server == goStream {
		marker = "name"
	}
	sp := twintest.Serve(t, ctx, srv, fmt.Sprintf("%s %s -p %d", server, sflags, port), marker, port)
	// A bare server goes on to sets the client never runs: it is stopped,
	// not waited for.
	defer sp.Stop(context.Background())
	time.Sleep(idle)
	cctx, ccancel := context.WithTimeout(ctx, stressLimit)
	defer ccancel()
	start := time.Now()
	cr, err := cli.Run(cctx, fmt.Sprintf("%s -s %s %s -p %d", client, srv.Addr, cflags, port))
	took := time.Since(start)
	if cr == nil || !cr.Success() {
		sr, _ := sp.Stop(context.Background())
		t.Fatalf("client %s %s did not complete in %v (limit %v): %v %+v; server: %+v", client, cflags, took.Round(time.Millisecond), stressLimit, err, cr, sr)
	}
	twintest.Rows(t, "client", cr.Stdout, 1)
	t.Logf("client done in %v", took.Round(time.Millisecond))
}
