package engine_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// fuzzInput reads the fuzzer's bytes, yielding zeros once they run out.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

func (in *fuzzInput) u32() uint32 {
	return uint32(in.byte())<<24 | uint32(in.byte())<<16 | uint32(in.byte())<<8 | uint32(in.byte())
}

// fuzzMaxHalfOpen is the fuzzed engines' half-open bound: small enough
// for a few fuzzed REQs to fill it and evict.
const fuzzMaxHalfOpen = 3

// liveWire builds two engines holding IDs in many states: a listener, an
// established connection, a passive request awaiting Accept (MRA armed),
// an active REQ outstanding, a pair in TimeWait and a SIDR request.
func liveWire(t *testing.T) (*wire, *node, *node) {
	w := &wire{t: t, now: epoch}
	// Port 2 is InfiniBand: programs that deliver there (bit 5 of an
	// op) reach the LID-routed paths.
	bound := func(c *engine.Config) { c.MaxHalfOpen, c.InfiniBandPorts = fuzzMaxHalfOpen, []uint8{2} }
	a := newNode(t, "a", "192.0.2.1", 1, bound)
	b := newNode(t, "b", "192.0.2.2", 2, bound)
	w.nodes = []*node{a, b}
	act, pas := establish(t, w, a, b)
	_ = a.e.Disconnect(w.now, act, nil)
	w.run()
	_ = b.e.Disconnect(w.now, pas, nil)
	w.run()                      // act and pas in TimeWait
	_, _ = establish(t, w, a, b) // same QPN, stays established
	p := w.connectParams(a, b)
	p.QPN = 0x31
	p.ECE = ece.ECE{VendorID: 0x15b3, Options: 1}
	_, _ = a.e.Connect(w.now, p)
	w.run() // b: request reported, MRA armed; a: REQ_SENT
	p.QPN = 0x32
	w.drop = func(sent) bool { return true }
	_, _ = a.e.Connect(w.now, p) // REQ lost: a has a REQ outstanding
	w.run()
	w.drop = nil
	if _, err := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceUDP, Port: 9000, QPType: 3}); err != nil {
		t.Fatal(err)
	}
	sp := engine.SIDRParams{PortSpace: rdma.PortSpaceUDP, Src: p.Src, Dst: netipPort(p.Dst, 9000), Path: a.path(b)}
	_, _ = a.e.ResolveSIDR(w.now, sp)
	w.run()
	return w, a, b
}

// FuzzReceive feeds sequences of MADs to two engines that hold live IDs.
// The input is a program: raw MADs, MADs built from fields whose IDs,
// QPNs and GUIDs come from values seen on the wire (so they hit live IDs),
// clock advances, and rounds of delivery between the engines. After every
// step both engines' invariants must hold, every MAD they send must parse
// and go to QP 1, and nothing may panic.
func FuzzReceive(f *testing.F) {
	for _, name := range []string{"rping-cm.pcap", "ece-req-rep.pcap", "ece-rej35.pcap"} {
		for _, m := range readCapture(f, name) {
			f.Add(append([]byte{0}, m...))
		}
	}
	f.Add([]byte{1, 3, 0, 1, 0, 0, 0, 0, 2, 10, 3})
	f.Add([]byte{1, 6, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 2, 200, 3, 1, 4, 0, 1})
	f.Add([]byte{1, 7, 2, 0, 0, 0, 0, 0, 3, 1, 5, 1, 0, 2, 255, 2, 255})
	f.Add(floodSeed())
	// A REQ from an InfiniBand peer (LID 5, SL 3, no GRH), accepted.
	f.Add([]byte{0x21, 0, 4, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xff, 0x12, 0x34, 0x56, 0x78, 1, 0, 0xff, 0, 0, 0, 0x40,
		0, 0, 0, 1, 20, 20, 3, 3, 0, 18, 0, 1, 0, 0x43, 0, 0x50, 0x60})
	f.Fuzz(func(t *testing.T, data []byte) {
		w, _, _ := runProgram(t, data)
		w.advance(10 * time.Minute) // every timer fires; still consistent
	})
}

