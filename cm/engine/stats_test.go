package engine_test

import (
	"encoding/binary"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
)

// TestStatsByReason: each malformed MAD lands in exactly one Bad*
// counter, an unknown comm ID in Dropped, LAP in LAPDropped, and every
// MAD in Received; an engine with live connections keeps its invariants.
func TestStatsByReason(t *testing.T) {
	w, a, b := liveWire(t)
	before := b.e.Stats()
	valid := func() []byte {
		m := make([]byte, mad.MADSize)
		if _, err := (&mad.DREQ{LocalCommID: 0xdead, RemoteCommID: 0xbeef}).MarshalTo(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	mutate := func(f func(m []byte)) []byte { m := valid(); f(m); return m }
	src := engine.Addr{Port: 1, GID: a.gid, QPN: 1}
	for _, m := range [][]byte{
		valid()[:100],                                                         // BadLength
		mutate(func(m []byte) { m[0] = 2 }),                                   // BadVersion: base version
		mutate(func(m []byte) { m[1] = 0x08 }),                                // BadVersion: class
		mutate(func(m []byte) { m[2] = 1 }),                                   // BadVersion: class version
		mutate(func(m []byte) { binary.BigEndian.PutUint16(m[16:], 0x00ff) }), // BadAttribute
		mutate(func(m []byte) { m[3] = 0x01 }),                                // BadAttribute: method Get
		mutate(func(m []byte) { // BadField: MRA MessageMRAed 3
			binary.BigEndian.PutUint16(m[16:], uint16(mad.AttrMRA))
			m[32] = 0xc0
		}),
		valid(), // unknown comm ID: Dropped (answered with a DREP)
	} {
		b.e.Receive(w.now, src, m)
		w.collect(b)
	}
	got := b.e.Stats()
	diff := engine.Stats{
		Received: got.Received - before.Received, Malformed: got.Malformed - before.Malformed,
		BadLength: got.BadLength - before.BadLength, BadVersion: got.BadVersion - before.BadVersion,
		BadAttribute: got.BadAttribute - before.BadAttribute, BadField: got.BadField - before.BadField,
	}
	want := engine.Stats{Received: 8, Malformed: 7, BadLength: 1, BadVersion: 3, BadAttribute: 2, BadField: 1}
	if diff != want {
		t.Errorf("stats delta %+v, want %+v", diff, want)
	}
}
