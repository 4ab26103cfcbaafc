package rsocket

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

// memSide is one end of a connection in memory: its core, its receive
// buffer and target SGL at made-up addresses, its send buffer.
type memSide struct {
	k          *core
	rbuf, tsgl []byte
	sbuf       []byte
	cfg        coreConfig
	peer       *memSide
	pending    []pendingWR // posted, not yet delivered
	done       []uint64    // delivered, completion not yet seen
}

type pendingWR struct {
	addr    uint64
	rkey    uint32
	data    []byte
	imm     uint32
	withImm bool
	id      uint64
}

func memConfig(base uint64, rq, sq uint16, rbuf, sbuf, inline uint32) coreConfig {
	return coreConfig{sqSize: sq, rqSize: rq, inline: inline, rbufSize: rbuf, sbufSize: sbuf,
		rbufAddr: base, rbufKey: uint32(base >> 20), targetSGLAddr: base + 1<<24, targetSGLKey: uint32(base>>20) + 1,
		targetSGLEntries: sglSize, bigEndian: hostBigEndian}
}

// memPair connects two cores; a's conn data goes to b and back.
func memPair(ca, cb coreConfig) (*memSide, *memSide) {
	a := &memSide{cfg: ca, rbuf: make([]byte, ca.rbufSize), tsgl: make([]byte, sglSize*sgeLen), sbuf: make([]byte, ca.sbufSize)}
	b := &memSide{cfg: cb, rbuf: make([]byte, cb.rbufSize), tsgl: make([]byte, sglSize*sgeLen), sbuf: make([]byte, cb.sbufSize)}
	var da, db [connDataLen]byte
	x, y := ca.connData(), cb.connData()
	x.marshal(&da)
	y.marshal(&db)
	va, err := parseConnData(da[:])
	if err != nil {
		panic(err)
	}
	vb, err := parseConnData(db[:])
	if err != nil {
		panic(err)
	}
	a.k, b.k = newCore(ca, vb, a.tsgl), newCore(cb, va, b.tsgl)
	a.peer, b.peer = b, a
	return a, b
}

// deliver performs one posted WR at the peer (an RDMA WRITE into its
// memory, then its receive completion) and completes it here.
func (s *memSide) deliver(t testing.TB) {
	w := s.pending[0]
	s.pending = s.pending[1:]
	p := s.peer
	switch {
	case len(w.data) == 0:
	case w.rkey == p.cfg.rbufKey && w.addr >= p.cfg.rbufAddr && w.addr+uint64(len(w.data)) <= p.cfg.rbufAddr+uint64(len(p.rbuf)):
		copy(p.rbuf[w.addr-p.cfg.rbufAddr:], w.data)
	case w.rkey == p.cfg.targetSGLKey && w.addr >= p.cfg.targetSGLAddr && w.addr+uint64(len(w.data)) <= p.cfg.targetSGLAddr+uint64(len(p.tsgl)):
		copy(p.tsgl[w.addr-p.cfg.targetSGLAddr:], w.data)
	default:
		t.Fatalf("remote access error: %#x+%d key %#x", w.addr, len(w.data), w.rkey)
	}
	if w.withImm {
		p.k.onRecv(w.imm)
		p.k.reposts = 0
	}
	s.done = append(s.done, w.id)
}

func (s *memSide) complete() {
	for _, id := range s.done {
		s.k.onSend(id, true, false, nil)
	}
	s.done = s.done[:0]
}

func (s *memSide) credits() {
	for s.k.giveCredits() {
		c := s.k.sendCredits()
		w := pendingWR{imm: c.imm, withImm: true, id: uint64(c.imm)}
		if c.withSGE {
			w.addr, w.rkey, w.data = c.remoteAddr, c.rkey, append([]byte(nil), c.sge[:]...)
		}
		s.pending = append(s.pending, w)
	}
}

// send posts as much of b as the core allows and returns the bytes posted.
func (s *memSide) send(t testing.TB, b []byte, olen *uint32) int {
	n := 0
	for n < len(b) && s.k.canSend() {
		w, err := s.k.nextWrite(len(b)-n, olen)
		if err != nil {
			t.Fatal(err)
		}
		chunk := b[n : n+int(w.n)]
		data := append([]byte(nil), chunk...)
		if !w.inline {
			// Through the send buffer, as the Conn does.
			k := copy(s.sbuf[w.seg[0].off:w.seg[0].off+w.seg[0].len], chunk)
			if w.nseg == 2 {
				copy(s.sbuf[:w.seg[1].len], chunk[k:])
			}
			data = append(append([]byte(nil), s.sbuf[w.seg[0].off:w.seg[0].off+w.seg[0].len]...), s.sbuf[:w.seg[1].len*uint32(w.nseg-1)]...)
		}
		s.pending = append(s.pending, pendingWR{addr: w.remoteAddr, rkey: w.rkey, data: data, imm: w.imm, withImm: true, id: uint64(w.imm)})
		n += int(w.n)
	}
	return n
}

