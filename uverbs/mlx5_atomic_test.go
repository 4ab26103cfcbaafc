package uverbs

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
)

// TestMLX5AtomicGolden: the compare-and-swap and fetch-and-add WQEs,
// derived by hand from qp.c set_raddr_seg and set_atomic_seg: ctrl,
// remote address, atomic segment (swap_add, compare), one data segment;
// a fetch-and-add leaves compare as the slot had it.
func TestMLX5AtomicGolden(t *testing.T) {
	f := newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 4, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	f.m.atomics = true
	f.q.maxRdAtomic.Store(1)
	for i := 40; i < 48; i++ {
		f.m.sqBuf[64+i] = 0xee // what an earlier WQE left in the second slot's compare field
	}
	res := SGE{Addr: 0x600000001000, Length: 8, LKey: 0x77}
	err := f.q.PostSend([]SendWR{
		{ID: 1, Opcode: OpAtomicCompareSwap, Flags: SendSignaled, RemoteAddr: 0x1122334455667780, RKey: 0xaabbccdd,
			CompareAdd: 0x0102030405060708, Swap: 0xa1a2a3a4a5a6a7a8, SGEs: []SGE{res}},
		{ID: 2, Opcode: OpAtomicFetchAdd, Flags: SendFence, RemoteAddr: 0x1000, RKey: 0x5, CompareAdd: 3, Swap: 0xdead, SGEs: []SGE{res}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := hexb(`00 00 00 11 00 01 23 04 00 00 00 08 00 00 00 00
		11 22 33 44 55 66 77 80 aa bb cc dd 00 00 00 00
		a1 a2 a3 a4 a5 a6 a7 a8 01 02 03 04 05 06 07 08
		00 00 00 08 00 00 00 77 00 00 60 00 00 00 10 00`)
	if got := f.m.sqBuf[:64]; !bytes.Equal(got, want) {
		t.Errorf("CMP_AND_SWP WQE\n got % x\nwant % x", got, want)
	}
	want = hexb(`00 00 01 12 00 01 23 04 00 00 00 80 00 00 00 00
		00 00 00 00 00 00 10 00 00 00 00 05 00 00 00 00
		00 00 00 00 00 00 00 03 ee ee ee ee ee ee ee ee
		00 00 00 08 00 00 00 77 00 00 60 00 00 00 10 00`)
	if got := f.m.sqBuf[64:128]; !bytes.Equal(got, want) {
		t.Errorf("FETCH_AND_ADD WQE\n got % x\nwant % x", got, want)
	}
}

// TestAtomicRefused: every atomic the providers refuse before posting,
// with its sentinel and errno, and nothing written to the queue.
func TestAtomicRefused(t *testing.T) {
	res := []SGE{{Addr: 0x600000001000, Length: 8, LKey: 0x77}}
	good := SendWR{Opcode: OpAtomicFetchAdd, RemoteAddr: 0x1000, RKey: 5, CompareAdd: 1, SGEs: res}
	for _, tc := range []struct {
		name     string
		typ      qp.QPType
		atomics  bool
		maxRd    uint32
		mod      func(*SendWR)
		sentinel error
		errno    unix.Errno
	}{
		{"no device atomics", qp.RC, false, 1, nil, ErrNotSupported, unix.EOPNOTSUPP},
		{"UC QP", qp.UC, true, 1, nil, ErrInvalidArgument, unix.EINVAL},
		{"max_rd_atomic 0", qp.RC, true, 0, nil, ErrInvalidArgument, unix.EINVAL},
		{"misaligned", qp.RC, true, 1, func(w *SendWR) { w.RemoteAddr = 0x1004 }, ErrInvalidArgument, unix.EINVAL},
		{"4-byte SGE", qp.RC, true, 1, func(w *SendWR) { w.SGEs = []SGE{{Addr: 0x600000001000, Length: 4, LKey: 1}} }, ErrInvalidArgument, unix.EINVAL},
		{"two SGEs", qp.RC, true, 1, func(w *SendWR) { w.SGEs = []SGE{res[0], res[0]} }, ErrInvalidArgument, unix.EINVAL},
		{"no SGE", qp.RC, true, 1, func(w *SendWR) { w.SGEs = nil }, ErrInvalidArgument, unix.EINVAL},
		{"inline", qp.RC, true, 1, func(w *SendWR) { w.Flags = SendInline }, ErrInvalidArgument, unix.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newMLX5Fake(t, tc.typ, qp.Cap{MaxSendWR: 4, MaxRecvWR: 1, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: 16})
			f.m.atomics = tc.atomics
			f.q.maxRdAtomic.Store(tc.maxRd)
			wr := good
			if tc.mod != nil {
				tc.mod(&wr)
			}
			err := f.q.PostSend([]SendWR{wr})
			if !errors.Is(err, tc.sentinel) || !errors.Is(err, tc.errno) {
				t.Fatalf("got %v, want %v and %v", err, tc.sentinel, tc.errno)
			}
			t.Log(err)
			if f.m.sq.curPost != 0 || f.m.db[mlx5SndDBR] != 0 {
				t.Errorf("refused WR posted: cur_post %d", f.m.sq.curPost)
			}
			// The same WR, fixed, posts.
			f.m.atomics = true
			f.q.maxRdAtomic.Store(1)
			if tc.typ == qp.RC {
				if err := f.q.PostSend([]SendWR{good}); err != nil {
					t.Errorf("valid atomic after the refusal: %v", err)
				}
			}
		})
	}
	if AtomicHCA.String() != "ATOMIC_HCA" || AtomicCap(7).String() != "AtomicCap(7)" {
		t.Errorf("AtomicCap names: %v %v", AtomicHCA, AtomicCap(7))
	}
}
