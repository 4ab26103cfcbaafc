package main

// The twins on our CM engine: guest a boots without the kernel CM
// (ib_cm, iw_cm, rdma_cm, rdma_ucm), so rsocket-copy and rsocket-stream
// run there with -backend user over umad, against librdmacm's rcopy (64
// MiB) and rstream on guest b's kernel CM, in both roles. One pair for the
// package; the same twins on the kernel CM are in
// cmd/rsocket-stream/interop_test.go, the shared cases in
// cmd/internal/twintest. They run with VMTEST=1 (make vmtest); otherwise
// they skip, and a guest that does not boot fails them.

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cmd/internal/twintest"
	"github.com/go-rdma/rdmacm/internal/vmtest"
)

var guests = twintest.New(vmtest.PairOptions{SkipModulesA: vmtest.CMModules()}, "-backend user")

func TestMain(m *testing.M) {
	code := m.Run()
	guests.Close()
	os.Exit(code)
}

// TestCopyInteropUser: 64 MiB with rcopy on b's kernel CM, our twin on
// our engine in a as client (to b) and as server (from b).
func TestCopyInteropUser(t *testing.T) {
	p := guests.Pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const size = 64 << 20
	srcA, wantA := twintest.CopySource(t, ctx, p.A, size)
	defer p.A.Run(context.Background(), "rm -f "+srcA)
	t.Run("go-client", func(t *testing.T) {
		guests.CopyCase(t, p.B, p.A, twintest.CCopy, twintest.GoCopy, srcA, wantA, size, 7811)
	})
	srcB, wantB := twintest.CopySource(t, ctx, p.B, size)
	defer p.B.Run(context.Background(), "rm -f "+srcB)
	t.Run("go-server", func(t *testing.T) {
		guests.CopyCase(t, p.A, p.B, twintest.GoCopy, twintest.CCopy, srcB, wantB, size, 7812)
	})
}

// TestStreamInteropUser: the stream twin on our engine against rstream,
// both roles, blocking, verified, at a latency and a bandwidth size.
func TestStreamInteropUser(t *testing.T) {
	p := guests.Pair(t)
	port := 7820
	for _, flags := range []string{"-S 4096 -C 1 -I 100 -T b -T v", "-S 65536 -C 50 -I 1 -T b -T v"} {
		port++
		t.Run("go-server/"+flags, func(t *testing.T) {
			guests.StreamCase(t, p.A, p.B, twintest.GoStream, twintest.CStream, flags, port)
		})
		port++
		t.Run("go-client/"+flags, func(t *testing.T) {
			guests.StreamCase(t, p.B, p.A, twintest.CStream, twintest.GoStream, flags, port)
		})
	}
}
