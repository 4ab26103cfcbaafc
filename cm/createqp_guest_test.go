//go:build linux

package cm

import (
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// BenchmarkGuestCreateQP is cmtime's create qp step one QP at a time:
// CreateQP on a route-resolved kernel ID with the first QP's
// CQs shared, as cmtime's static init attributes share them, then
// DestroyQP. With CM_CPUPROFILE=1 it writes a CPU profile of the loop to
// $VMTEST_OUT_DIR/createqp.pprof (vmexec copies it to $VMTEST_OUT;
// BenchmarkGuestCreateID to createid.pprof):
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
	defer cpuProfile(b, "createqp.pprof")()
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
// at a time on the kernel backend: CREATE_ID and DESTROY_ID.
func BenchmarkGuestCreateID(b *testing.B) {
	guest.Require(b)
	ch, err := Open(&Options{Backend: BackendKernel})
	if err != nil {
		b.Fatalf("open the kernel rdma_cm: %v", err)
	}
	defer ch.Close()
	defer cpuProfile(b, "createid.pprof")()
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

// BenchmarkGuestCreateIDSysmon tests why the kernel backend's create id
// and destroy steps cost more than cmtime's: 200 CREATE_ID
// then 200 DESTROY_ID, alternating two ways of entering the step.
// Both first sleep 200 ms, in which Go's sysmon finds every P idle and
// sleeps deeply. "warm" then makes one syscall through the scheduler
// (os.ReadFile), which wakes sysmon back to its 20 µs tick for its next
// 50 rounds (runtime/proc.go sysmon: syscallWake resets idle), as the
// syscalls of a program's start and of cm.Open leave it; "quiet" enters
// the step straight from the sleep, whose timer does not wake sysmon. getrusage (a raw syscall: it does not wake sysmon)
// counts the process's context switches (sysmon's wake-ups) and minor
// faults per step.
func BenchmarkGuestCreateIDSysmon(b *testing.B) {
	guest.Require(b)
	ch, err := Open(&Options{Backend: BackendKernel})
	if err != nil {
		b.Fatalf("open the kernel rdma_cm: %v", err)
	}
	defer ch.Close()
	const n = 200
	ids := make([]*ID, n)
	type sample struct{ create, destroy, cswC, cswD, fltC, fltD float64 }
	var got [2][]sample
	usage := func() (csw, flt int64) {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return int64(ru.Nvcsw) + int64(ru.Nivcsw), int64(ru.Minflt) // int32 on 386
	}
	for i := range b.N * 2 {
		mode := i % 2
		time.Sleep(200 * time.Millisecond)
		if mode == 0 {
			if _, err := os.ReadFile("/proc/self/stat"); err != nil {
				b.Fatal(err)
			}
		}
		c0, f0 := usage()
		t0 := time.Now()
		for j := range ids {
			if ids[j], err = ch.CreateID(rdma.PortSpaceTCP, nil); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		c1, f1 := usage()
		for _, id := range ids {
			if err := id.Destroy(); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		c2, f2 := usage()
		got[mode] = append(got[mode], sample{
			create: float64(t1.Sub(t0).Microseconds()) / n, destroy: float64(t2.Sub(t1).Microseconds()) / n,
			cswC: float64(c1 - c0), cswD: float64(c2 - c1), fltC: float64(f1 - f0), fltD: float64(f2 - f1),
		})
	}
	med := func(s []sample, f func(sample) float64) float64 {
		v := make([]float64, len(s))
		for i := range s {
			v[i] = f(s[i])
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	for mode, name := range []string{"warm", "quiet"} {
		s := got[mode]
		b.ReportMetric(med(s, func(x sample) float64 { return x.create }), name+"-µs/create")
		b.ReportMetric(med(s, func(x sample) float64 { return x.destroy }), name+"-µs/destroy")
		b.ReportMetric(med(s, func(x sample) float64 { return x.cswC }), name+"-csw/200creates")
		b.ReportMetric(med(s, func(x sample) float64 { return x.cswD }), name+"-csw/200destroys")
		b.ReportMetric(med(s, func(x sample) float64 { return x.fltC }), name+"-minflt/200creates")
		b.ReportMetric(med(s, func(x sample) float64 { return x.fltD }), name+"-minflt/200destroys")
	}
	b.ReportMetric(0, "ns/op")
}

// cpuProfile starts a CPU profile into $VMTEST_OUT_DIR/name when
// CM_CPUPROFILE is set; the returned func stops it.
func cpuProfile(b *testing.B, name string) (stop func()) {
	if os.Getenv("CM_CPUPROFILE") == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(os.Getenv(guest.EnvOutDir), name))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
