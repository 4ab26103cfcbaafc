package uverbs

// The mlx5 data path over mmap'd memory, no kernel: a fake context with a
// static UAR page, one CQ and one RC QP built by the provider itself.
// Golden bytes are derived by hand from qp.c _mlx5_post_send and
// cq.c mlx5_parse_cqe.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/go-rdma/rdmacm/rdma"
	"runtime"
	"testing"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
)

type mlx5Fake struct {
	p   *mlx5Provider
	x   *Context
	uar []byte
	cq  *CQ
	c   *mlx5CQ
	q   *QP
	m   *mlx5QP
}

func newMLX5Fake(t testing.TB, typ qp.QPType, c qp.Cap) *mlx5Fake {
	x := &Context{dev: Device{Name: "mlx5_0"}}
	p := &mlx5Provider{x: x, pageSize: 4096, cacheLine: 64, maxSQDescSz: 512, maxRQDescSz: 512,
		maxSendWqebb: 1 << 16, maxRecvWR: 1 << 16, cqeVersion: 1, numUARsPerPage: 1, bfRegSize: 512,
		noKernDynUAR: true, totUUARs: 2, lowLatUUARs: 4}
	x.prov = p
	uar, err := mmapAnon(4096)
	if err != nil {
		t.Fatal(err)
	}
	p.uars = [][]byte{uar}
	p.bfs = make([]mlx5BF, 4)
	for k := range p.bfs {
		p.bfs[k] = mlx5BF{reg: unsafe.Pointer(&uar[mlx5BFOffset+k*512]), uuarn: uint32(k)}
		if k != 0 {
			p.bfs[k].bufSize = 256
		}
	}
	p.cqUARReg = unsafe.Pointer(&uar[0])
	f := &mlx5Fake{p: p, x: x, uar: uar}
	f.cq = &CQ{ctx: x}
	_, out, n, err := p.cqData(f.cq, 15)
	if err != nil || n != 15 {
		t.Fatalf("cqData: %d %v", n, err)
	}
	f.cq.cqe = n
	ne.PutUint32(out, 0x77)
	ops, err := p.newCQ(f.cq, out)
	if err != nil {
		t.Fatal(err)
	}
	f.cq.ops, f.c = ops, ops.(*mlx5CQ)
	f.q = &QP{pd: &PD{ctx: x}, typ: typ, num: 0x123, sendCQ: f.cq, recvCQ: f.cq}
	init := QPInit{Type: typ, Cap: c}
	if _, _, err := p.qpData(f.q, &init); err != nil {
		t.Fatal(err)
	}
	f.q.cap = init.Cap
	resp := make([]byte, 40)
	ne.PutUint32(resp, 1) // bfreg_index 1
	qops, err := p.newQP(f.q, resp)
	if err != nil {
		t.Fatal(err)
	}
	f.q.ops, f.m = qops, qops.(*mlx5QP)
	for _, s := range []qp.State{qp.Init, qp.RTR, qp.RTS} {
		p.modifyQPDone(f.q, &qp.Attr{State: s}, qp.MaskState, nil)
		f.q.state = s
	}
	t.Cleanup(func() { f.m.close(); f.c.close(); p.close() })
	return f
}

