package rsocket

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// goldenREQ is the rs_conn_data librdmacm's rstream (rdma-core 44, x86-64,
// SO_RCVBUF 512 KiB so a 1 MiB receive buffer) put in its REQ, as our
// Listener received it in the guests (TestRstreamInGuest's log).
var goldenREQ = []byte{
	0x01, 0x02, 0x01, 0x80, 0x00, 0x00, 0x00, 0x00, // version 1, IOMAP, 384 credits, reserved, iomap 0
	0x00, 0x00, 0x55, 0x6e, 0xa8, 0xb7, 0x80, 0x00, 0x00, 0x01, 0x08, 0xc4, 0x00, 0x00, 0x00, 0x02, // target SGL: 2 entries
	0x00, 0x00, 0x7f, 0xd3, 0x38, 0xc0, 0xb0, 0x00, 0x00, 0x01, 0x09, 0x37, 0x00, 0x08, 0x00, 0x00, // data_buf: 512 KiB
}

func TestConnDataGolden(t *testing.T) {
	v, err := parseConnData(goldenREQ)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version() != 1 || v.Flags() != flagIOMap || v.Credits() != 384 || v.TargetIOMapSize() != 0 ||
		v.TargetSGL().Length != 2 || v.DataBuf().Length != 512<<10 {
		t.Fatalf("parsed %d %d %d %d %+v %+v", v.Version(), v.Flags(), v.Credits(), v.TargetIOMapSize(), v.TargetSGL(), v.DataBuf())
	}
	c := connData{Version: 1, Flags: v.Flags(), Credits: v.Credits(), TargetSGL: v.TargetSGL(), DataBuf: v.DataBuf()}
	var b [connDataLen]byte
	c.marshal(&b)
	if !bytes.Equal(b[:], goldenREQ) {
		t.Fatalf("rebuilt\n% x\nwant\n% x", b, goldenREQ)
	}
	bad := bytes.Clone(goldenREQ)
	bad[0] = 2
	if _, err := parseConnData(bad); err == nil {
		t.Fatal("version 2 accepted")
	}
}

// TestSGLUpdateBytes: an SGL update is written in the peer's byte order,
// named by its NET flag (rs_send_credits with RS_OPT_SWAP_SGL).
func TestSGLUpdateBytes(t *testing.T) {
	for _, peerNet := range []bool{false, true} {
		cfg := memConfig(0x1122334455660000, 16, 16, 4096, 4096, 64)
		peer := memConfig(0x70000000, 16, 16, 4096, 4096, 64)
		peer.bigEndian = peerNet
		var pd [connDataLen]byte
		pc := peer.connData()
		pc.marshal(&pd)
		k := newCore(cfg, connDataView(pd[:]), make([]byte, 32))
		c := k.sendCredits()
		want := make([]byte, sgeLen)
		putSGE(want, sge{Addr: 0x1122334455660000 + 2048, Key: cfg.rbufKey, Length: 2048}, peerNet)
		if !c.withSGE || !bytes.Equal(c.sge[:], want) || c.imm != msgSet(opSGL, 16) || c.remoteAddr != peer.targetSGLAddr+sgeLen {
			t.Fatalf("peer NET %v: credit %+v, want SGE % x", peerNet, c, want)
		}
	}
}

func FuzzConnData(f *testing.F) {
	f.Add(goldenREQ)
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseConnData(b)
		if err != nil {
			return
		}
		c := connData{Version: v.Version(), Flags: v.Flags(), Credits: v.Credits(), TargetIOMapSize: v.TargetIOMapSize(),
			TargetSGL: v.TargetSGL(), DataBuf: v.DataBuf()}
		var out [connDataLen]byte
		c.marshal(&out)
		want := bytes.Clone(b[:connDataLen])
		want[4], want[5], want[6] = 0, 0, 0 // reserved: written as zero
		if !bytes.Equal(out[:], want) {
			t.Fatalf("round trip\n% x\nwant\n% x", out, want)
		}
	})
}