// TestCoreStream moves random-sized writes and reads through two cores in
// memory, with deliveries and completions in random order and amounts,
// and checks every byte and that the flow never stalls.
func TestCoreStream(t *testing.T) {
	for _, tc := range []struct {
		name            string
		rq, sq          uint16
		rbuf, sbuf, inl uint32
	}{
		{"defaults", 384, 384, 1 << 17, 1 << 17, 64},
		{"small", 16, 16, 4096, 4096, 0},
		{"odd", 17, 33, 6000, 10000, 16},
		{"other-endian", 64, 64, 1 << 16, 1 << 15, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.rq)))
			cb := memConfig(0x70000000, tc.rq, tc.sq, tc.rbuf, tc.sbuf, tc.inl)
			// b plays a host of the other byte order: its NET flag
			// differs, a writes its SGL updates swapped, b reads its
			// target SGL in its own order.
			cb.bigEndian = (tc.name == "other-endian") != hostBigEndian
			a, b := memPair(memConfig(0x10000000, tc.rq, tc.sq, tc.rbuf, tc.sbuf, tc.inl), cb)
			streamThrough(t, rng, a, b) // a to b
			streamThrough(t, rng, b, a) // and back
		})
	}
}

// TestCoreHostile: what a peer can put in an immediate never makes the
// core read past its buffer; bad ones end the connection with ErrProtocol.
func TestCoreHostile(t *testing.T) {
	a, _ := memPair(memConfig(0x10000000, 16, 16, 4096, 4096, 64), memConfig(0x70000000, 16, 16, 4096, 4096, 64))
	a.k.onRecv(msgSet(opData, 2049)) // only half the buffer is granted
	if !errors.Is(a.k.err, ErrProtocol) || a.k.connected {
		t.Fatalf("oversized write: %v", a.k.err)
	}
	for _, op := range []uint32{1, 3, 5} {
		a, _ := memPair(memConfig(0x10000000, 16, 16, 4096, 4096, 64), memConfig(0x70000000, 16, 16, 4096, 4096, 64))
		a.k.onRecv(msgSet(op, 1))
		if !errors.Is(a.k.err, ErrProtocol) {
			t.Fatalf("reserved op %d: %v", op, a.k.err)
		}
	}
	a, _ = memPair(memConfig(0x10000000, 16, 16, 4096, 4096, 64), memConfig(0x70000000, 16, 16, 4096, 4096, 64))
	for i := 0; i < 17; i++ {
		a.k.onRecv(msgSet(opData, 0))
	}
	if !errors.Is(a.k.err, ErrProtocol) {
		t.Fatalf("17 messages on 16 credits: %v", a.k.err)
	}
	// An iomap index past our table (we offer none here).
	a, _ = memPair(memConfig(0x10000000, 16, 16, 4096, 4096, 64), memConfig(0x70000000, 16, 16, 4096, 4096, 64))
	a.k.onRecv(msgSet(opIOMapSGL, 0))
	if !errors.Is(a.k.err, ErrProtocol) {
		t.Fatalf("iomap index 0 of 0: %v", a.k.err)
	}
	// A target SGE outside the peer's buffer is refused before any write.
	a, _ = memPair(memConfig(0x10000000, 16, 16, 4096, 4096, 64), memConfig(0x70000000, 16, 16, 4096, 4096, 64))
	a.k.putTarget(0, sge{Addr: 0x70000000 + 4000, Key: 0x700, Length: 2048})
	olen := uint32(olapStartSize)
	if _, err := a.k.nextWrite(100, &olen); !errors.Is(err, ErrProtocol) {
		t.Fatalf("SGE past the buffer: %v", err)
	}
}