func TestMLX5Sizing(t *testing.T) {
	p := &mlx5Provider{maxSQDescSz: 512, maxRQDescSz: 512, maxSendWqebb: 1 << 16, maxRecvWR: 1 << 16}
	for _, tc := range []struct {
		typ                          qp.QPType
		c                            qp.Cap
		sqCnt, sqPost, inline, rqCnt int
		rqShift                      uint
		rqPost, rqGS, total          int
	}{
		// RC: 192 overhead; inline 192+48=240 vs 192+32 → 256-byte WQE.
		{qp.RC, qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 32}, 16, 4, 60, 4, 5, 4, 2, 1024 + 128},
		// RC, 1 SGE, no inline: 208 → 256; 1 recv SGE → 16-byte RQ WQE, 64 bytes min.
		{qp.RC, qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}, 4, 1, 60, 4, 4, 4, 1, 256 + 64},
		// UD: 64 overhead + 16 → 128; 100 WRs → 16384 bytes.
		{qp.UD, qp.Cap{MaxSendWR: 100, MaxRecvWR: 100, MaxSendSGE: 1, MaxRecvSGE: 3}, 256, 128, 60, 128, 6, 128, 4, 16384 + 8192},
	} {
		s, err := p.calcWQSize(tc.typ, tc.c)
		if err != nil {
			t.Fatal(err)
		}
		got := []int{int(s.sq.wqeCnt), int(s.sq.maxPost), s.maxInline, int(s.rq.wqeCnt), int(s.rq.wqeShift), int(s.rq.maxPost), s.rq.maxGS, s.total, s.sq.offset}
		want := []int{tc.sqCnt, tc.sqPost, tc.inline, tc.rqCnt, int(tc.rqShift), tc.rqPost, tc.rqGS, tc.total, s.rqSize}
		if !slicesEq(got, want) {
			t.Errorf("%v %+v: got %v want %v", tc.typ, tc.c, got, want)
		}
	}
	if _, err := p.calcWQSize(qp.RC, qp.Cap{MaxSendWR: 1, MaxSendSGE: 21}); err == nil {
		t.Error("21 SGEs fit a 512-byte descriptor")
	}
}

func slicesEq(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hexb(s string) []byte {
	var out []byte
	for _, f := range bytes.Fields([]byte(s)) {
		var v byte
		for _, c := range f {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= c - '0'
			default:
				v |= c - 'a' + 10
			}
		}
		out = append(out, v)
	}
	return out
}

