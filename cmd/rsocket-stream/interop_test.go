package main

// Interop with librdmacm's rstream and rcopy in the vmtest guests (a =
// 192.0.2.1, b = 192.0.2.2, soft-RoCE on a virtual wire), on the kernel
// CM. One pair for the package; the same twins on our CM engine are in
// cmd/rsocket-copy/interop_test.go, the shared cases in
// cmd/internal/twintest. They run with VMTEST=1 (make vmtest); otherwise
// they skip, and a guest that does not boot fails them.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cmd/internal/twintest"
	"github.com/go-rdma/rdmacm/internal/vmtest"
)

var guests = twintest.New(vmtest.PairOptions{}, "")

func TestMain(m *testing.M) {
	code := m.Run()
	guests.Close()
	os.Exit(code)
}

const (
	goStream = twintest.GoStream
	cStream  = twintest.CStream
)

// TestStreamInterop: our twin against rstream in both roles, every byte
// verified (-T v): blocking calls at every size, nonblocking at 4 KiB and
// 64 KiB (the nonblocking C side spins, slowly, in these 1-vCPU guests).
func TestStreamInterop(t *testing.T) {
	p := guests.Pair(t)
	port := 7600
	for _, flags := range []string{
		"-S 64 -C 1 -I 100 -T b -T v", "-S 4096 -C 1 -I 50 -T b -T v",
		"-S 65536 -C 30 -I 1 -T b -T v", "-S 1048576 -C 3 -I 1 -T b -T v",
		"-S 4096 -C 1 -I 50 -T n -T v", "-S 65536 -C 10 -I 1 -T n -T v",
	} {
		port++
		t.Run("go-server/"+flags, func(t *testing.T) { guests.StreamCase(t, p.A, p.B, goStream, cStream, flags, port) })
		port++
		t.Run("go-client/"+flags, func(t *testing.T) { guests.StreamCase(t, p.B, p.A, cStream, goStream, flags, port) })
	}
}

// TestStreamTCP: -T s against rstream's plain-socket mode.
func TestStreamTCP(t *testing.T) {
	p := guests.Pair(t)
	for i, dir := range [][2]string{{goStream, cStream}, {cStream, goStream}} {
		t.Run(filepath.Base(dir[0])+"-server", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := fmt.Sprintf("-S 4096 -C 100 -I 1 -T s -T v -p %d", 7700+i)
			srv, err := p.B.Start(ctx, dir[0]+" "+args)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop(context.Background())
			// No cm_id over TCP: the client retries until the port answers.
			for try := 0; ; try++ {
				r, err := p.A.Run(ctx, fmt.Sprintf("%s -s %s %s", dir[1], p.B.Addr, args))
				if r != nil && r.Success() {
					c := twintest.Rows(t, "client", r.Stdout, 1)
					if s := twintest.Rows(t, "server", twintest.Finish(t, ctx, srv, "server"), 1); s[0] != c[0] {
						t.Errorf("rows differ: server %q, client %q", s[0], c[0])
					}
					return
				}
				if try == 50 || ctx.Err() != nil {
					t.Fatalf("client: %v %+v", err, r)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// TestCopyInterop: 64 MiB with librdmacm's rcopy, our twin as client and
// as server.
func TestCopyInterop(t *testing.T) {
	p := guests.Pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const size = 64 << 20
	src, want := twintest.CopySource(t, ctx, p.A, size)
	defer p.A.Run(context.Background(), "rm -f "+src)
	t.Run("go-client", func(t *testing.T) {
		guests.CopyCase(t, p.B, p.A, twintest.CCopy, twintest.GoCopy, src, want, size, 7801)
	})
	t.Run("go-server", func(t *testing.T) {
		guests.CopyCase(t, p.B, p.A, twintest.GoCopy, twintest.CCopy, src, want, size, 7802)
	})
}
