package rsocket

import "testing"

// BenchmarkFraming is the protocol work of one 64-byte message through
// the cores, as rsend and rrecv do it: plan the write, the peer's receive
// completion, our send completion, the read, and the credits every half
// receive queue: ns per message, 0 allocations.
func BenchmarkFraming(b *testing.B) {
	a, p := memPair(memConfig(0x10000000, 384, 384, 1<<17, 1<<17, 64), memConfig(0x70000000, 384, 384, 1<<17, 1<<17, 64))
	dst := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		olen := uint32(olapStartSize)
		if !a.k.canSend() {
			b.Fatal("cannot send")
		}
		w, err := a.k.nextWrite(64, &olen)
		if err != nil {
			b.Fatal(err)
		}
		p.k.onRecv(w.imm)
		p.k.reposts = 0
		a.k.onSend(uint64(w.imm), true, false, nil)
		if p.k.consume(dst, p.rbuf) != 64 {
			b.Fatal("short read")
		}
		for p.k.giveCredits() {
			c := p.k.sendCredits()
			if c.withSGE {
				copy(a.tsgl[c.remoteAddr-a.cfg.targetSGLAddr:], c.sge[:])
			}
			a.k.onRecv(c.imm)
			a.k.reposts = 0
			p.k.onSend(uint64(c.imm), true, false, nil)
		}
	}
}

// BenchmarkCredits is one credit update with a new SGE, planned and
// applied at the peer.
func BenchmarkCredits(b *testing.B) {
	a, p := memPair(memConfig(0x10000000, 384, 384, 1<<17, 1<<17, 64), memConfig(0x70000000, 384, 384, 1<<17, 1<<17, 64))
	b.ReportAllocs()
	for b.Loop() {
		p.k.rbufAvail = p.k.rbufSize // as if half the buffer were read
		c := p.k.sendCredits()
		copy(a.tsgl[c.remoteAddr-a.cfg.targetSGLAddr:], c.sge[:])
		a.k.onRecv(c.imm)
		p.k.onSend(uint64(c.imm), true, false, nil)
		p.k.granted = uint64(p.k.rbufSize >> 1)
	}
}