func TestMLX5PostSendGolden(t *testing.T) {
	f := newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 32})
	if f.q.cap.MaxSendWR != 4 || f.m.maxInline != 60 {
		t.Fatalf("cap %+v inline %d", f.q.cap, f.m.maxInline)
	}
	// SEND inline "hello", signaled: ctrl, inline header, 5 bytes.
	if err := f.q.PostSend([]SendWR{{ID: 7, Opcode: OpSend, Flags: SendInline | SendSignaled, InlineData: []byte("hello")}}); err != nil {
		t.Fatal(err)
	}
	want := hexb("00 00 00 0a 00 01 23 02 00 00 00 08 00 00 00 00 80 00 00 05 68 65 6c 6c 6f")
	if got := f.m.sqBuf[:len(want)]; !bytes.Equal(got, want) {
		t.Errorf("SEND inline WQE\n got % x\nwant % x", got, want)
	}
	if f.m.db[mlx5SndDBR] != htobe32(1) {
		t.Errorf("SND dbrec %#x", f.m.db[mlx5SndDBR])
	}
	// BlueFlame: the whole 64-byte WQEBB at bfreg 1, offset 0.
	if !bytes.Equal(f.uar[0x800+512:0x800+512+64], f.m.sqBuf[:64]) || f.m.bf.offset != 256 {
		t.Errorf("BlueFlame copy missing (offset %d)", f.m.bf.offset)
	}
	// RDMA WRITE with two SGEs, unsignaled, fenced.
	err := f.q.PostSend([]SendWR{{ID: 8, Opcode: OpRDMAWrite, Flags: SendFence, RemoteAddr: 0x1122334455667788, RKey: 0xaabbccdd,
		SGEs: []SGE{{Addr: 0x1000, Length: 0x40, LKey: 0x11}, {Addr: 0x2000, Length: 0x80, LKey: 0x22}}}})
	if err != nil {
		t.Fatal(err)
	}
	want = hexb(`00 00 01 08 00 01 23 04 00 00 00 80 00 00 00 00
		11 22 33 44 55 66 77 88 aa bb cc dd 00 00 00 00
		00 00 00 40 00 00 00 11 00 00 00 00 00 00 10 00
		00 00 00 80 00 00 00 22 00 00 00 00 00 00 20 00`)
	if got := f.m.sqBuf[64:128]; !bytes.Equal(got, want) {
		t.Errorf("WRITE WQE\n got % x\nwant % x", got, want)
	}
	if !bytes.Equal(f.uar[0x800+512+256:0x800+512+256+64], want) {
		t.Error("second BlueFlame copy not in the other half")
	}
	// Two WRs in one call: one 8-byte doorbell of the last ctrl.
	if err := f.q.PostSend([]SendWR{{ID: 9, Opcode: OpSend}, {ID: 10, Opcode: OpSend, SGEs: []SGE{{Addr: 1, Length: 0, LKey: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.uar[0x800+512:0x800+512+8], f.m.sqBuf[192:200]) {
		t.Error("doorbell is not the last ctrl's first 8 bytes")
	}
	// Queue full: max_post 4, four posted.
	if err := f.q.PostSend([]SendWR{{ID: 11, Opcode: OpSend}}); err == nil || !errors.Is(err, ErrQueueFull) {
		t.Errorf("overflow: %v", err)
	}
}

func TestMLX5UDGolden(t *testing.T) {
	f := newMLX5Fake(t, qp.UD, qp.Cap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1})
	ah := &AH{Attr: qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{HopLimit: 64, DGID: [16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 2}}}}
	f.p.linkLayer[0] = LinkEthernet
	out := hexb("10 00 00 00 02 11 22 33 44 55 00 00 00 00 00 00")
	f.p.ahCreated(ah, out)
	if err := f.q.PostSend([]SendWR{{ID: 1, Opcode: OpSend, Flags: SendSignaled, AH: ah, RemoteQPN: 0x42, RemoteQKey: 0x11111111,
		SGEs: []SGE{{Addr: 0x3000, Length: 16, LKey: 5}}}}); err != nil {
		t.Fatal(err)
	}
	want := hexb(`00 00 00 0a 00 01 23 05 00 00 00 08 00 00 00 00
		11 11 11 11 00 00 00 00 80 00 00 42 00 00 00 00
		00 00 00 00 02 11 22 33 44 55 00 40 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 ff ff c0 00 02 02
		00 00 00 10 00 00 00 05 00 00 00 00 00 00 30 00`)
	if got := f.m.sqBuf[:80]; !bytes.Equal(got, want) {
		t.Errorf("UD WQE\n got % x\nwant % x", got, want)
	}
}

// putCQE writes a CQE at ring index n with the owner bit software expects.
func (f *mlx5Fake) putCQE(n uint32, op uint8, qpOp uint8, ctr uint16, byteCnt, imm uint32, extra func(e []byte)) {
	e := f.c.cqe(n)
	clear(e)
	binary.BigEndian.PutUint32(e[cqeSRQNUIdx:], f.m.uidx)
	binary.BigEndian.PutUint32(e[cqeSopDropQPN:], uint32(qpOp)<<24|0x123)
	binary.BigEndian.PutUint16(e[cqeWQECounter:], ctr)
	binary.BigEndian.PutUint32(e[cqeByteCnt:], byteCnt)
	binary.BigEndian.PutUint32(e[cqeImmInvalPKey:], imm)
	if extra != nil {
		extra(e)
	}
	own := uint8(0)
	if n&(f.c.mask+1) != 0 {
		own = 1
	}
	e[cqeOpOwn] = op<<4 | own
}

func TestMLX5PollOpcodes(t *testing.T) {
	f := newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2})
	wc := make([]WC, 4)
	if n, _ := f.cq.Poll(wc); n != 0 || f.c.db[mlx5CQSetCI] != 0 {
		t.Fatalf("empty CQ polled %d", n)
	}
	f.q.PostSend([]SendWR{{ID: 1, Opcode: OpSend}, {ID: 2, Opcode: OpRDMARead, SGEs: []SGE{{Addr: 1, Length: 8, LKey: 1}}}})
	f.q.PostRecv([]RecvWR{{ID: 100}, {ID: 101}, {ID: 102}, {ID: 103}})
	ci := uint32(0)
	for _, tc := range []struct {
		op, sop uint8
		ctr     uint16
		want    WC
		extra   func([]byte)
	}{
		{mlx5CQEReq, mlx5OpcodeSend, 0, WC{ID: 1, Opcode: rdma.WCSend, QPNum: 0x123}, nil},
		{mlx5CQEReq, mlx5OpcodeRDMARead, 1, WC{ID: 2, Opcode: rdma.WCRDMARead, ByteLen: 8, QPNum: 0x123}, nil},
		{mlx5CQERespSend, 0, 0, WC{ID: 100, Opcode: rdma.WCRecv, ByteLen: 8, QPNum: 0x123, SrcQP: 0x55, SL: 3, Flags: WCWithGRH, SLID: 9, PKeyIndex: 0xbeef, DLIDPathBits: 1},
			func(e []byte) {
				binary.BigEndian.PutUint32(e[cqeFlagsRQPN:], 1<<28|3<<24|0x55)
				e[cqeSLID+1] = 9
				e[cqeMLPath] = 0x81
			}},
		{mlx5CQERespSendImm, 0, 0, WC{ID: 101, Opcode: rdma.WCRecv, ByteLen: 8, Imm: 0xdeadbeef, QPNum: 0x123, Flags: WCWithImm, PKeyIndex: 0xbeef}, nil},
		{mlx5CQERespWrImm, 0, 0, WC{ID: 102, Opcode: rdma.WCRecvRDMAWithImm, ByteLen: 8, Imm: 0xdeadbeef, QPNum: 0x123, Flags: WCWithImm, PKeyIndex: 0xbeef}, nil},
		{mlx5CQERespErr, 0, 0, WC{ID: 103, Status: rdma.WCWRFlushErr, VendorErr: 0x44, QPNum: 0x123},
			func(e []byte) { e[cqeSyndrome] = 0x05; e[cqeVendorErrSynd] = 0x44 }},
	} {
		f.putCQE(ci, tc.op, tc.sop, tc.ctr, 8, 0xdeadbeef, tc.extra)
		ci++
		n, err := f.cq.Poll(wc[:1])
		if err != nil || n != 1 || wc[0] != tc.want {
			t.Errorf("opcode %d: n=%d %v\n got %+v\nwant %+v", tc.op, n, err, wc[0], tc.want)
		}
		if f.c.db[mlx5CQSetCI] != htobe32(ci) {
			t.Errorf("SET_CI %#x after %d", f.c.db[mlx5CQSetCI], ci)
		}
	}
	// Every syndrome.
	for syn, st := range map[uint8]rdma.WCStatus{1: 1, 2: 2, 4: 4, 5: 5, 6: 6, 0x10: 7, 0x11: 8, 0x12: 9, 0x13: 10, 0x14: 11, 0x15: 12, 0x16: 13, 0x22: 16, 0x99: 21} {
		if got := mlx5ErrorStatus(syn); got != st {
			t.Errorf("syndrome %#x: %d want %d", syn, got, st)
		}
	}
	// Unknown user index: poll error, CQE consumed.
	f.putCQE(ci, mlx5CQEReq, mlx5OpcodeSend, 0, 0, 0, func(e []byte) { binary.BigEndian.PutUint32(e[cqeSRQNUIdx:], 0x777) })
	if _, err := f.cq.Poll(wc); err == nil || f.c.consIndex != ci+1 {
		t.Errorf("unknown uidx: %v", err)
	}
}

