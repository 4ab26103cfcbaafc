package uverbs

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// pollOne polls r's CQ until one completion comes (any status).
func pollOne(t *testing.T, r *rig) WC {
	t.Helper()
	var wc [1]WC
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		n, err := r.cq.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return wc[0]
		}
	}
	t.Fatal("no completion in 20s")
	return WC{}
}

// TestGuestAtomics runs both atomics over an rxe loopback RC pair: the
// device reports ATOMIC_HCA, fetch-and-add and compare-and-swap return
// the old value in host order and change the target, every malformed
// atomic is refused before posting, and one aimed at memory or a QP
// without remote atomic access completes with an error.
func TestGuestAtomics(t *testing.T) {
	for _, iface := range interfaces {
		t.Run(iface.String(), func(t *testing.T) {
			x := openGuest(t, iface)
			da, err := x.QueryDevice()
			if err != nil {
				t.Fatal(err)
			}
			if da.AtomicCap != AtomicHCA {
				t.Fatalf("rxe atomic_cap %v, want ATOMIC_HCA", da.AtomicCap)
			}
			r := newRig(t, x, 4096) // r.mr: no remote atomic access
			tbuf, err := AllocBuffer(4096)
			if err != nil {
				t.Fatal(err)
			}
			defer tbuf.Close()
			target, err := r.pd.RegMR(tbuf, qp.AccessLocalWrite|qp.AccessRemoteAtomic)
			if err != nil {
				t.Fatal(err)
			}
			defer target.Close()
			words := tbuf.Bytes()
			binary.NativeEndian.PutUint64(words[0:], 5)
			binary.NativeEndian.PutUint64(words[8:], 1000)

			a, b := r.rcQP(t, qp.RC), r.rcQP(t, qp.RC)
			r.connect(t, a, b.Num(), 1)
			r.connect(t, b, a.Num(), 1)
			// b serves atomics: RTS to RTS with remote atomic access.
			if err := b.Modify(&qp.Attr{AccessFlags: qp.AccessRemoteWrite | qp.AccessRemoteRead | qp.AccessRemoteAtomic}, qp.MaskAccessFlags); err != nil {
				t.Fatal(err)
			}
			res := r.buf.Bytes()
			for i, c := range []struct {
				op               Opcode
				off              uint64
				compareAdd, swap uint64
				want, after      uint64
				wcOp             rdma.WCOpcode
			}{
				{OpAtomicFetchAdd, 0, 3, 0, 5, 8, rdma.WCFetchAdd},
				{OpAtomicFetchAdd, 0, ^uint64(0), 0, 8, 7, rdma.WCFetchAdd}, // adding 2^64-1 wraps: minus one
				{OpAtomicCompareSwap, 8, 1, 77, 1000, 1000, rdma.WCCompSwap},
				{OpAtomicCompareSwap, 8, 1000, 2000, 1000, 2000, rdma.WCCompSwap},
			} {
				err := a.PostSend([]SendWR{{ID: uint64(i), Opcode: c.op, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(8*i, 8)},
					RemoteAddr: target.Addr + c.off, RKey: target.RKey, CompareAdd: c.compareAdd, Swap: c.swap}})
				if err != nil {
					t.Fatal(err)
				}
				wc := pollOne(t, r)
				got := binary.NativeEndian.Uint64(res[8*i:])
				now := binary.NativeEndian.Uint64(words[c.off:])
				if wc.Status != rdma.WCSuccess || wc.Opcode != c.wcOp || wc.ByteLen != 8 || wc.ID != uint64(i) || got != c.want || now != c.after {
					t.Errorf("atomic %d: %v %v %d bytes id %d, returned %d (want %d), target now %d (want %d)",
						i, wc.Status, wc.Opcode, wc.ByteLen, wc.ID, got, c.want, now, c.after)
				}
			}

			// Refused before posting, on this QP and on others.
			good := SendWR{Opcode: OpAtomicFetchAdd, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, 8)}, RemoteAddr: target.Addr, RKey: target.RKey, CompareAdd: 1}
			bad := func(name string, q *QP, mod func(*SendWR)) {
				t.Helper()
				wr := good
				if mod != nil {
					mod(&wr)
				}
				if err := q.PostSend([]SendWR{wr}); !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, unix.EINVAL) {
					t.Errorf("%s: %v", name, err)
				}
			}
			bad("misaligned", a, func(w *SendWR) { w.RemoteAddr += 4 })
			bad("4-byte result", a, func(w *SendWR) { w.SGEs = []SGE{r.mr.SGE(0, 4)} })
			bad("inline", a, func(w *SendWR) { w.Flags |= SendInline })
			uc := r.rcQP(t, qp.UC)
			defer uc.Close()
			bad("UC", uc, nil)
			c := r.rcQP(t, qp.RC)
			defer c.Close()
			init := qp.Attr{State: qp.Init, Port: 1, AccessFlags: qp.AccessLocalWrite}
			rtr := qp.Attr{State: qp.RTR, PathMTU: r.mtu, DestQPN: b.Num(), MaxDestRdAtomic: 1, MinRNRTimer: 12,
				AH: qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{DGID: r.gid.GID, SGIDIndex: uint8(r.gid.Index), HopLimit: 64}}}
			rts := qp.Attr{State: qp.RTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 0}
			for _, s := range []struct {
				a *qp.Attr
				m qp.Mask
			}{
				{&init, qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort | qp.MaskAccessFlags},
				{&rtr, qp.MaskState | qp.MaskAV | qp.MaskPathMTU | qp.MaskDestQPN | qp.MaskRQPSN | qp.MaskMaxDestRdAtomic | qp.MaskMinRNRTimer},
				{&rts, qp.MaskState | qp.MaskSQPSN | qp.MaskTimeout | qp.MaskRetryCnt | qp.MaskRNRRetry | qp.MaskMaxQPRdAtomic},
			} {
				if err := c.Modify(s.a, s.m); err != nil {
					t.Fatal(err)
				}
			}
			bad("max_rd_atomic 0", c, nil)
			if binary.NativeEndian.Uint64(words) != 7 {
				t.Errorf("a refused atomic changed the target: %d", binary.NativeEndian.Uint64(words))
			}

			// An MR without remote atomic access: the responder refuses.
			wr := good
			wr.RemoteAddr, wr.RKey = r.mr.Addr+64, r.mr.RKey
			if err := a.PostSend([]SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			if wc := pollOne(t, r); wc.Status != rdma.WCRemAccessErr {
				t.Errorf("atomic on an MR without remote atomic access: %v, want %v", wc.Status, rdma.WCRemAccessErr)
			}
			a.Close()
			b.Close()

			// A responder QP without remote atomic access refuses too.
			e, f := r.rcQP(t, qp.RC), r.rcQP(t, qp.RC)
			defer e.Close()
			defer f.Close()
			r.connect(t, e, f.Num(), 1)
			r.connect(t, f, e.Num(), 1) // remote write and read only
			if err := e.PostSend([]SendWR{good}); err != nil {
				t.Fatal(err)
			}
			// rxe's responder NAKs it as an invalid request (check_op_valid).
			if wc := pollOne(t, r); wc.Status != rdma.WCRemInvReqErr {
				t.Errorf("atomic to a QP without remote atomic access: %v, want %v", wc.Status, rdma.WCRemInvReqErr)
			}
		})
	}
}
