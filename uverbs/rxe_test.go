package uverbs

// Host tests of the rxe data path against rings in anonymous memory laid
// out as the kernel lays them out, checked at the C offsets of
// rdma_user_rxe.h (independently of the Go structs), with a pipe standing
// in for the uverbs fd to catch the doorbell.

import (
	"encoding/binary"
	"errors"
	"github.com/go-rdma/rdmacm/rdma"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
)

var ne = binary.NativeEndian

// fakeRing maps a ring with slots of 1<<shift bytes.
func fakeRing(t testing.TB, slots int, shift uint32) []byte {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, 384+slots<<shift, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	ne.PutUint32(mem[0:], shift)
	ne.PutUint32(mem[4:], uint32(slots-1))
	return mem
}

func fakeQP(t testing.TB, typ qp.QPType) (*rxeQP, []byte, []byte, int) {
	t.Helper()
	sqMem := fakeRing(t, 8, 9) // 512-byte send slots
	rqMem := fakeRing(t, 8, 7) // 128-byte receive slots
	sq, err := newRxeQueue(sqMem, rxeSendHdr)
	if err != nil {
		t.Fatal(err)
	}
	rq, err := newRxeQueue(rqMem, rxeRecvHdr)
	if err != nil {
		t.Fatal(err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	x := &Context{dev: Device{Name: "fake0"}}
	q := &QP{pd: &PD{ctx: x}, typ: typ, num: 0x11, handle: 7, cap: qp.Cap{MaxSendWR: 7, MaxRecvWR: 7, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 128}}
	r := &rxeQP{qp: q, fd: p[1], sq: sq, rq: rq}
	r.doorbell = []byte("doorbell")
	return r, sqMem, rqMem, p[0]
}

func readDoorbells(t testing.TB, fd int) int {
	t.Helper()
	buf := make([]byte, 1024)
	n, err := unix.Read(fd, buf)
	if errors.Is(err, unix.EAGAIN) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n / len("doorbell")
}

func TestRxePostSendLayout(t *testing.T) {
	r, sq, _, db := fakeQP(t, qp.RC)
	err := r.postSend([]SendWR{
		{ID: 0x1122, Opcode: OpRDMAWriteWithImm, Flags: SendSignaled, Imm: 0xa1b2c3d4,
			SGEs: []SGE{{Addr: 0x1000, Length: 100, LKey: 5}, {Addr: 0x2000, Length: 28, LKey: 6}}, RemoteAddr: 0xfeed0000, RKey: 0x77},
		{ID: 2, Opcode: OpSend, Flags: SendInline, InlineData: []byte("hello")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readDoorbells(t, db); got != 1 {
		t.Fatalf("%d doorbells for one batch", got)
	}
	if ne.Uint32(sq[128:]) != 2 {
		t.Fatalf("producer %d", ne.Uint32(sq[128:]))
	}
	w := sq[384 : 384+512]
	if ne.Uint64(w[0:]) != 0x1122 || ne.Uint32(w[12:]) != uint32(OpRDMAWriteWithImm) || ne.Uint32(w[16:]) != uint32(SendSignaled) {
		t.Errorf("wr header % x", w[:24])
	}
	if binary.BigEndian.Uint32(w[20:]) != 0xa1b2c3d4 {
		t.Errorf("imm_data % x (must be big-endian)", w[20:24])
	}
	if ne.Uint64(w[24:]) != 0xfeed0000 || ne.Uint32(w[32:]) != 0x77 || ne.Uint64(w[152:]) != 0xfeed0000 {
		t.Errorf("rdma fields / iova % x ... %x", w[24:40], ne.Uint64(w[152:]))
	}
	// dma: length, resid, cur_sge, num_sge, sge_offset at 184..
	if ne.Uint32(w[184:]) != 128 || ne.Uint32(w[188:]) != 128 || ne.Uint32(w[192:]) != 0 || ne.Uint32(w[196:]) != 2 || ne.Uint32(w[148:]) != 0 {
		t.Errorf("dma % x", w[184:208])
	}
	if ne.Uint64(w[208:]) != 0x1000 || ne.Uint32(w[216:]) != 100 || ne.Uint32(w[220:]) != 5 || ne.Uint64(w[224:]) != 0x2000 || ne.Uint32(w[236:]) != 6 {
		t.Errorf("sges % x", w[208:240])
	}
	w = sq[384+512 : 384+1024]
	if string(w[208:213]) != "hello" || ne.Uint32(w[184:]) != 5 || ne.Uint32(w[16:]) != uint32(SendInline) {
		t.Errorf("inline wqe % x", w[184:216])
	}
}

func TestRxeSendQueueFullAndErrors(t *testing.T) {
	r, sq, _, db := fakeQP(t, qp.UC)
	wrs := make([]SendWR, 9)
	for i := range wrs {
		wrs[i] = SendWR{ID: uint64(i), Opcode: OpSend}
	}
	// 8 slots hold 7 WRs (one stays empty to tell full from empty).
	err := r.postSend(wrs)
	if !errors.Is(err, ErrQueueFull) || ne.Uint32(sq[128:]) != 7 || readDoorbells(t, db) != 1 {
		t.Fatalf("full: %v, producer %d", err, ne.Uint32(sq[128:]))
	}
	// The kernel consumes three; posting resumes and wraps.
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&sq[256])), 3)
	if err := r.postSend(wrs[:3]); err != nil || ne.Uint32(sq[128:]) != 2 {
		t.Fatalf("after consume: %v, producer %d", err, ne.Uint32(sq[128:]))
	}
	readDoorbells(t, db)
	for _, c := range []struct {
		name string
		wr   SendWR
	}{
		{"read on UC", SendWR{Opcode: OpRDMARead}},
		{"too many SGEs", SendWR{Opcode: OpSend, SGEs: make([]SGE, 5)}},
		{"inline too long", SendWR{Opcode: OpSend, Flags: SendInline, InlineData: make([]byte, 129)}},
		{"unknown opcode", SendWR{Opcode: 99}},
	} {
		if err := r.postSend([]SendWR{c.wr}); err == nil {
			t.Errorf("%s accepted", c.name)
		}
	}
	if readDoorbells(t, db) != 0 {
		t.Error("doorbell rung for rejected WRs")
	}
}

func TestRxeUDSendCarriesAHNum(t *testing.T) {
	r, sq, _, _ := fakeQP(t, qp.UD)
	if err := r.postSend([]SendWR{{Opcode: OpSend}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("UD without AH: %v", err)
	}
	ah := &AH{num: 9}
	if err := r.postSend([]SendWR{{Opcode: OpSendWithImm, AH: ah, RemoteQPN: 0x42, RemoteQKey: 0x1234}}); err != nil {
		t.Fatal(err)
	}
	w := sq[384:]
	if ne.Uint32(w[24:]) != 0x42 || ne.Uint32(w[28:]) != 0x1234 || ne.Uint32(w[36:]) != 9 {
		t.Errorf("ud fields % x", w[24:40])
	}
}

func TestRxePostRecvLayout(t *testing.T) {
	r, _, rq, _ := fakeQP(t, qp.RC)
	if err := r.postRecv([]RecvWR{{ID: 77, SGEs: []SGE{{Addr: 0x3000, Length: 64, LKey: 3}, {Addr: 0x4000, Length: 32, LKey: 4}}}}); err != nil {
		t.Fatal(err)
	}
	w := rq[384:]
	if ne.Uint32(rq[128:]) != 1 || ne.Uint64(w[0:]) != 77 || ne.Uint32(w[16:]) != 96 || ne.Uint32(w[20:]) != 96 || ne.Uint32(w[28:]) != 2 {
		t.Errorf("recv wqe % x", w[:40])
	}
	if ne.Uint64(w[40:]) != 0x3000 || ne.Uint32(w[48:]) != 64 || ne.Uint32(w[52:]) != 3 || ne.Uint64(w[56:]) != 0x4000 {
		t.Errorf("recv sges % x", w[40:72])
	}
	if err := r.postRecv([]RecvWR{{SGEs: make([]SGE, 6)}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("6 SGEs in 128-byte slots: %v", err)
	}
}

func TestRxePollCQ(t *testing.T) {
	mem := fakeRing(t, 4, 7)
	q, err := newRxeQueue(mem, 48)
	if err != nil {
		t.Fatal(err)
	}
	cq := &rxeCQ{q: q}
	wc := make([]WC, 4)
	if n := cq.poll(wc); n != 0 {
		t.Fatalf("empty ring polled %d", n)
	}
	// The "kernel" writes three CQEs (ib_uverbs_wc at offset 0 of each
	// slot), wrapping around slot 3 → 0, then publishes producer.
	ne.PutUint32(mem[256:], 2)
	for i, slot := range []int{2, 3, 0} {
		c := mem[384+slot*128:]
		ne.PutUint64(c[0:], uint64(10+i))
		ne.PutUint32(c[12:], 129)
		ne.PutUint32(c[20:], 42)
		binary.BigEndian.PutUint32(c[24:], 0xcafe0000+uint32(i))
		ne.PutUint32(c[28:], 0x11)
		ne.PutUint32(c[36:], uint32(WCWithImm))
	}
	ne.PutUint32(mem[128:], 1)
	n := cq.poll(wc[:2])
	if n != 2 || wc[0].ID != 10 || wc[1].ID != 11 || wc[0].Opcode != rdma.WCRecvRDMAWithImm || wc[0].ByteLen != 42 || wc[1].Imm != 0xcafe0001 || wc[0].QPNum != 0x11 {
		t.Fatalf("poll: %d %+v", n, wc[:2])
	}
	if ne.Uint32(mem[256:]) != 0 {
		t.Errorf("consumer %d", ne.Uint32(mem[256:]))
	}
	if n = cq.poll(wc); n != 1 || wc[0].ID != 12 || ne.Uint32(mem[256:]) != 1 {
		t.Errorf("second poll %d %+v", n, wc[0])
	}
}

func TestRxeQueueHeaderValidated(t *testing.T) {
	for _, c := range []struct {
		name        string
		shift, mask uint32
		size        int
	}{
		{"mask not 2^n-1", 7, 5, 384 + 8*128},
		{"slots past the mapping", 7, 15, 384 + 8*128},
		{"slot smaller than a WQE", 5, 7, 384 + 8*32},
		{"absurd shift", 40, 0, 4096},
	} {
		mem := make([]byte, c.size)
		ne.PutUint32(mem[0:], c.shift)
		ne.PutUint32(mem[4:], c.mask)
		if _, err := newRxeQueue(mem, 48); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := newRxeQueue(make([]byte, 100), 48); err == nil {
		t.Error("short mapping accepted")
	}
}

func TestDoorbellIsPostSendWithoutWRs(t *testing.T) {
	const resp = 0x7f0012345678
	var db [rxeDoorbellSize]byte
	putRxeDoorbell(&db, 0x33, resp)
	b := db[:]
	// hdr {command 28, in_words 8, out_words 1}, then ib_uverbs_post_send
	// {response, qp_handle, wr_count 0, sge_count 0, wqe_size 56}.
	if len(b) != 32 || ne.Uint32(b[0:]) != 28 || ne.Uint16(b[4:]) != 8 || ne.Uint16(b[6:]) != 1 ||
		ne.Uint64(b[8:]) != resp ||
		ne.Uint32(b[16:]) != 0x33 || ne.Uint32(b[20:]) != 0 || ne.Uint32(b[24:]) != 0 || ne.Uint32(b[28:]) != 56 {
		t.Fatalf("doorbell % x", b)
	}
}

// BenchmarkRxePostSend measures building one send WQE and publishing it,
// doorbell included (a write to /dev/null standing in for the uverbs fd);
// the "kernel" consumes the slot at once.
func BenchmarkRxePostSend(b *testing.B) {
	r, sq, _, _ := fakeQP(b, qp.RC)
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(null)
	r.fd = null
	wr := []SendWR{{ID: 2, Opcode: OpSend, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x1000, Length: 64, LKey: 1}}}}
	cons := (*uint32)(unsafe.Pointer(&sq[256]))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.postSend(wr); err != nil {
			b.Fatal(err)
		}
		atomic.StoreUint32(cons, atomic.LoadUint32((*uint32)(unsafe.Pointer(&sq[128]))))
	}
}

// BenchmarkRxePollCQ measures reading one completion from a CQ ring.
func BenchmarkRxePollCQ(b *testing.B) {
	mem := fakeRing(b, 4, 7)
	q, _ := newRxeQueue(mem, 48)
	cq := &rxeCQ{q: q}
	wc := make([]WC, 2)
	prod := (*uint32)(unsafe.Pointer(&mem[128]))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		atomic.StoreUint32(prod, (atomic.LoadUint32(prod)+1)&3)
		if cq.poll(wc) != 1 {
			b.Fatal("no completion")
		}
	}
}
