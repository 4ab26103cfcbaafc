//go:build linux

package umad

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// Offsets in struct ib_user_mad_hdr (include/uapi/rdma/ib_user_mad.h),
// independent of the Go struct.
const (
	uhID, uhStatus, uhLength               = 0, 4, 16
	uhQPN, uhQKey, uhLID, uhSL, uhPathBits = 20, 24, 28, 30, 31
	uhGRHPresent, uhGIDIndex, uhHopLimit   = 32, 33, 34
	uhTrafficClass, uhGID, uhFlowLabel     = 35, 36, 52
	uhPKeyIndex, uhReserved                = 56, 58
)

// captureReads turns the CM MADs of the golden captures into reads as
// the kernel's ib_umad hands them to the CM agent (ib_umad_recv_handler):
// a header with the sender's GID, GSI QP and GRH fields, then the 256-byte
// MAD.
func captureReads(t testing.TB) [][]byte {
	t.Helper()
	var reads [][]byte
	for _, name := range []string{"rping-cm.pcap", "ece-req-rep.pcap", "ece-rej35.pcap"} {
		f, err := os.Open(filepath.Join("../../mad/testdata/captures", name))
		if err != nil {
			t.Fatalf("golden capture: %v", err)
		}
		r, err := pcap.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := roce.Decode(rec.Data)
			if err != nil {
				t.Fatal(err)
			}
			m, err := p.MAD()
			if err != nil {
				t.Fatal(err)
			}
			deth, _ := p.DETH()
			from := engine.Addr{GID: rdma.GIDFromAddr(p.SrcIP()), QPN: deth.SrcQP(), SGIDIndex: 1,
				HopLimit: p.HopLimit(), TrafficClass: p.TrafficClass(), FlowLabel: p.FlowLabel()}
			h := sendHeader(3, from)
			h.Length = uint32(abi.UmadHdrSize + len(m))
			reads = append(reads, append(append([]byte(nil), abi.Bytes(&h)...), m...))
		}
		f.Close()
	}
	if len(reads) == 0 {
		t.Fatal("no MADs in the golden captures")
	}
	return reads
}

