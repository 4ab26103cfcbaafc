//go:build linux

package cm

import (
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// BenchmarkGuestCreateQP is cmtime's create qp step one QP at a time
// (issue 17): CreateQP on a route-resolved kernel ID with the first QP's
// CQs shared, as cmtime's static init attributes share them, then
// DestroyQP. With CM_CPUPROFILE=1 it writes a CPU profile of the loop to
// $VMTEST_OUT_DIR/createqp.pprof (vmexec copies it to $VMTEST_OUT):
//
//	CM_CPUPROFILE=1 VMTEST_OUT=/tmp/out go test -run '^$' -bench GuestCreateQP -benchmem -benchtime 3000x -exec "$PWD/bin/vmexec" ./cm/
func BenchmarkGuestCreateQP(b *testing.B) {
	guest.Require(b)
	ch, err := Open(&Options{Backend: BackendKernel})
	if err != nil {
		b.Fatalf("open the kernel rdma_cm: %v", err)
	}
	defer ch.Close()
	local, err := netip.ParseAddr(guest.Local().Addr)
	if err != nil {
		b.Fatal(err)
	}
	ctx := kctx(b, time.Minute)
	id, err := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer id.Destroy()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, netip.AddrPortFrom(local, freePort()), 0); err != nil {
		b.Fatal(err)
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		b.Fatal(err)
	}
	// The shared CQs come from an ID of their own, as cmtime's first ID.
	owner, err := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer owner.Destroy()
	if err := owner.ResolveAddr(ctx, netip.AddrPort{}, netip.AddrPortFrom(local, freePort()), 0); err != nil {
		b.Fatal(err)
	}
	if err := owner.ResolveRoute(ctx, 0); err != nil {
		b.Fatal(err)
	}
	c := qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
	first, err := owner.CreateQP(QPInit{Cap: c})
	if err != nil {
		b.Fatal(err)
	}
	defer owner.DestroyQP()
	init := QPInit{Cap: c, SendCQ: first.SendCQ, RecvCQ: first.RecvCQ}
	if os.Getenv("CM_CPUPROFILE") != "" {
		f, err := os.Create(filepath.Join(os.Getenv(guest.EnvOutDir), "createqp.pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := id.CreateQP(init); err != nil {
			b.Fatal(err)
		}
		if err := id.DestroyQP(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuestCreateID is cmtime's create id and destroy steps one ID
// at a time on the kernel backend: CREATE_ID and DESTROY_ID (issue 17).
func BenchmarkGuestCreateID(b *testing.B) {
	guest.Require(b)
	ch, err := Open(&Options{Backend: BackendKernel})
	if err != nil {
		b.Fatalf("open the kernel rdma_cm: %v", err)
	}
	defer ch.Close()
	b.ReportAllocs()
	for range b.N {
		id, err := ch.CreateID(rdma.PortSpaceTCP, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := id.Destroy(); err != nil {
			b.Fatal(err)
		}
	}
}
