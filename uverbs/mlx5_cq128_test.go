package uverbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// 128-byte CQEs (MLX5_CQE_SIZE=128): the cqe64 in each slot's second
// half, scatter-to-CQE data of up to 64 bytes in the first, found there
// by the requester path as by the responder path (the address libmlx5
// uses since rdma-core 45184d2c8; v44 read it 65 bytes early).
func TestMLX5CQE128(t *testing.T) {
	t.Setenv("MLX5_CQE_SIZE", "128")
	f := newMLX5Fake(t, qp.RC, qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2})
	if len(f.c.buf) != 16*128 || f.c.shift != 7 || f.c.off64 != 64 {
		t.Fatalf("buffer %d bytes, shift %d, cqe64 at %d", len(f.c.buf), f.c.shift, f.c.off64)
	}
	for i := 0; i < 16; i++ {
		if f.c.buf[i*128+63] != 0 || f.c.buf[i*128+127] != mlx5CQEInvalid<<4 {
			t.Fatalf("slot %d: op_own %#x, first half ends %#x", i, f.c.buf[i*128+127], f.c.buf[i*128+63])
		}
	}
	dst, err := mmapAnon(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(dst)
	data := make([]byte, 64)
	for i := range data {
		data[i] = byte(0xa0 + i)
	}
	f.q.PostSend([]SendWR{
		{ID: 1, Opcode: OpSend, Flags: SendSignaled},
		{ID: 2, Opcode: OpRDMARead, Flags: SendSignaled, SGEs: []SGE{{Addr: addrOf(dst), Length: 40, LKey: 1}, {Addr: addrOf(dst[1024:]), Length: 24, LKey: 1}}},
	})
	f.q.PostRecv([]RecvWR{{ID: 100, SGEs: []SGE{{Addr: addrOf(dst[2048:]), Length: 64, LKey: 1}}}})
	f.putCQE(0, mlx5CQEReq, mlx5OpcodeSend, 0, 0, 0, nil)
	f.putCQE(1, mlx5CQEReq, mlx5OpcodeRDMARead, 1, 64, 0, nil)
	copy(f.c.slot(1), data)
	f.c.cqe(1)[cqeOpOwn] |= mlx5InlineScatter64
	f.putCQE(2, mlx5CQERespSend, 0, 0, 60, 0, nil)
	copy(f.c.slot(2), data[4:])
	f.c.cqe(2)[cqeOpOwn] |= mlx5InlineScatter64
	wc := make([]WC, 4)
	for i, want := range []WC{
		{ID: 1, Opcode: rdma.WCSend, QPNum: 0x123},
		{ID: 2, Opcode: rdma.WCRDMARead, ByteLen: 64, QPNum: 0x123},
		{ID: 100, Opcode: rdma.WCRecv, ByteLen: 60, QPNum: 0x123},
	} {
		if n, err := f.cq.Poll(wc[:1]); n != 1 || err != nil || wc[0] != want {
			t.Fatalf("CQE %d: n=%d %v\n got %+v\nwant %+v", i, n, err, wc[0], want)
		}
	}
	if n, _ := f.cq.Poll(wc); n != 0 {
		t.Fatalf("empty CQ polled %d", n)
	}
	if !bytes.Equal(dst[:40], data[:40]) || !bytes.Equal(dst[1024:1048], data[40:]) {
		t.Errorf("read response\n got % x % x\nwant % x", dst[:40], dst[1024:1048], data)
	}
	if !bytes.Equal(dst[2048:2108], data[4:]) {
		t.Errorf("receive\n got % x\nwant % x", dst[2048:2108], data[4:])
	}

	// Cleaning moves whole 128-byte CQEs over the dropped ones, each
	// keeping the owner bit of the slot it lands in.
	other := func(e []byte) { binary.BigEndian.PutUint32(e[cqeSRQNUIdx:], 0x42) }
	f.putCQE(3, mlx5CQEReq, mlx5OpcodeSend, 0, 0, 0, other)
	copy(f.c.slot(3), data[:64])
	f.putCQE(4, mlx5CQEReq, mlx5OpcodeSend, 2, 0, 0, nil)
	f.c.clean(f.m.rsn, nil)
	if f.c.consIndex != 4 || f.c.db[mlx5CQSetCI] != htobe32(4) {
		t.Fatalf("consumer index %d, SET_CI %#x after the clean", f.c.consIndex, f.c.db[mlx5CQSetCI])
	}
	if s := f.c.slot(4); !bytes.Equal(s[:64], data) || binary.BigEndian.Uint32(s[64+cqeSRQNUIdx:]) != 0x42 || s[127]&1 != 0 {
		t.Errorf("slot 4 after the clean: % x", s)
	}
}

func TestMLX5CQESizeEnvRefused(t *testing.T) {
	for _, v := range []string{"96", "x", "256", ""} {
		t.Setenv("MLX5_CQE_SIZE", v)
		p := &mlx5Provider{x: &Context{dev: Device{Name: "mlx5_0"}}, pageSize: 4096, cacheLine: 64}
		if _, _, _, err := p.cqData(&CQ{}, 15); !errors.Is(err, unix.EINVAL) {
			t.Errorf("MLX5_CQE_SIZE=%q: %v, want EINVAL", v, err)
		}
	}
}