// TestCoreControl: SHUTDOWN half-closes, DISCONNECT ends, KEEPALIVE is
// nothing (rs_poll_cq).
func TestCoreControl(t *testing.T) {
	a, _ := memPair(memConfig(0x10000000, 16, 16, 4096, 4096, 64), memConfig(0x70000000, 16, 16, 4096, 4096, 64))
	a.k.onRecv(msgSet(opCtrl, ctrlKeepalive))
	if !a.k.readable || !a.k.connected {
		t.Fatal("keepalive changed the state")
	}
	a.k.onRecv(msgSet(opCtrl, ctrlShutdown))
	if a.k.readable || !a.k.writable || !a.k.connected {
		t.Fatalf("after SHUTDOWN: r %v w %v c %v", a.k.readable, a.k.writable, a.k.connected)
	}
	a.k.onRecv(msgSet(opCtrl, ctrlDisconnect))
	if a.k.connected || a.k.err != nil {
		t.Fatalf("after DISCONNECT: c %v err %v", a.k.connected, a.k.err)
	}
}

func TestImmediate(t *testing.T) {
	for _, c := range []struct{ op, data, imm uint32 }{
		{opData, 65536, 0x00010000}, {opSGL, 384, 0x80000180}, {opCtrl, ctrlShutdown, 0xe0000002}, {opIOMapSGL, 5, 0xc0000005},
	} {
		if got := msgSet(c.op, c.data); got != c.imm || msgOp(got) != c.op || msgData(got) != c.data {
			t.Errorf("msgSet(%d, %d) = %#x, want %#x", c.op, c.data, got, c.imm)
		}
	}
}

// streamThrough sends 3 MiB from a to b through the cores, with
// deliveries, completions, reads and credits in random order.
func streamThrough(t *testing.T, rng *rand.Rand, a, b *memSide) {
	t.Helper()
	src := make([]byte, 3<<20)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	var got []byte
	sent := 0
	olen := uint32(olapStartSize)
	rb := make([]byte, 100000)
	for steps := 0; len(got) < len(src); steps++ {
		if steps > 1e6 {
			t.Fatalf("stalled at %d of %d bytes", len(got), len(src))
		}
		switch rng.IntN(5) {
		case 0:
			if sent < len(src) {
				end := min(len(src), sent+1+rng.IntN(200000))
				sent += a.send(t, src[sent:end], &olen)
				if rng.IntN(4) == 0 {
					olen = olapStartSize
				}
			}
		case 1:
			for range rng.IntN(len(a.pending) + 1) {
				a.deliver(t)
			}
			for range rng.IntN(len(b.pending) + 1) {
				b.deliver(t)
			}
		case 2:
			a.complete()
			b.complete()
		case 3:
			n := b.k.consume(rb[:1+rng.IntN(len(rb))], b.rbuf)
			got = append(got, rb[:n]...)
		case 4:
			a.credits()
			b.credits()
		}
		if a.k.err != nil || b.k.err != nil {
			t.Fatal(a.k.err, b.k.err)
		}
	}
	if !bytes.Equal(got, src) {
		t.Fatal("data differ")
	}
}

// TestCoreSendFailure: a failed send completion (a keepalive WRITE that
// ran out of retries, or data) ends the connection with an error; a
// flushed one (after the disconnect) does not.
func TestCoreSendFailure(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ok, flushed    bool
		wantErr, alive bool
	}{
		{"retry exceeded", false, false, true, false},
		{"flushed", false, true, false, true},
		{"success", true, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := memPair(memConfig(0x10000000, 16, 16, 4096, 4096, 64), memConfig(0x70000000, 16, 16, 4096, 4096, 64))
			if !a.k.ctrlAvail() {
				t.Fatal("no control slot")
			}
			imm := a.k.ctrl(ctrlKeepalive)
			a.k.onSend(uint64(imm), tc.ok, tc.flushed, stringer("status"))
			if got := a.k.err != nil; got != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", a.k.err, tc.wantErr)
			}
			if a.k.connected != tc.alive {
				t.Fatalf("connected %v, want %v", a.k.connected, tc.alive)
			}
			var errno syscall.Errno
			if tc.wantErr && (!errors.Is(a.k.err, syscall.ECONNRESET) || !errors.Is(a.k.err, rdma.ErrDisconnected) ||
				!errors.As(a.k.err, &errno) || errno != syscall.ECONNRESET) {
				t.Fatalf("err %v, want ECONNRESET (reachable with errors.As) and ErrDisconnected", a.k.err)
			}
			if !a.k.ctrlAvail() {
				t.Fatal("the keepalive's control slot was not returned")
			}
		})
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