func TestMLX5OwnershipWrap(t *testing.T) {
	f := newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 64, MaxSendSGE: 1})
	wc := make([]WC, 1)
	for i := uint32(0); i < 40; i++ {
		f.q.PostSend([]SendWR{{ID: uint64(i), Opcode: OpSend, Flags: SendSignaled}})
		f.putCQE(i, mlx5CQEReq, mlx5OpcodeSend, uint16(f.m.sq.curPost-1), 0, 0, nil)
		if n, err := f.cq.Poll(wc); n != 1 || err != nil || wc[0].ID != uint64(i) {
			t.Fatalf("CQE %d: n=%d %v id %d", i, n, err, wc[0].ID)
		}
		// A stale CQE from the previous lap is not software-owned.
		if n, _ := f.cq.Poll(wc); n != 0 {
			t.Fatalf("stale CQE polled after %d", i)
		}
	}
}

func TestMLX5DBRecAllocator(t *testing.T) {
	p := &mlx5Provider{pageSize: 4096, cacheLine: 64}
	defer p.close()
	var dbs []*[2]uint32
	for i := 0; i < 65; i++ {
		d, err := p.allocDB()
		if err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, d)
	}
	off := func(d *[2]uint32) uintptr { return uintptr(unsafe.Pointer(d)) & 4095 }
	if off(dbs[0]) != 0 || off(dbs[1]) != 64 || off(dbs[63]) != 63*64 || off(dbs[64]) != 0 || len(p.dbAll) != 2 {
		t.Fatalf("offsets %d %d %d %d pages %d", off(dbs[0]), off(dbs[1]), off(dbs[63]), off(dbs[64]), len(p.dbAll))
	}
	// Freeing slot 5 of the full first page puts it back at the head.
	p.freeDB(dbs[5])
	d, _ := p.allocDB()
	if d != dbs[5] {
		t.Errorf("reallocated %p, want %p", d, dbs[5])
	}
}

