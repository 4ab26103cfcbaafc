package uverbs

// Shared receive queues on rxe, in the vmtest guest (see guest_test.go).

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestGuestSRQ: two RC QPs on one SRQ both receive from it, the limit
// event fires once after Arm, and bad input gets clear errors.
func TestGuestSRQ(t *testing.T) {
	for _, iface := range interfaces {
		t.Run(iface.String(), func(t *testing.T) {
			x := openGuest(t, iface)
			r := newRig(t, x, 16*4096)
			da, err := x.QueryDevice()
			if err != nil {
				t.Fatal(err)
			}
			if da.MaxSRQ == 0 || da.MaxSRQWR < 64 || da.MaxSRQSGE < 2 {
				t.Fatalf("rxe SRQ limits %d/%d/%d", da.MaxSRQ, da.MaxSRQWR, da.MaxSRQSGE)
			}

			// Sizes beyond the device's, and nonsense, fail before any command.
			for _, in := range []SRQInit{
				{MaxWR: da.MaxSRQWR + 1, MaxSGE: 1},
				{MaxWR: 8, MaxSGE: da.MaxSRQSGE + 1},
				{MaxWR: 0, MaxSGE: 1},
				{MaxWR: 8, MaxSGE: 1, Limit: 9},
			} {
				if _, err := r.pd.CreateSRQ(in); !errors.Is(err, ErrInvalidArgument) {
					t.Errorf("CreateSRQ(%+v): %v, want ErrInvalidArgument", in, err)
				} else {
					t.Logf("CreateSRQ(%+v): %v", in, err)
				}
			}

			// A limit given at creation is armed.
			s2, err := r.pd.CreateSRQ(SRQInit{MaxWR: 8, MaxSGE: 1, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if a, err := s2.Query(); err != nil || a.Limit != 2 {
				t.Errorf("query SRQ created with limit 2: %+v, %v", a, err)
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}

			srq, err := r.pd.CreateSRQ(SRQInit{MaxWR: 32, MaxSGE: 2})
			if err != nil {
				t.Fatal(err)
			}
			c := srq.Cap()
			if c.MaxWR < 32 || c.MaxSGE < 2 || c.Limit != 0 || !srq.HasDataPath() {
				t.Fatalf("SRQ cap %+v", c)
			}
			if a, err := srq.Query(); err != nil || a.MaxWR != c.MaxWR || a.MaxSGE < 2 || a.Limit != 0 {
				t.Errorf("query %+v (cap %+v): %v", a, c, err)
			}
			if err := srq.Arm(c.MaxWR + 1); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("arm beyond max WR: %v", err)
			}

			// Senders a1, a2; receivers b1, b2 on the SRQ.
			onSRQ := func() *QP {
				q, err := r.pd.CreateQP(QPInit{Type: qp.RC, SendCQ: r.cq, RecvCQ: r.cq, SRQ: srq,
					Cap: qp.Cap{MaxSendWR: 16, MaxRecvWR: 99, MaxSendSGE: 2, MaxRecvSGE: 9}})
				if err != nil {
					t.Fatal(err)
				}
				return q
			}
			a1, a2 := r.rcQP(t, qp.RC), r.rcQP(t, qp.RC)
			b1, b2 := onSRQ(), onSRQ()
			if b1.SRQ() != srq || a1.SRQ() != nil {
				t.Error("QP.SRQ")
			}
			r.connect(t, a1, b1.Num(), 1)
			r.connect(t, b1, a1.Num(), 1)
			r.connect(t, a2, b2.Num(), 1)
			r.connect(t, b2, a2.Num(), 1)

			if err := b1.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{r.mr.SGE(0, 64)}}}); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("PostRecv on a QP on an SRQ: %v", err)
			}
			if err := srq.Close(); !errors.Is(err, rdma.ErrBusy) {
				t.Errorf("close SRQ with QPs on it: %v, want ErrBusy", err)
			}
			if err := srq.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{r.mr.SGE(0, 8), r.mr.SGE(8, 8), r.mr.SGE(16, 8)}}}); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("3 SGEs on a 2-SGE SRQ: %v", err)
			}

			// Eight receives of 512 bytes at 8192 + i*512, two SGEs each.
			const nRecv, slot = 8, 512
			mem := r.buf.Bytes()
			recvs := make([]RecvWR, nRecv)
			for i := range recvs {
				off := 8192 + i*slot
				recvs[i] = RecvWR{ID: uint64(100 + i), SGEs: []SGE{r.mr.SGE(off, 256), r.mr.SGE(off+256, 256)}}
			}
			if err := srq.PostRecv(recvs); err != nil {
				t.Fatal(err)
			}
			if err := srq.Arm(4); err != nil {
				t.Fatal(err)
			}
			if a, err := srq.Query(); err != nil || a.Limit != 4 {
				t.Errorf("after Arm(4): %+v, %v", a, err)
			}

			// Six messages (three per sender), each 300 bytes of its own.
			for i := 0; i < 6; i++ {
				for j := 0; j < 300; j++ {
					mem[i*512+j] = byte(i*31 + j)
				}
			}
			for i := 0; i < 6; i++ {
				a := a1
				if i%2 == 1 {
					a = a2
				}
				if err := a.PostSend([]SendWR{{ID: uint64(i + 1), Opcode: OpSend, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(i*512, 300)}}}); err != nil {
					t.Fatal(err)
				}
			}
			wcs := waitWC(t, r, 12)
			perQP := map[uint32]int{}
			used := map[uint64]bool{}
			for _, wc := range wcs {
				if wc.Opcode != rdma.WCRecv {
					continue
				}
				if wc.ByteLen != 300 || wc.ID < 100 || wc.ID >= 100+nRecv || used[wc.ID] {
					t.Errorf("receive %+v", wc)
					continue
				}
				used[wc.ID] = true
				perQP[wc.QPNum]++
			}
			if perQP[b1.Num()] != 3 || perQP[b2.Num()] != 3 {
				t.Errorf("receives per QP %v (b1 %#x, b2 %#x)", perQP, b1.Num(), b2.Num())
			}
			// Each sender's messages arrive in order, so the contents,
			// not the slots, are checked: every received slot holds one
			// of the six messages, each exactly once.
			seen := map[int]bool{}
			for id := range used {
				off := 8192 + int(id-100)*slot
				got := mem[off : off+300]
				for i := 0; i < 6; i++ {
					if bytes.Equal(got, mem[i*512:i*512+300]) {
						seen[i] = true
					}
				}
			}
			if len(seen) != 6 {
				t.Errorf("messages received: %v", seen)
			}

			// The limit event: 2 of 8 WRs left, below the armed 4.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var got []AsyncEvent
			for !hasEvent(got, EventSRQLimitReached, srq.Handle()) {
				evs, err := x.AsyncEvents(ctx)
				if err != nil {
					t.Fatalf("waiting for the SRQ limit event (have %v): %v", got, err)
				}
				got = append(got, evs...)
			}
			t.Logf("async events: %v", got)
			if a, err := srq.Query(); err != nil || a.Limit != 0 {
				t.Errorf("after the limit event: %+v, %v (want the limit disarmed)", a, err)
			}

			for _, q := range []*QP{a1, a2, b1, b2} {
				if err := q.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := srq.Close(); err != nil {
				t.Fatalf("close SRQ: %v", err)
			}
			if err := srq.PostRecv(recvs[:1]); !errors.Is(err, ErrClosed) {
				t.Errorf("post after close: %v", err)
			}
			if err := srq.Arm(1); !errors.Is(err, ErrClosed) {
				t.Errorf("arm after close: %v", err)
			}
		})
	}
}

func hasEvent(evs []AsyncEvent, typ AsyncEventType, elem uint64) bool {
	for _, e := range evs {
		if e.Type == typ && e.Element == elem {
			return true
		}
	}
	return false
}
