//go:build linux

package uverbs

import (
	"os"
	"testing"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/qp"
)

// rxeCostDevice answers the commands of cmtime's create qp and disconnect
// steps (QP create, MODIFY_QP through INVOKE_WRITE, QP destroy) and the
// rings' mmaps in place of the kernel, at once. With it the user-space
// side of PD.CreateQP, QP.Modify and QP.Close runs on the host, where its
// instructions can be counted (BenchmarkRxeQPCycleUserCost).
type rxeCostDevice struct {
	next uint32
	free [][]byte
}

func (d *rxeCostDevice) Ioctl(fd int, req uintptr, arg uintptr) (bool, error) {
	const hdrSize, attrSize = int(unsafe.Sizeof(abi.IoctlHdr{})), int(unsafe.Sizeof(abi.IoctlAttr{}))
	var hdr abi.IoctlHdr
	kcall.ReadMem(uint64(arg), abi.Bytes(&hdr)) // MemAt into Decode: Go 1.26.8's disjointTypes panic (kcall.ReadMem)
	if hdr.ObjectID != abi.UverbsObjectQP || hdr.MethodID != abi.UverbsMethodQPCreate {
		return true, nil
	}
	d.next++
	attrs := kcall.MemAt(uint64(arg), hdrSize+int(hdr.NumAttrs)*attrSize)[hdrSize:]
	for i := 0; i < int(hdr.NumAttrs); i++ {
		a := attrs[i*attrSize : (i+1)*attrSize]
		data := abi.Native.Uint64(a[8:])
		switch abi.Native.Uint16(a) {
		case abi.UverbsAttrCreateQPHandle:
			abi.Native.PutUint64(a[8:], uint64(d.next))
		case abi.UverbsAttrCreateQPRespQPNum:
			abi.Native.PutUint32(kcall.MemAt(data, 4), 0x100+d.next)
		case abi.UverbsAttrUHWOut:
			resp := abi.RxeCreateQPResp{
				RQMI: abi.RxeMmapInfo{Offset: 4096 * 2, Size: 4096},
				SQMI: abi.RxeMmapInfo{Offset: 4096, Size: 4096 * 2},
			}
			kcall.WriteMem(data, abi.Bytes(&resp))
		}
	}
	return true, nil
}

func (d *rxeCostDevice) Write(int, uintptr, int) (bool, int, error) { return false, 0, nil }

func (d *rxeCostDevice) Mmap(_ int, offset int64, size int, _, _ int) (bool, []byte, error) {
	// The rings come from a free list, so that the fake costs next to nothing.
	for i, m := range d.free {
		if len(m) == size {
			d.free = append(d.free[:i], d.free[i+1:]...)
			return true, m, nil
		}
	}
	mem := make([]byte, size)
	shift := uint32(7) // receive WQEs
	if offset == 4096 {
		shift = 9 // send WQEs
	}
	slots := uint32(1)
	for int(slots*2)<<shift <= size-abi.RxeQueueDataOff {
		slots *= 2
	}
	abi.Native.PutUint32(mem[0:], shift)
	abi.Native.PutUint32(mem[4:], slots-1)
	return true, mem, nil
}

func (d *rxeCostDevice) Munmap(b []byte) (bool, error) {
	d.free = append(d.free, b)
	return true, nil
}

// TestRxeQPCycleAllocs bounds the heap allocations of one rxe QP's
// create, INIT, ERR and destroy in this package: the QP and its rxe state
// are one object (rxeProvider.allocQP).
func TestRxeQPCycleAllocs(t *testing.T) {
	pd, init, initMask := rxeCostSetup(t)
	got := testing.AllocsPerRun(100, func() {
		rxeCostErrDestroy(t, rxeCostCreate(t, pd, init, initMask))
	})
	if got > 1 {
		t.Errorf("rxe QP create+INIT+ERR+destroy: %v allocations, want at most 1", got)
	}
}

// rxeCostSetup installs an rxeCostDevice for the test and returns a PD
// on a context of it, an RC QP's init attributes (one CQ) and the INIT
// mask cmtime's QPs get.
func rxeCostSetup(t testing.TB) (*PD, QPInit, qp.Mask) {
	t.Cleanup(kcall.SetTestDevice(&rxeCostDevice{}))
	null, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { null.Close() })
	x := &Context{dev: Device{Name: "fake0"}, fd: int(null.Fd()), nativeIoctl: true, invokeWrite: true, prov: &rxeProvider{}}
	pd := &PD{ctx: x, handle: 1}
	cq := &CQ{ctx: x, handle: 2}
	init := QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq, Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}
	return pd, init, qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort | qp.MaskAccessFlags
}

// BenchmarkRxeQPCycleUserCost runs one QP's create, INIT, ERR and destroy
// (what cmtime's create qp and disconnect steps ask of the verbs) with
// every syscall answered in process, so that only our user-space code is
// left. Count its instructions with callgrind:
//
//	go test -c -o /tmp/uverbs.test ./uverbs/
//	valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out /tmp/uverbs.test -test.run '^$' -test.bench RxeQPCycleUserCost -test.benchtime 200x
func BenchmarkRxeQPCycleUserCost(b *testing.B) {
	pd, init, initMask := rxeCostSetup(b)
	b.Run("one", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			q := rxeCostCreate(b, pd, init, initMask)
			rxeCostErrDestroy(b, q)
		}
	})
	// As cmtime's steps: 200 QPs created, then 200 closed (fresh memory
	// per QP, as in the guests).
	b.Run("batch200", func(b *testing.B) {
		b.ReportAllocs()
		qps := make([]*QP, 200)
		for i := range b.N {
			j := i % len(qps)
			qps[j] = rxeCostCreate(b, pd, init, initMask)
			if j == len(qps)-1 || i == b.N-1 {
				for _, q := range qps[:j+1] {
					rxeCostErrDestroy(b, q)
				}
			}
		}
	})
}

//go:noinline
func rxeCostCreate(b testing.TB, pd *PD, init QPInit, initMask qp.Mask) *QP {
	q, err := pd.CreateQP(init)
	if err != nil {
		b.Fatal(err)
	}
	if err := q.Modify(&qp.Attr{State: qp.Init, Port: 1}, initMask); err != nil {
		b.Fatal(err)
	}
	return q
}

//go:noinline
func rxeCostErrDestroy(b testing.TB, q *QP) {
	if err := q.Modify(&qp.Attr{State: qp.Err}, qp.MaskState); err != nil {
		b.Fatal(err)
	}
	if err := q.Close(); err != nil {
		b.Fatal(err)
	}
}
