//go:build linux

package mlx5sim_test

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/benchstat"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/mlx5sim"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
	"golang.org/x/sys/unix"
)

// BenchmarkVsLibmlx5 measures post send plus poll per work request on the
// simulated device, our provider against libmlx5 through libibverbs (the
// C program c/bench.c under the shim), in one run: BENCH_ROUNDS rounds
// (default 10), each running every case once on each side in an order
// that alternates, BENCH_ITERS iterations per case (default 200000). Both
// sides write the requester CQEs the device would write themselves, so
// the loop makes no system call on either side. Each side times its
// loop twice: wall time, and the CPU time of the thread running it
// (CLOCK_THREAD_CPUTIME_ID on both sides; the Go loop runs locked to its
// thread), which leaves out the time the thread waited for a CPU on a
// loaded machine. It reports, for each clock, the median ns per WR of
// each side and the per-round Go/C ratio's median with a bootstrap 95%
// interval (docs/benchmarks.md).
//
//	go test -run '^$' -bench VsLibmlx5 -benchtime 1x ./internal/mlx5sim/
func BenchmarkVsLibmlx5(b *testing.B) {
	shim, _ := cSide(b)
	bench, err := mlx5sim.BuildBench(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	rounds := envInt("BENCH_ROUNDS", 10)
	iters := envInt("BENCH_ITERS", 200000)
	cases := []string{"send_inline64", "write_sge1", "batch16"}

	g := newGoRig(b)
	defer g.close()
	for _, c := range cases {
		bc := g.benchCase(c)
		if a := testing.AllocsPerRun(1000, func() { g.iteration(&bc) }); a != 0 {
			b.Errorf("%s: %.1f allocations per iteration, want 0", c, a)
		}
	}

	// case -> [C, Go] ns/WR per round, wall and thread CPU time
	res, cpu := map[string]*[2][]float64{}, map[string]*[2][]float64{}
	for _, c := range cases {
		res[c], cpu[c] = &[2][]float64{}, &[2][]float64{}
	}
	add := func(side int, c string, wall, cpuNS float64) {
		res[c][side] = append(res[c][side], wall)
		cpu[c][side] = append(cpu[c][side], cpuNS)
	}
	for r := 0; r < rounds; r++ {
		for _, c := range cases {
			runC := func() {
				wall, cpuNS := runCBench(b, shim, bench, c, iters)
				add(0, c, wall, cpuNS)
			}
			runGo := func() {
				wall, cpuNS := g.run(b, c, iters)
				add(1, c, wall, cpuNS)
			}
			if r%2 == 0 {
				runC()
				runGo()
			} else {
				runGo()
				runC()
			}
		}
	}
	var table strings.Builder
	for _, clock := range []struct {
		name string
		res  map[string]*[2][]float64
	}{{"wall", res}, {"cpu", cpu}} {
		fmt.Fprintf(&table, "%s time:\n", clock.name)
		ratioTable(b, &table, cases, clock.name, clock.res)
	}
	b.Logf("%d rounds of %d iterations per case:\n%s", rounds, iters, table.String())
}

// ratioTable writes one Markdown table of per-WR times and Go/C ratios
// and reports them as metrics (suffix "-cpu" for the CPU clock).
func ratioTable(b *testing.B, table *strings.Builder, cases []string, clock string, res map[string]*[2][]float64) {
	suffix := ""
	if clock == "cpu" {
		suffix = "-cpu"
	}
	fmt.Fprintf(table, "| case | libmlx5 ns/WR | ours ns/WR | ours / libmlx5 (95%% interval; faster in) |\n|---|---|---|---|\n")
	for _, c := range cases {
		cs, gs := res[c][0], res[c][1]
		ratios := make([]float64, len(cs))
		faster := 0
		for i := range cs {
			ratios[i] = gs[i] / cs[i]
			if ratios[i] < 1 {
				faster++
			}
		}
		lo, hi := benchstat.MedianCI(ratios)
		fmt.Fprintf(table, "| %s | %.1f | %.1f | %.3f (%.3f–%.3f; %d/%d) |\n",
			c, benchstat.Median(cs), benchstat.Median(gs), benchstat.Median(ratios), lo, hi, faster, len(ratios))
		b.ReportMetric(benchstat.Median(gs), c+"-go-ns/WR"+suffix)
		b.ReportMetric(benchstat.Median(cs), c+"-c-ns/WR"+suffix)
		b.ReportMetric(benchstat.Median(ratios), c+"-go/c"+suffix)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// runCBench runs one case of c/bench.c against a fresh simulated device
// and returns its ns per WR, wall and thread CPU time.
func runCBench(b *testing.B, shim, bench, c string, iters int) (wall, cpu float64) {
	b.Helper()
	p := mlx5sim.DefaultProfile()
	sys := b.TempDir()
	if err := mlx5sim.WriteSysfs(sys, p); err != nil {
		b.Fatal(err)
	}
	d := mlx5sim.New(p)
	cmd := mlx5sim.ScenarioCmd(bench, shim, sys, c)
	cmd.Args = append(cmd.Args, strconv.Itoa(iters))
	var out, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// As before the Go half's loop (goRig.run): no collection of the
	// harness's garbage runs on the other core while the case is timed.
	runtime.GC()
	if err := mlx5sim.RunChild(ctx, cmd, d); err != nil {
		b.Fatalf("C bench %s: %v\n%s", c, err, stderr.String())
	}
	f := strings.Fields(out.String())
	if len(f) != 3 || f[0] != c {
		b.Fatalf("C bench %s printed %q", c, out.String())
	}
	wall, err1 := strconv.ParseFloat(f[1], 64)
	cpu, err2 := strconv.ParseFloat(f[2], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("C bench %s printed %q", c, out.String())
	}
	return wall, cpu
}

// threadCPU is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), as
// c/bench.c reads it.
func threadCPU(b testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// goRig is the Go side: the same objects as c/bench.c, made through
// uverbs on the simulated device in this process.
type goRig struct {
	restore func()
	ctx     *uverbs.Context
	pd      *uverbs.PD
	buf     *uverbs.Buffer
	mr      *uverbs.MR
	cq      *uverbs.CQ
	qp      *uverbs.QP
	cqmem   []byte
	ncqe    uint32
	qpn     uint32
	ci      uint32
	wqeIdx  uint16
	wrs     map[string][]uverbs.SendWR
	wc      [16]uverbs.WC
}

func newGoRig(b *testing.B) *goRig {
	b.Helper()
	p := mlx5sim.DefaultProfile()
	dir := b.TempDir()
	sys, dev := filepath.Join(dir, "sys"), filepath.Join(dir, "dev")
	if err := mlx5sim.WriteSysfs(sys, p); err != nil {
		b.Fatal(err)
	}
	if err := mlx5sim.WriteDevRoot(dev); err != nil {
		b.Fatal(err)
	}
	d := mlx5sim.New(p)
	g := &goRig{restore: d.Install()}
	fail := func(err error) {
		g.close()
		b.Fatal(err)
	}
	devInfo, err := uverbs.Discovery{SysRoot: sys, DevRoot: dev}.Device(mlx5sim.DeviceName)
	if err != nil {
		fail(err)
	}
	if g.ctx, err = uverbs.OpenDevice(devInfo, nil); err != nil {
		fail(err)
	}
	if g.pd, err = g.ctx.AllocPD(); err != nil {
		fail(err)
	}
	if g.buf, err = uverbs.AllocBuffer(65536); err != nil {
		fail(err)
	}
	for i := range g.buf.Bytes() {
		g.buf.Bytes()[i] = 0x5a
	}
	if g.mr, err = g.pd.RegMR(g.buf, qp.AccessLocalWrite); err != nil {
		fail(err)
	}
	if g.cq, err = g.ctx.CreateCQ(256, nil, 0); err != nil {
		fail(err)
	}
	g.qp, err = g.pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: g.cq, RecvCQ: g.cq,
		Cap: qp.Cap{MaxSendWR: 256, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64}})
	if err != nil {
		fail(err)
	}
	steps := []struct {
		a qp.Attr
		m qp.Mask
	}{
		{qp.Attr{State: qp.Init, Port: 1, AccessFlags: qp.AccessRemoteWrite}, qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort | qp.MaskAccessFlags},
		{qp.Attr{State: qp.RTR, PathMTU: rdma.MTU1024, DestQPN: 0x123, MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AH: qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{HopLimit: 64, DGID: [16]byte{10: 0xff, 11: 0xff, 12: 192, 14: 2, 15: 2}}}},
			qp.MaskState | qp.MaskAV | qp.MaskPathMTU | qp.MaskDestQPN | qp.MaskRQPSN | qp.MaskMaxDestRdAtomic | qp.MaskMinRNRTimer},
		{qp.Attr{State: qp.RTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
			qp.MaskState | qp.MaskSQPSN | qp.MaskTimeout | qp.MaskRetryCnt | qp.MaskRNRRetry | qp.MaskMaxQPRdAtomic},
	}
	for _, s := range steps {
		if err := g.qp.Modify(&s.a, s.m); err != nil {
			fail(err)
		}
	}
	addr, n, ok := d.CQBuffer("cq0")
	if !ok {
		fail(fmt.Errorf("the device has no cq0 buffer"))
	}
	g.cqmem, g.ncqe, g.qpn = kcall.MemAt(addr, n*64), uint32(n), g.qp.Num()
	base := g.buf.Addr()
	sge := []uverbs.SGE{{Addr: base, Length: 64, LKey: g.mr.LKey}}
	g.wrs = map[string][]uverbs.SendWR{
		"send_inline64": {{Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled | uverbs.SendInline, SGEs: sge}},
		"write_sge1": {{Opcode: uverbs.OpRDMAWrite, Flags: uverbs.SendSignaled,
			SGEs: []uverbs.SGE{{Addr: base, Length: 4096, LKey: g.mr.LKey}}, RemoteAddr: 0x7f0000001000, RKey: 0x1234}},
	}
	batch := make([]uverbs.SendWR, 16)
	for i := range batch {
		batch[i] = uverbs.SendWR{ID: uint64(i), Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: sge}
	}
	g.wrs["batch16"] = batch
	return g
}

// benchCase is one case of c/bench.c: its WRs, the WQEBBs each takes and
// the send opcode its CQEs carry.
type benchCase struct {
	wrs []uverbs.SendWR
	bbs uint16
	sop byte
}

func (g *goRig) benchCase(c string) benchCase {
	bc := benchCase{wrs: g.wrs[c], bbs: 1, sop: 0x0a} // MLX5_OPCODE_SEND
	switch c {
	case "send_inline64":
		bc.bbs = 2 // ctrl 16 + inline 4 + 64, padded: 96 bytes
	case "write_sge1":
		bc.sop = 0x08 // MLX5_OPCODE_RDMA_WRITE
	}
	return bc
}

// iteration is one loop body of c/bench.c. The timed loops (run,
// BenchmarkGoSide) call it through iterations, which has it inlined:
// c/bench.c's loop body is inline in main, and a call per iteration
// (arguments, frame, spills: 20-odd instructions) would be the
// harness's cost, charged to our provider.
//
//go:noinline
func (g *goRig) iteration(bc *benchCase) { g.iterations(bc, 1) }

// benchLoop is the state of iterations' loop, kept in memory (on the
// stack) and loaded where used: as locals, values live across the whole
// loop were reloaded from their spill slots after every call (Go keeps
// no register across a call) and shuffled at the loop's back edge.
type benchLoop struct {
	q      *uverbs.QP
	cq     *uverbs.CQ
	wrs    []uverbs.SendWR
	wc     *[16]uverbs.WC
	cqmem  unsafe.Pointer
	ncqe   uint32
	sopQPN uint32 // the CQE's sop_drop_qpn, host order
	ci     uint32
	wqeIdx uint16
	bbs    uint16
}

// iterations runs k iterations of c/bench.c's loop body: post, write
// the requester CQEs the device would write (byte for byte as
// bench.c's complete: a memset of 56 bytes, one 32-bit and one 16-bit
// big-endian store, two byte stores, the owner bit from a division as
// there), poll them back, check them (status, and the ID against the
// WR's index, as bench.c's check). Written so that Go adds no work C
// does not do: the loop's state is in benchLoop; the CQ slot and the
// WCs are reached through pointers, not slices (no bounds checks: the
// slot is masked with ncqe - 1, and the case's WRs, at most 16, are
// checked once against the 16 WCs); and the ID is checked against the
// index, not loaded from the WR.
func (g *goRig) iterations(bc *benchCase, k int) {
	if len(bc.wrs) > len(g.wc) || len(g.cqmem) != int(g.ncqe)*64 || g.ncqe == 0 {
		panic("bench: more WRs than WCs, or a CQ buffer of the wrong size")
	}
	l := &benchLoop{q: g.qp, cq: g.cq, wrs: bc.wrs, wc: &g.wc, cqmem: unsafe.Pointer(&g.cqmem[0]),
		ncqe: g.ncqe, sopQPN: uint32(bc.sop)<<24 | g.qpn, ci: g.ci, wqeIdx: g.wqeIdx, bbs: bc.bbs}
	for ; k > 0; k-- {
		if err := l.q.PostSend(l.wrs); err != nil {
			panic(err)
		}
		cqmem, ncqe, sopQPN, ci, wqeIdx, bbs := l.cqmem, l.ncqe, l.sopQPN, l.ci, l.wqeIdx, l.bbs
		for n := len(l.wrs); n > 0; n-- {
			owner := byte((ci / ncqe) & 1)
			cqe := unsafe.Add(cqmem, uintptr(ci&(ncqe-1))*64)
			clear((*[56]byte)(cqe)[:])
			// Big-endian stores, as htobe32/htobe16 then memcpy: BSWAP
			// and ROLW, intrinsics (binary.BigEndian's functions are
			// inlined calls, each leaving an inline-mark NOP).
			if bigEndianHost {
				*(*uint32)(unsafe.Add(cqe, 56)), *(*uint16)(unsafe.Add(cqe, 60)) = sopQPN, wqeIdx
			} else {
				*(*uint32)(unsafe.Add(cqe, 56)) = bits.ReverseBytes32(sopQPN)
				*(*uint16)(unsafe.Add(cqe, 60)) = bits.ReverseBytes16(wqeIdx)
			}
			*(*byte)(unsafe.Add(cqe, 62)) = 0
			*(*byte)(unsafe.Add(cqe, 63)) = owner // MLX5_CQE_REQ << 4 | owner
			ci++
			wqeIdx += bbs
		}
		l.ci, l.wqeIdx = ci, wqeIdx
		wc := l.wc[:len(l.wrs)]
		for got := 0; got < len(wc); {
			polled, err := l.cq.Poll(wc[got:])
			if err != nil {
				panic(err)
			}
			got += polled
		}
		// A pointer walk, as gcc makes of bench.c's indexed loop.
		w := unsafe.Pointer(&wc[0])
		for i := range len(wc) {
			if (*uverbs.WC)(w).Status != rdma.WCSuccess || (*uverbs.WC)(w).ID != uint64(i) {
				panic(badCompletion(i, wc))
			}
			w = unsafe.Add(w, unsafe.Sizeof(uverbs.WC{}))
		}
	}
	g.ci, g.wqeIdx = l.ci, l.wqeIdx
}

// bigEndianHost: the GOARCHes whose byte order is big-endian.
const bigEndianHost = runtime.GOARCH == "s390x" || runtime.GOARCH == "ppc64" || runtime.GOARCH == "mips" ||
	runtime.GOARCH == "mips64" || runtime.GOARCH == "sparc64"

// badCompletion is the message for a bad completion: built out of
// line, so that the check loop keeps nothing on the stack for it.
//
//go:noinline
func badCompletion(i int, wc []uverbs.WC) string {
	return fmt.Sprintf("completion %d: %+v", i, wc[i])
}

// run times iters iterations of case c after a warm-up of a tenth, as
// c/bench.c does, and returns ns per WR, wall and thread CPU time (the
// goroutine locked to its thread, so that the CPU clock is the loop's).
func (g *goRig) run(b testing.TB, c string, iters int) (wall, cpu float64) {
	bc := g.benchCase(c)
	// The provider allocates nothing, but this process also runs the
	// C half's harness (sysfs tree, child process, its output), whose
	// garbage would otherwise be collected during the timed loop below:
	// GC assist, mark workers and their preemption of this goroutine
	// charged to our provider. Finish that collection first, as
	// runCBench does before starting the child.
	runtime.GC()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.iterations(&bc, iters/10+1)
	start, cpuStart := time.Now(), threadCPU(b)
	g.iterations(&bc, iters)
	cpuNS, wallNS := threadCPU(b)-cpuStart, time.Since(start)
	n := float64(iters * len(bc.wrs))
	return float64(wallNS.Nanoseconds()) / n, float64(cpuNS.Nanoseconds()) / n
}

func (g *goRig) close() {
	if g.qp != nil {
		g.qp.Close()
	}
	if g.cq != nil {
		g.cq.Close()
	}
	if g.mr != nil {
		g.mr.Close()
	}
	if g.buf != nil {
		g.buf.Close()
	}
	if g.pd != nil {
		g.pd.Close()
	}
	if g.ctx != nil {
		g.ctx.Close()
	}
	g.restore()
}

// BenchmarkGoSide runs the Go half of BenchmarkVsLibmlx5 alone, one
// sub-benchmark per case, for profiling (-cpuprofile) and for comparing
// variants of the provider with benchstat; ratios against libmlx5 come
// from BenchmarkVsLibmlx5 only.
func BenchmarkGoSide(b *testing.B) {
	g := newGoRig(b)
	defer g.close()
	for _, c := range []string{"send_inline64", "write_sge1", "batch16"} {
		b.Run(c, func(b *testing.B) {
			bc := g.benchCase(c)
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			cpu0 := threadCPU(b)
			g.iterations(&bc, b.N) // the timed loop of run, b.N iterations
			b.StopTimer()
			cpuNS := threadCPU(b) - cpu0
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bc.wrs)), "ns/WR")
			b.ReportMetric(float64(cpuNS.Nanoseconds())/float64(b.N*len(bc.wrs)), "cpu-ns/WR")
		})
	}
}
