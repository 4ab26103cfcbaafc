//go:build linux

package cm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// TestGuestSRQ: a listener's accepted IDs get library QPs on one SRQ made
// with ID.CreateSRQ (rdma_create_srq, then rdma_create_qp with the SRQ),
// sharing one receive CQ; each client's SEND lands in the shared receives,
// and the clients see the SRQ bit of the REP.
func TestGuestSRQ(t *testing.T) {
	guest.Require(t)
	sch, cch := kernelChannel(t), kernelChannel(t)
	ctx := kctx(t, time.Minute)
	addr := netip.AddrPortFrom(localAddr(t), freePort())
	l, err := sch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Destroy() })
	if err := l.Bind(addr); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	const clients, msgLen = 3, 64
	msg := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, msgLen) }
	done := make(chan error, clients)
	var cids [clients]*ID
	for i := range clients {
		id, err := cch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
		if err != nil {
			t.Fatal(err)
		}
		cids[i] = id
		t.Cleanup(func() { id.Destroy() })
		go func() { done <- srqClient(ctx, id, addr, msg(i)) }()
	}

	var (
		srq    *uverbs.SRQ
		cc     *uverbs.CompChannel
		recvCQ *uverbs.CQ
		buf    *uverbs.Buffer
		mr     *uverbs.MR
		sids   []*ID
	)
	for i := range clients {
		id, err := l.GetRequest(ctx)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		sids = append(sids, id)
		if srq == nil {
			if srq, err = id.CreateSRQ(nil, uverbs.SRQInit{MaxWR: 16, MaxSGE: 1}); err != nil {
				t.Fatal(err)
			}
			x, pd, err := id.Verbs()
			if err != nil {
				t.Fatal(err)
			}
			if cc, err = x.CreateCompChannel(); err != nil {
				t.Fatal(err)
			}
			if recvCQ, err = x.CreateCQ(32, cc, 0); err != nil {
				t.Fatal(err)
			}
			if buf, err = uverbs.AllocBuffer(8 * msgLen); err != nil {
				t.Fatal(err)
			}
			if mr, err = pd.RegMR(buf, qp.AccessLocalWrite); err != nil {
				t.Fatal(err)
			}
			wrs := make([]uverbs.RecvWR, 8)
			for j := range wrs {
				wrs[j] = uverbs.RecvWR{ID: uint64(j), SGEs: []uverbs.SGE{mr.SGE(j*msgLen, msgLen)}}
			}
			if err := srq.PostRecv(wrs); err != nil {
				t.Fatal(err)
			}
		}
		q, err := id.CreateQP(QPInit{Cap: qp.Cap{MaxSendWR: 2, MaxSendSGE: 1}, SRQ: srq, RecvCQ: recvCQ})
		if err != nil {
			t.Fatalf("CreateQP on the SRQ: %v", err)
		}
		if q.Verbs.SRQ() != srq {
			t.Fatal("the library QP is not on the SRQ")
		}
		if err := id.Accept(ctx, nil); err != nil {
			t.Fatalf("accept %d: %v", i, err)
		}
	}
	for range clients {
		if err := <-done; err != nil {
			t.Fatalf("client: %v", err)
		}
	}
	qpns := map[uint32]bool{}
	got := map[string]bool{}
	for range clients {
		wc, err := waitCompletion(ctx, recvCQ, cc)
		if err != nil {
			t.Fatal(err)
		}
		if wc.Status != rdma.WCSuccess || wc.Opcode != rdma.WCRecv || wc.ByteLen != msgLen || wc.ID >= 8 {
			t.Fatalf("receive %+v (%v)", wc, wc.Status)
		}
		qpns[wc.QPNum] = true
		got[string(buf.Bytes()[int(wc.ID)*msgLen:][:msgLen])] = true
	}
	for i := range clients {
		if !got[string(msg(i))] {
			t.Errorf("client %d's message not received (%d QPs delivered)", i, len(qpns))
		}
	}
	if len(qpns) != clients {
		t.Errorf("receives named %d QPs, want %d", len(qpns), clients)
	}
	if err := srq.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("SRQ close with QPs on it: %v, want ErrBusy", err)
	}
	for _, id := range sids {
		if err := id.DestroyQP(); err != nil {
			t.Fatal(err)
		}
	}
	if err := srq.Close(); err != nil {
		t.Fatalf("SRQ close after its QPs: %v", err)
	}
	mr.Close()
	buf.Close()
	recvCQ.Close()
	cc.Close()
	for _, id := range sids {
		id.Destroy()
	}
}

// srqClient connects id to addr with a QP of its own and sends m; the
// server's QP is on an SRQ, which the REP says.
func srqClient(ctx context.Context, id *ID, addr netip.AddrPort, m []byte) error {
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, addr, 0); err != nil {
		return err
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		return err
	}
	q, err := id.CreateQP(QPInit{Cap: qp.Cap{MaxSendWR: 2, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	_, pd, err := id.Verbs()
	if err != nil {
		return err
	}
	buf, err := uverbs.AllocBuffer(len(m))
	if err != nil {
		return err
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, 0)
	if err != nil {
		return err
	}
	defer mr.Close()
	copy(buf.Bytes(), m)
	if err := id.Connect(ctx, nil); err != nil {
		return err
	}
	if !id.ConnParam().SRQ {
		return fmt.Errorf("the REP does not carry the SRQ bit")
	}
	if err := q.Verbs.PostSend([]uverbs.SendWR{{ID: 1, Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{mr.SGE(0, len(m))}}}); err != nil {
		return err
	}
	wc, err := waitCompletion(ctx, q.SendCQ, q.SendChannel)
	if err != nil {
		return err
	}
	if wc.Status != rdma.WCSuccess {
		return fmt.Errorf("send completion %+v (%v)", wc, wc.Status)
	}
	return nil
}
