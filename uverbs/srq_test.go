package uverbs

// Host tests of the SRQ data paths: the rxe ring against a fake ring laid
// out as the kernel lays it out, and the mlx5 free list, doorbell record
// and SRQ completions against the fake mlx5 context of mlx5_dp_test.go.

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

func TestRxeSRQPostRecv(t *testing.T) {
	mem := fakeRing(t, 4, 6) // 64-byte slots: the header and 1 SGE
	x := &Context{dev: Device{Name: "fake0"}}
	s := &SRQ{pd: &PD{ctx: x}, num: 5, cap: SRQAttr{MaxWR: 3, MaxSGE: 1}}
	r := &rxeSRQ{s: s}
	if err := r.ring.init(mem, rxeRecvHdr+rxeSGESize); err != nil {
		t.Fatal(err)
	}
	if err := r.postRecv([]RecvWR{{ID: 9, SGEs: []SGE{{Addr: 0x5000, Length: 100, LKey: 6}}}, {ID: 10}}); err != nil {
		t.Fatal(err)
	}
	w := mem[384:]
	if ne.Uint32(mem[128:]) != 2 || ne.Uint64(w[0:]) != 9 || ne.Uint32(w[16:]) != 100 || ne.Uint32(w[28:]) != 1 ||
		ne.Uint64(w[40:]) != 0x5000 || ne.Uint32(w[48:]) != 100 || ne.Uint32(w[52:]) != 6 {
		t.Errorf("SRQ WQE % x", w[:56])
	}
	if ne.Uint64(w[64:]) != 10 || ne.Uint32(w[64+28:]) != 0 {
		t.Errorf("second WQE % x", w[64:104])
	}
	if err := r.postRecv([]RecvWR{{SGEs: make([]SGE, 2)}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("2 SGEs on a 1-SGE SRQ: %v", err)
	}
	err := r.postRecv([]RecvWR{{ID: 11}, {ID: 12}})
	if !errors.Is(err, ErrQueueFull) || ne.Uint32(mem[128:]) != 3 {
		t.Errorf("full ring: %v, producer %d", err, ne.Uint32(mem[128:]))
	}
	r.ring.mem = nil // as close leaves it (the test unmaps the fake ring)
	if err := r.postRecv([]RecvWR{{ID: 1}}); !errors.Is(err, ErrClosed) {
		t.Errorf("post after close: %v", err)
	}
}

// mlx5SRQFake is the fake mlx5 context with an SRQ and a second QP on it.
type mlx5SRQFake struct {
	*mlx5Fake
	srq *SRQ
	s   *mlx5SRQ
	q2  *QP
	m2  *mlx5QP
}

func newMLX5SRQFake(t *testing.T, maxWR, maxSGE int) *mlx5SRQFake {
	f := &mlx5SRQFake{mlx5Fake: newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1})}
	p := f.p
	p.resp.MaxSRQRecvWR = 1 << 15
	f.srq = &SRQ{pd: f.q.pd}
	init := SRQInit{MaxWR: maxWR, MaxSGE: maxSGE}
	if _, _, err := p.srqData(f.srq, &init); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 8)
	ne.PutUint32(out, 0x800)
	ops, err := p.newSRQ(f.srq, out)
	if err != nil {
		t.Fatal(err)
	}
	f.srq.ops, f.s = ops, ops.(*mlx5SRQ)
	f.q2 = &QP{pd: f.q.pd, typ: qp.RC, num: 0x124, sendCQ: f.cq, recvCQ: f.cq, srq: f.srq}
	qi := QPInit{Type: qp.RC, Cap: qp.Cap{MaxSendWR: 4, MaxSendSGE: 1}, SRQ: f.srq}
	if _, _, err := p.qpData(f.q2, &qi); err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, 40)
	ne.PutUint32(resp, 1)
	qops, err := p.newQP(f.q2, resp)
	if err != nil {
		t.Fatal(err)
	}
	f.q2.ops, f.m2 = qops, qops.(*mlx5QP)
	t.Cleanup(func() { f.s.close() })
	return f
}

func (f *mlx5SRQFake) next(i int) uint16 { return binary.BigEndian.Uint16(f.s.mem[f.s.wqe(i)+2:]) }

// putSRQCQE writes a receive CQE of q2 (by user index, or with cqe_version
// 0 by the SRQ number).
func (f *mlx5SRQFake) putSRQCQE(n uint32, op uint8, ctr uint16, extra func([]byte)) {
	f.putCQE(n, op, 0, ctr, 8, 0, func(e []byte) {
		binary.BigEndian.PutUint32(e[cqeSopDropQPN:], 0x124)
		if f.p.cqeVersion != 0 {
			binary.BigEndian.PutUint32(e[cqeSRQNUIdx:], f.m2.uidx)
		} else {
			binary.BigEndian.PutUint32(e[cqeSRQNUIdx:], 0x800)
		}
		if extra != nil {
			extra(e)
		}
	})
}