// runProgram runs one FuzzReceive program on liveWire's engines.
func runProgram(t *testing.T, data []byte) (*wire, *node, *node) {
	w, a, b := liveWire(t)
	w.unrouted = true
	in := &fuzzInput{b: data}
	for steps := 0; len(in.b) > 0 && steps < 64; steps++ {
		op := in.byte()
		to, from := b, a
		if op&0x80 != 0 {
			to, from = a, b
		}
		src := engine.Addr{Port: 1, GID: from.gid, QPN: 1, HopLimit: in.byte()}
		if op&0x20 != 0 { // from an InfiniBand peer: its LID and SL, a GRH only with a hop limit
			src.Port, src.LID, src.SL = 2, uint16(in.byte())+1, in.byte()&15
			if src.HopLimit == 0 {
				src.GID = rdma.GID{}
			}
		}
		switch op & 3 {
		case 0: // a raw MAD
			var m [mad.MADSize]byte
			n := copy(m[:], in.b)
			in.b = in.b[n:]
			to.e.Receive(w.now, src, m[:])
		case 1: // a MAD built from fields
			if m := buildMAD(w, in); m != nil {
				to.e.Receive(w.now, src, m)
			}
		case 2: // time passes
			w.now = w.now.Add(time.Duration(in.byte()) * 97 * time.Millisecond)
			a.e.Tick(w.now)
			b.e.Tick(w.now)
		case 3: // the engines talk; with bit 6, after accepting every request
			if op&0x40 != 0 {
				acceptAll(w, a, in.byte())
				acceptAll(w, b, in.byte())
			}
			w.run()
		}
		w.collect(a) // checks invariants and every MAD sent
		w.collect(b)
		for _, n := range []*node{a, b} {
			if s := n.e.Stats(); s.Malformed != s.BadLength+s.BadVersion+s.BadAttribute+s.BadField || s.Malformed > s.Received ||
				s.BacklogDrops > s.Dropped || s.Evicted > s.Received {
				t.Fatalf("%s: inconsistent stats %+v", n.name, s)
			}
		}
	}
	return w, a, b
}

// acceptAll accepts every request n reported that still waits for an
// answer, from QPNs starting at qpn (distinct, so the peer's stale check
// passes unless the fuzzer made them collide), so that requests go on to
// wait for their RTU and a REQ past the half-open bound evicts one.
func acceptAll(w *wire, n *node, qpn byte) {
	q := 0x100 + uint32(qpn)<<8
	for _, ev := range n.events {
		if ev.Type != engine.EventConnectRequest {
			continue
		}
		if st, ok := n.e.State(ev.ID); ok && (st == engine.StateREQRcvd || st == engine.StateMRAREQSent) {
			q++
			if err := n.e.Accept(w.now, ev.ID, engine.AcceptParams{QPN: q, RNRRetryCount: 7}); err != nil {
				w.t.Fatalf("%s: accept %v in %v: %v", n.name, ev.ID, st, err)
			}
		}
	}
}

// pool returns values seen on the wire: communication IDs, QPNs, CA GUIDs.
func pool(w *wire) (ids []uint32, guids []uint64) {
	ids = []uint32{0, 0x11, 0x22, 0x31, 0x32, 0x15b3}
	for _, s := range w.sent {
		ids = append(ids, binary.BigEndian.Uint32(s.mad[24:28]), binary.BigEndian.Uint32(s.mad[28:32]))
	}
	for _, n := range w.nodes {
		guids = append(guids, n.guid)
	}
	return ids, guids
}

