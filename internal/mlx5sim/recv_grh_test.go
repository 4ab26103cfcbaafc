//go:build linux

package mlx5sim

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestRecvSender checks the sender's fields of a receive CQE and the GRH
// the device writes into a UD receive buffer.
func TestRecvSender(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	pd := allocPD(t, d, m)
	cq, cqBuf, _ := createCQ(t, d, m, 3, 0, 0)
	createQP(t, d, m, pd, cq, 0)
	q := d.lookup("qp", "qp0")
	q.qpType = qpTypeUD // the helper makes an RC QP; the layout is the same
	// RQ WQEs 0 and 1: one data segment each, the second too small for a GRH.
	rbuf := m.alloc(2048)
	var seg [16]byte
	binary.BigEndian.PutUint32(seg[0:], 1064)
	binary.BigEndian.PutUint64(seg[8:], rbuf)
	m.Write(q.qpBuf, seg[:])
	binary.BigEndian.PutUint32(seg[0:], 39)
	m.Write(q.qpBuf+16, seg[:])

	if e := d.Exec(m, "cqe cq0 op=resp_send qp=qp0 counter=0 bytes=140 src_qp=0xfedcba grh=1 sl=13 slid=0x1234 path=0x85"); e != 0 {
		t.Fatal(e)
	}
	cqe := m.bytes(cqBuf, 64)
	if f := be32(cqe[24:]); f != 1<<28|13<<24|0xfedcba {
		t.Errorf("flags_rqpn %#x", f)
	}
	if cqe[22] != 0x12 || cqe[23] != 0x34 || cqe[17] != 0x85 {
		t.Errorf("slid % x ml_path %#x", cqe[22:24], cqe[17])
	}
	g := m.bytes(rbuf, 40)
	want := []byte{0x62, 0x81, 0x23, 0x45, 0, 100, 0x1b, 64}
	if !bytes.Equal(g[:8], want) || g[23] != 2 || g[39] != 1 || g[34] != 0xff {
		t.Errorf("GRH % x", g)
	}
	// RoCE v2 over IPv4: the IPv4 header in the last 20 bytes.
	if h := grhBytes(2, 44); h[20] != 0x45 || h[23] != 24 || h[29] != 17 || h[35] != 2 || h[39] != 1 || !bytes.Equal(h[:20], make([]byte, 20)) {
		t.Errorf("IPv4 GRH % x", h)
	}
	// No room for the GRH, or a value out of range: refused.
	for _, bad := range []string{
		"cqe cq0 op=resp_send qp=qp0 counter=1 grh=1",
		"cqe cq0 op=resp_send qp=qp0 counter=0 sl=16",
		"cqe cq0 op=resp_send qp=qp0 counter=0 grh=4",
	} {
		if e := d.Exec(m, bad); e == 0 {
			t.Errorf("exec %q succeeded", bad)
		}
	}
	// A send completion writes no GRH; an RC QP gets none either.
	m.Write(rbuf, make([]byte, 40))
	q.qpType = 2
	if e := d.Exec(m, "cqe cq0 op=resp_send qp=qp0 counter=0 grh=1"); e != 0 {
		t.Fatal(e)
	}
	if !bytes.Equal(m.bytes(rbuf, 40), make([]byte, 40)) {
		t.Error("a GRH written for an RC QP")
	}
}