func TestMLX5SRQFreeList(t *testing.T) {
	f := newMLX5SRQFake(t, 7, 2)
	s := f.s
	// mlx5_alloc_srq_buf: 2*7+1 WQEs rounded to 16 (a wait queue after
	// the list), 64-byte WQEs (next segment + 3 data segments), the list
	// 0..7 and the wait queue 8..15 linked in order.
	if s.max != 16 || s.maxGS != 3 || s.wqeShift != 6 || s.head != 0 || s.tail != 7 || s.waitqHead != 8 || s.waitqTail != 15 {
		t.Fatalf("SRQ sizing max %d gs %d shift %d head %d tail %d waitq %d..%d", s.max, s.maxGS, s.wqeShift, s.head, s.tail, s.waitqHead, s.waitqTail)
	}
	for i := 0; i < 15; i++ {
		if want := uint16(i + 1); i != 7 && f.next(i) != want {
			t.Errorf("WQE %d links to %d, want %d", i, f.next(i), want)
		}
	}
	if c := f.srq.Cap(); c.MaxWR != 7 || c.MaxSGE != 3 || f.srq.Num() != 0x800 {
		t.Errorf("cap %+v num %#x", c, f.srq.Num())
	}
	if err := f.q2.PostRecv([]RecvWR{{ID: 1}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("PostRecv on a QP on an SRQ: %v", err)
	}
	if f.m2.rq.wqeCnt != 0 || f.q2.cap.MaxRecvWR != 0 {
		t.Errorf("QP on an SRQ has a receive queue: %d WQEs", f.m2.rq.wqeCnt)
	}

	// Three WRs: WQEs 0..2, one data segment and the terminator each;
	// the doorbell record carries the count.
	if err := f.srq.PostRecv([]RecvWR{
		{ID: 100, SGEs: []SGE{{Addr: 0x1000, Length: 64, LKey: 7}}},
		{ID: 101, SGEs: []SGE{{Addr: 0x2000, Length: 32, LKey: 7}, {Addr: 0x3000, Length: 16, LKey: 8}}},
		{ID: 102},
	}); err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	w1 := s.mem[s.wqe(1)+16:]
	if be.Uint32(w1) != 32 || be.Uint32(w1[4:]) != 7 || be.Uint64(w1[8:]) != 0x2000 || be.Uint32(w1[20:]) != 8 ||
		be.Uint32(w1[32:]) != 0 || be.Uint32(w1[36:]) != mlx5InvalidLKey {
		t.Errorf("WQE 1 data segments % x", w1[:48])
	}
	if s.db[0] != htobe32(3) || s.head != 3 {
		t.Errorf("doorbell record %#x, head %d", s.db[0], s.head)
	}
	err := f.srq.PostRecv([]RecvWR{{SGEs: make([]SGE, 4)}})
	if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, unix.EINVAL) || s.db[0] != htobe32(3) {
		t.Errorf("4 SGEs: %v", err)
	}
	// Four more fill the list (head meets tail at 7).
	err = f.srq.PostRecv([]RecvWR{{ID: 103}, {ID: 104}, {ID: 105}, {ID: 106}, {ID: 107}})
	if !errors.Is(err, ErrQueueFull) || !errors.Is(err, unix.ENOMEM) || s.db[0] != htobe32(7) {
		t.Errorf("full SRQ: %v, doorbell %#x", err, s.db[0])
	}

	// A receive from WQE 1, then an error from WQE 4: each WQE goes back
	// to the list's tail.
	wc := make([]WC, 2)
	f.putSRQCQE(0, mlx5CQERespSend, 1, nil)
	f.putSRQCQE(1, mlx5CQERespErr, 4, func(e []byte) { e[cqeSyndrome] = 0x05 })
	if n, err := f.cq.Poll(wc); n != 2 || err != nil || wc[0].ID != 101 || wc[0].QPNum != 0x124 || wc[0].Opcode != rdma.WCRecv ||
		wc[1].ID != 104 || wc[1].Status != rdma.WCWRFlushErr {
		t.Fatalf("SRQ completions n=%d %v: %+v", n, err, wc)
	}
	if f.next(7) != 1 || f.next(1) != 4 || s.tail != 4 {
		t.Errorf("free list after two completions: 7->%d 1->%d tail %d", f.next(7), f.next(1), s.tail)
	}
	// The freed WQEs are posted again, in list order.
	if err := f.srq.PostRecv([]RecvWR{{ID: 200}, {ID: 201}}); err != nil || s.wrid[7] != 200 || s.wrid[1] != 201 || s.head != 4 {
		t.Errorf("repost: %v, wrid[7] %d wrid[1] %d head %d", err, s.wrid[7], s.wrid[1], s.head)
	}

	// cqe_version 0: the CQE names the SRQ by number.
	f.p.cqeVersion = 0
	f.putSRQCQE(2, mlx5CQERespSendImm, 7, nil)
	if n, err := f.cq.Poll(wc[:1]); n != 1 || err != nil || wc[0].ID != 200 || wc[0].Flags&WCWithImm == 0 {
		t.Errorf("cqe_version 0 SRQ completion n=%d %v %+v", n, err, wc[0])
	}
	f.p.cqeVersion = 1

	// Destroying the QP drops its queued receive and frees the WQE.
	f.putSRQCQE(3, mlx5CQERespSend, 0, nil)
	tail := s.tail
	f.m2.close()
	if f.next(tail) != 0 || s.tail != 0 || f.c.consIndex != 4 {
		t.Errorf("clean: %d->%d tail %d consumer %d", tail, f.next(tail), s.tail, f.c.consIndex)
	}
}