func buildMAD(w *wire, in *fuzzInput) []byte {
	ids, guids := pool(w)
	id := func() uint32 {
		k := in.byte()
		if k == 0xff {
			return in.u32()
		}
		return ids[int(k)%len(ids)]
	}
	guid := func() uint64 { return guids[int(in.byte())%len(guids)] }
	tid := uint64(in.u32())
	h := mad.Header{TransactionID: tid, AttributeModifier: in.u32()}
	var m mad.Message
	switch in.byte() % 11 {
	case 0:
		r := &mad.REQ{Header: h, LocalCommID: id(), ServiceID: mad.ServiceID(rdma.PortSpaceTCP, uint16(in.byte())%2+testPort-1),
			LocalCAGUID: guid(), LocalQPN: id() & 0xffffff, StartingPSN: in.u32() & 0xffffff,
			LocalCMResponseTimeout: in.byte() & 31, RemoteCMResponseTimeout: in.byte() & 31, MaxCMRetries: in.byte() & 15,
			PathMTU: rdma.MTU(in.byte()%5 + 1), TransportServiceType: mad.TransportServiceType(in.byte() % 2)}
		r.Primary.LocalACKTimeout = in.byte() & 31
		r.Primary.LocalGID = w.nodes[int(in.byte())%2].gid
		r.Primary.RemoteGID = w.nodes[int(in.byte())%2].gid
		if in.byte()&1 == 0 {
			h := mad.IPHeader{IPVersion: 4, SrcPort: 1, Src: w.nodes[0].ip, Dst: w.nodes[1].ip}
			_ = h.MarshalWithData(r.PrivateData[:], nil)
		}
		m = r
	case 1:
		m = &mad.MRA{Header: h, LocalCommID: id(), RemoteCommID: id(), MessageMRAed: mad.MRAedMessage(in.byte() % 3),
			ServiceTimeout: in.byte() & 31}
	case 2:
		r := &mad.REJ{Header: h, LocalCommID: id(), RemoteCommID: id(), MessageRejected: mad.RejectedMessage(in.byte() % 3),
			Reason: mad.RejectReason(in.byte() % 36)}
		if r.Reason == mad.RejectTimeout {
			var g [8]byte
			binary.BigEndian.PutUint64(g[:], guid())
			_ = r.SetARI(g[:])
		}
		m = r
	case 3:
		m = &mad.REP{Header: h, LocalCommID: id(), RemoteCommID: id(), LocalQPN: id() & 0xffffff, LocalCAGUID: guid(),
			StartingPSN: in.u32() & 0xffffff, TargetACKDelay: in.byte() & 31, RNRRetryCount: in.byte() & 7}
	case 4:
		m = &mad.RTU{Header: h, LocalCommID: id(), RemoteCommID: id()}
	case 5:
		m = &mad.DREQ{Header: h, LocalCommID: id(), RemoteCommID: id(), RemoteQPNEECN: id() & 0xffffff}
	case 6:
		m = &mad.DREP{Header: h, LocalCommID: id(), RemoteCommID: id()}
	case 7:
		m = &mad.SIDRREQ{Header: h, RequestID: id(), ServiceID: mad.ServiceID(rdma.PortSpaceUDP, 9000+uint16(in.byte()%2))}
	case 8:
		m = &mad.SIDRREP{Header: h, RequestID: id(), Status: mad.SIDRStatus(in.byte() % 6), QPN: id() & 0xffffff}
	case 9:
		m = &mad.LAP{Header: h, LocalCommID: id(), RemoteCommID: id()}
	default:
		m = &mad.APR{Header: h, LocalCommID: id(), RemoteCommID: id()}
	}
	b := make([]byte, mad.MADSize)
	if _, err := m.MarshalTo(b); err != nil {
		return nil
	}
	return b
}

// floodSeed is a fuzz program that floods b's listener with REQs from new
// communication IDs and QPNs, accepts them, and floods again: past the
// half-open bound the later REQs evict the accepted ones.
func floodSeed() []byte {
	var p []byte
	req := func(k byte) {
		p = append(p, 1, 64)                           // a MAD built from fields, a to b, hop limit 64
		p = append(p, 0, 0, 0, k, 0, 0, 0, 0, 0)       // TID, attribute modifier, REQ
		p = append(p, 0xff, 0x10, 0, 0, k, 1, 0)       // new local ID, the listener's port, a's GUID
		p = append(p, 0xff, 0, 0, 0x20, k, 0, 0, 0, k) // new QPN, PSN
		p = append(p, 20, 20, 15, 3, 0, 19, 0, 1, 0)   // timeouts, retries, MTU, RC, ACK timeout, GIDs, IP header
	}
	for k := range byte(5) {
		req(k + 1)
	}
	p = append(p, 0x43, 64, 0, 0) // accept every request, then deliver
	for k := range byte(3) {
		req(k + 10)
	}
	return append(p, 3)
}

// The fuzzer reaches the half-open bound: its flood seed drops a REQ for
// the bound and evicts.
func TestFuzzReachesHalfOpenBound(t *testing.T) {
	_, _, b := runProgram(t, floodSeed())
	if s := b.e.Stats(); s.Evicted == 0 || s.BacklogDrops == 0 {
		t.Fatalf("flood seed: %+v", s)
	}
}