// FuzzParseRecv decodes arbitrary reads (at most a header and the largest
// MAD, as Recv reads): short reads and handed-back sends are errors, and
// otherwise the address echoes the header's fields at their C offsets,
// the MAD is the rest of the read, and answering that address (the
// header Send builds for it) decodes to the same address.
func FuzzParseRecv(f *testing.F) {
	for _, r := range captureReads(f) {
		f.Add(r, uint8(1))
	}
	ib := sendHeader(3, engine.Addr{LID: 0x11, QPN: 1, SL: 2, PKeyIndex: 0}) // InfiniBand: LID, no GRH
	f.Add(append(abi.Bytes(&ib), make([]byte, mad.MADSize)...), uint8(2))
	failed := ib
	failed.Status = 110 // a send handed back with ETIMEDOUT
	f.Add(append([]byte(nil), abi.Bytes(&failed)...), uint8(1))
	f.Add(make([]byte, abi.UmadHdrSize-1), uint8(1))
	f.Add(bytes.Repeat([]byte{0xff}, abi.UmadHdrSize+maxMAD), uint8(255))
	f.Fuzz(func(t *testing.T, data []byte, port uint8) {
		raw := data[:min(len(data), abi.UmadHdrSize+maxMAD)]
		a, m, err := parseRecv(raw, port)
		if len(raw) < abi.UmadHdrSize {
			var se *SendError
			if err == nil || errors.As(err, &se) {
				t.Fatalf("%d-byte read: err %v, want a short-read error", len(raw), err)
			}
			return
		}
		ne, be := binary.NativeEndian, binary.BigEndian
		if st := ne.Uint32(raw[uhStatus:]); st != 0 {
			var se *SendError
			if !errors.As(err, &se) || se.Status != st || m != nil {
				t.Fatalf("status %d: err %v, %d-byte MAD", st, err, len(m))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != len(raw)-abi.UmadHdrSize || len(m) > maxMAD || (len(m) > 0 && &m[0] != &raw[abi.UmadHdrSize]) {
			t.Fatalf("MAD of %d bytes is not the %d bytes after the header", len(m), len(raw)-abi.UmadHdrSize)
		}
		want := engine.Addr{Port: port, PKeyIndex: ne.Uint16(raw[uhPKeyIndex:]), LID: be.Uint16(raw[uhLID:]),
			QPN: be.Uint32(raw[uhQPN:]), SGIDIndex: raw[uhGIDIndex], HopLimit: raw[uhHopLimit],
			TrafficClass: raw[uhTrafficClass], SL: raw[uhSL], FlowLabel: be.Uint32(raw[uhFlowLabel:]) & 0xfffff}
		if raw[uhGRHPresent] != 0 {
			copy(want.GID[:], raw[uhGID:])
		}
		if a != want {
			t.Fatalf("address %+v, want %+v", a, want)
		}
		h := sendHeader(7, a)
		back, m2, err := parseRecv(append(append([]byte(nil), abi.Bytes(&h)...), m...), port)
		if err != nil || back != a || !bytes.Equal(m2, m) {
			t.Fatalf("reply header decodes to %+v, %v; want %+v", back, err, a)
		}
	})
}

// FuzzSendHeader encodes the header Send writes for arbitrary addresses
// and checks its bytes (agent, GSI Q_Key, no MAD-layer timeout or
// retries, GRH exactly when there is a GID) and the round trip through
// parseRecv: the address comes back with the flow label cut to its 20
// bits and the receiving device's port.
func FuzzSendHeader(f *testing.F) {
	for _, r := range captureReads(f)[:2] {
		var h abi.UmadHdr
		copy(abi.Bytes(&h), r)
		f.Add(uint32(3), uint32(1), uint16(0), uint16(0), uint8(0), uint8(1), uint8(64), uint8(0), binary.BigEndian.Uint32(h.FlowLabel[:]), h.GID[:], r[abi.UmadHdrSize:], uint8(1))
	}
	f.Add(uint32(0), uint32(1), uint16(0x11), uint16(0), uint8(2), uint8(0), uint8(0), uint8(0), uint32(0), []byte(nil), make([]byte, mad.MADSize), uint8(1))
	f.Add(^uint32(0), ^uint32(0), ^uint16(0), ^uint16(0), ^uint8(0), ^uint8(0), ^uint8(0), ^uint8(0), ^uint32(0), bytes.Repeat([]byte{0xff}, 16), []byte{}, ^uint8(0))
	f.Fuzz(func(t *testing.T, agent, qpn uint32, lid, pkeyIndex uint16, sl, sgid, hop, tc uint8, flow uint32, gid, m []byte, port uint8) {
		to := engine.Addr{Port: 9, PKeyIndex: pkeyIndex, LID: lid, QPN: qpn, SGIDIndex: sgid, HopLimit: hop,
			TrafficClass: tc, SL: sl, FlowLabel: flow}
		copy(to.GID[:], gid)
		h := sendHeader(agent, to)
		b := abi.Bytes(&h)
		ne, be := binary.NativeEndian, binary.BigEndian
		grh := to.GID != (rdma.GID{})
		zero := func(b []byte) bool { return bytes.Equal(b, make([]byte, len(b))) }
		if ne.Uint32(b[uhID:]) != agent || !zero(b[uhStatus:uhQPN]) || be.Uint32(b[uhQKey:]) != gsiQKey ||
			b[uhPathBits] != 0 || (b[uhGRHPresent] != 0) != grh || be.Uint32(b[uhFlowLabel:]) != flow || !zero(b[uhReserved:]) {
			t.Fatalf("header % x for %+v", b, to)
		}
		m = m[:min(len(m), maxMAD)]
		a, m2, err := parseRecv(append(append([]byte(nil), b...), m...), port)
		want := to
		want.Port, want.FlowLabel = port, flow&0xfffff
		if err != nil || a != want || !bytes.Equal(m2, m) {
			t.Fatalf("round trip: %+v, %v; want %+v", a, err, want)
		}
	})
}