func TestMLX5SRQScatterToCQE(t *testing.T) {
	f := newMLX5SRQFake(t, 3, 1)
	dst, err := AllocBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := f.srq.PostRecv([]RecvWR{{ID: 5, SGEs: []SGE{{Addr: dst.Addr(), Length: 16, LKey: 1}}}}); err != nil {
		t.Fatal(err)
	}
	f.putSRQCQE(0, mlx5CQERespSend, 0, func(e []byte) {
		binary.BigEndian.PutUint32(e[cqeByteCnt:], 12)
		copy(e, "hello, world")
	})
	f.c.cqe(0)[cqeOpOwn] |= mlx5InlineScatter32
	wc := make([]WC, 1)
	if n, err := f.cq.Poll(wc); n != 1 || err != nil || wc[0].Status != rdma.WCSuccess || wc[0].ByteLen != 12 {
		t.Fatalf("n=%d %v %+v", n, err, wc[0])
	}
	if got := string(dst.Bytes()[:12]); got != "hello, world" {
		t.Errorf("scattered %q", got)
	}
	// More than the WQE holds: a local length error.
	if err := f.srq.PostRecv([]RecvWR{{ID: 6, SGEs: []SGE{{Addr: dst.Addr(), Length: 4, LKey: 1}}}}); err != nil {
		t.Fatal(err)
	}
	f.putSRQCQE(1, mlx5CQERespSend, 1, func(e []byte) {
		binary.BigEndian.PutUint32(e[cqeByteCnt:], 20)
	})
	f.c.cqe(1)[cqeOpOwn] |= mlx5InlineScatter32
	if n, _ := f.cq.Poll(wc); n != 1 || wc[0].Status != rdma.WCLocLenErr || wc[0].ID != 6 {
		t.Errorf("overlong scatter: %+v", wc[0])
	}
}

func TestSRQCloseBusy(t *testing.T) {
	x := &Context{dev: Device{Name: "fake0"}, srqs: map[*SRQ]struct{}{}}
	s := &SRQ{pd: &PD{ctx: x}, num: 3, qps: 2}
	x.srqs[s] = struct{}{}
	err := s.Close()
	if !errors.Is(err, rdma.ErrBusy) || !errors.Is(err, unix.EBUSY) || s.closed {
		t.Errorf("close with 2 QPs: %v (closed %v)", err, s.closed)
	}
	if err := x.useSRQ(s); err != nil || s.qps != 3 {
		t.Errorf("a QP on an open SRQ: %v", err)
	}
	other := &Context{dev: Device{Name: "fake1"}}
	if err := other.useSRQ(s); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("SRQ of another device: %v", err)
	}
	if err := s.Arm(-1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Arm(-1): %v", err)
	}
}

func TestMLX5SRQWithoutWaitQueue(t *testing.T) {
	f := newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 4, MaxSendSGE: 1})
	f.p.resp.MaxSRQRecvWR = 16 // 2*10+1 WQEs do not fit: no wait queue
	s := &SRQ{pd: f.q.pd}
	init := SRQInit{MaxWR: 10, MaxSGE: 1}
	if _, _, err := f.p.srqData(s, &init); err != nil {
		t.Fatal(err)
	}
	m := s.drv.(*mlx5SRQ)
	defer m.free()
	if m.max != 16 || m.tail != 15 || m.waitqHead != -1 || m.waitqTail != -1 || m.wqeShift != 5 || init.MaxWR != 15 {
		t.Errorf("max %d tail %d waitq %d..%d shift %d command max_wr %d", m.max, m.tail, m.waitqHead, m.waitqTail, m.wqeShift, init.MaxWR)
	}
	big := SRQInit{MaxWR: 17, MaxSGE: 1}
	if _, _, err := f.p.srqData(&SRQ{pd: f.q.pd}, &big); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("17 WRs beyond max_srq_recv_wr 16: %v", err)
	}
}