// FuzzCore drives a core with what a peer controls: immediates, the
// contents of our target SGL, completions of our own work requests in
// any order, interleaved with our reads, writes and credits. The core
// must never panic (no read past the receive buffer, no slice out of
// range) and must keep its invariants until it reports an error.
func FuzzCore(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 16, 3, 0, 0, 0, 100, 4, 0, 0, 0, 0})
	f.Add(bytes.Repeat([]byte{0, 0, 0, 0x08, 0, 3, 0, 0, 8, 0}, 10))
	f.Fuzz(func(t *testing.T, ops []byte) {
		cfg := memConfig(0x10000000, 16, 16, 8192, 8192, 64)
		cfg.iomapEntries = 2
		peer := memConfig(0x70000000, 16, 16, 8192, 8192, 64)
		peer.iomapEntries = 1
		var pd [connDataLen]byte
		pc := peer.connData()
		pc.marshal(&pd)
		tsgl := make([]byte, sglSize*sgeLen+cfg.iomapEntries*iomapLen)
		k := newCore(cfg, connDataView(pd[:]), tsgl)
		rbuf := make([]byte, cfg.rbufSize)
		dst := make([]byte, 5000)
		var posted []uint64
		olen := uint32(olapStartSize)
		for len(ops) >= 5 {
			op, arg := ops[0], binary.BigEndian.Uint32(ops[1:5])
			ops = ops[5:]
			switch op % 8 {
			case 0: // the peer's WRITE WITH IMMEDIATE
				k.onRecv(arg)
			case 1: // the peer writes an entry of our target SGL or iomap table
				if len(ops) >= 16 {
					copy(tsgl[int(arg%uint32(len(tsgl)/16))*16:], ops[:16])
					ops = ops[16:]
				}
			case 6: // riowrite into the peer's windows (from our table)
				if k.canSend() {
					if e, ok := k.findIOMap(uint64(arg)); ok {
						w := k.nextDirect(int(arg%100000)+1, uint64(arg), e, &olen)
						posted = append(posted, uint64(w.imm))
						if w.n == 0 || w.seg[0].off+w.seg[0].len > cfg.sbufSize || w.seg[1].off+w.seg[1].len > cfg.sbufSize {
							t.Fatalf("direct write %+v past the %d-byte send buffer", w, cfg.sbufSize)
						}
					}
				}
			case 7: // riomap: our window into the peer's table
				if k.canSend() {
					if w, _, err := k.iomapWrite(int(arg%2), iomapEntry{Offset: uint64(arg), SGE: sge{Addr: 1, Key: 2, Length: 3}}); err == nil {
						posted = append(posted, uint64(w.imm))
					}
				}
			case 2: // a completion of one of ours, maybe failed
				if len(posted) > 0 {
					i := int(arg) % len(posted)
					k.onSend(posted[i], arg&0x100 == 0, arg&0x200 != 0, nil)
					posted = append(posted[:i], posted[i+1:]...)
				}
			case 3:
				k.consume(dst[:arg%uint32(len(dst))], rbuf)
			case 4:
				for k.giveCredits() {
					posted = append(posted, uint64(k.sendCredits().imm))
				}
			case 5:
				if k.canSend() {
					w, err := k.nextWrite(int(arg%200000)+1, &olen)
					if err == nil {
						posted = append(posted, uint64(w.imm))
						if w.seg[0].off+w.seg[0].len > cfg.sbufSize || w.seg[1].off+w.seg[1].len > cfg.sbufSize {
							t.Fatalf("send segments %+v past the %d-byte send buffer", w.seg, cfg.sbufSize)
						}
					}
				}
			}
			if k.err != nil {
				return
			}
			if k.granted > uint64(cfg.rbufSize) || k.rbufOffset > cfg.rbufSize || k.sbufHead > cfg.sbufSize {
				t.Fatalf("invariant: granted %d offset %d head %d", k.granted, k.rbufOffset, k.sbufHead)
			}
		}
	})
}