func BenchmarkMLX5PostSendPoll(b *testing.B) {
	f := newMLX5Fake(b, qp.RC, qp.Cap{MaxSendWR: 64, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	wr := []SendWR{{ID: 1, Opcode: OpRDMAWrite, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x1000, Length: 64, LKey: 1}}, RemoteAddr: 0x2000, RKey: 2}}
	wc := make([]WC, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := f.q.PostSend(wr); err != nil {
			b.Fatal(err)
		}
		f.putCQE(f.c.consIndex, mlx5CQEReq, mlx5OpcodeRDMAWrite, uint16(f.m.sq.curPost-1), 0, 0, nil)
		if n, _ := f.cq.Poll(wc); n != 1 {
			b.Fatal("no completion")
		}
	}
}

// An inline SGE at an address below 4096 fails with EFAULT instead of
// faulting with the send queue locked; the queue takes the next post.
func TestMLX5PostSendInlineLowAddress(t *testing.T) {
	f := newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 32})
	src := []byte("0123456789abcdef")
	good := SGE{Addr: uint64(uintptr(unsafe.Pointer(&src[0]))), Length: 16}
	for _, sges := range [][]SGE{{{Addr: 16, Length: 8}}, {good, {Addr: 0, Length: 4}}} {
		err := f.q.PostSend([]SendWR{{ID: 1, Opcode: OpSend, Flags: SendInline, SGEs: sges}})
		if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, unix.EFAULT) {
			t.Fatalf("inline SGEs %+v: %v, want ErrInvalidArgument and EFAULT", sges, err)
		}
	}
	if f.m.sq.curPost != 0 {
		t.Fatalf("cur_post %d after failed posts", f.m.sq.curPost)
	}
	// Two SGEs inline (set_data_inl_seg): 32 bytes after the header.
	if err := f.q.PostSend([]SendWR{{ID: 2, Opcode: OpSend, Flags: SendInline, SGEs: []SGE{good, good}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.m.sqBuf[16:20], hexb("80 00 00 20"); !bytes.Equal(got, want) || !bytes.Equal(f.m.sqBuf[20:36], src) || !bytes.Equal(f.m.sqBuf[36:52], src) {
		t.Errorf("inline segment % x", f.m.sqBuf[16:52])
	}
	if f.m.sq.curPost != 1 || f.m.sq.wrid[0] != 2 {
		t.Errorf("cur_post %d wrid %d", f.m.sq.curPost, f.m.sq.wrid[0])
	}
	runtime.KeepAlive(src)
}
