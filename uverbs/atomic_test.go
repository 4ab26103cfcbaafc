package uverbs

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
)

// TestRxeAtomicLayout: an atomic's rxe_send_wr carries wr.atomic
// (remote_addr, compare_add, swap, rkey, host order) and the iova, as
// librxe's convert_send_wr and init_send_wqe; one 8-byte SGE.
func TestRxeAtomicLayout(t *testing.T) {
	r, sq, _, db := fakeQP(t, qp.RC)
	r.qp.maxRdAtomic.Store(1)
	err := r.postSend([]SendWR{{ID: 9, Opcode: OpAtomicCompareSwap, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x3000, Length: 8, LKey: 4}},
		RemoteAddr: 0xbeef0008, RKey: 0x99, CompareAdd: 0x0102030405060708, Swap: 0x1112131415161718}})
	if err != nil {
		t.Fatal(err)
	}
	if readDoorbells(t, db) != 1 {
		t.Fatal("no doorbell")
	}
	w := sq[384 : 384+512]
	if ne.Uint32(w[12:]) != uint32(OpAtomicCompareSwap) || ne.Uint64(w[24:]) != 0xbeef0008 || ne.Uint64(w[32:]) != 0x0102030405060708 ||
		ne.Uint64(w[40:]) != 0x1112131415161718 || ne.Uint32(w[48:]) != 0x99 || ne.Uint64(w[152:]) != 0xbeef0008 {
		t.Errorf("atomic fields / iova % x ... %x", w[24:56], ne.Uint64(w[152:]))
	}
	if ne.Uint32(w[184:]) != 8 || ne.Uint32(w[196:]) != 1 || ne.Uint64(w[208:]) != 0x3000 || ne.Uint32(w[216:]) != 8 || ne.Uint32(w[220:]) != 4 {
		t.Errorf("dma/sge % x", w[184:224])
	}
	// Refused on rxe as on mlx5, nothing posted.
	for name, wr := range map[string]SendWR{
		"misaligned": {Opcode: OpAtomicFetchAdd, SGEs: []SGE{{Addr: 0x3000, Length: 8}}, RemoteAddr: 0xbeef0001},
		"16-byte":    {Opcode: OpAtomicFetchAdd, SGEs: []SGE{{Addr: 0x3000, Length: 16}}, RemoteAddr: 0xbeef0000},
	} {
		if err := r.postSend([]SendWR{wr}); !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if ne.Uint32(sq[128:]) != 1 {
		t.Errorf("producer %d after refusals", ne.Uint32(sq[128:]))
	}
}
