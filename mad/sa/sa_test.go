package sa

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// sample has a distinct value in every field, so that a field written
// at the wrong place or width shows.
func sample() PathRecord {
	return PathRecord{
		ServiceID: 0x0000000001060000 | 7471,
		PathRecord: rdma.PathRecord{
			DGID: rdma.GID{0xfe, 0x80, 8: 0x00, 0x02, 0xc9, 0x03, 0x00, 0xaa, 0xbb, 0xcc},
			SGID: rdma.GID{0xfe, 0x80, 8: 0x00, 0x02, 0xc9, 0x03, 0x00, 0x11, 0x22, 0x33},
			DLID: 0x1234, SLID: 0x0056, FlowLabel: 0xABCDE, HopLimit: 0x3F, TrafficClass: 0x9C,
			Reversible: true, PKey: 0xFFFF, SL: 0xB, MTU: rdma.MTU4096, Rate: 0x10, PacketLifeTime: 0x13,
		},
		RawTraffic: false, NumbPath: 0x55, QoSClass: 0x7A5,
		MTUSelector: Exactly, RateSelector: LessThan, PacketLifeTimeSelector: Largest, Preference: 0x42,
	}
}

func TestPathRecordLayout(t *testing.T) {
	q := Query{TransactionID: 0x1122334455667788, Method: MethodGet, SMKey: 0x0102030405060708,
		CompMask: CMCompMask, Record: sample()}
	b := make([]byte, MADSize)
	if n, err := q.MarshalTo(b); err != nil || n != MADSize {
		t.Fatalf("MarshalTo = %d, %v", n, err)
	}
	want := map[int][]byte{
		0:  {1, MgmtClass, ClassVersion, byte(MethodGet), 0, 0, 0, 0},
		8:  {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88},
		16: {0x00, 0x35, 0, 0, 0, 0, 0, 0},
		36: {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0},
		48: {0, 0, 0, 0, 0, 0, 0x38, 0x0f}, // bits 0-3, 11, 12, 13
		// The record, from byte 56.
		56:      {0, 0, 0, 0, 0x01, 0x06, 0x1d, 0x2f},
		56 + 40: {0x12, 0x34, 0x00, 0x56},
		56 + 44: {0x0A, 0xBC, 0xDE, 0x3F}, // RawTraffic 0, FlowLabel, HopLimit
		56 + 48: {0x9C, 0x80 | 0x55, 0xFF, 0xFF},
		56 + 52: {0x7A, 0x5B, 2<<6 | 5, 1<<6 | 0x10, 3<<6 | 0x13, 0x42, 0, 0, 0, 0, 0, 0},
	}
	for off, w := range want {
		if got := b[off : off+len(w)]; !bytes.Equal(got, w) {
			t.Errorf("bytes %d..%d = % x, want % x", off, off+len(w), got, w)
		}
	}
	if !bytes.Equal(b[56+8:56+24], q.Record.DGID[:]) || !bytes.Equal(b[56+24:56+40], q.Record.SGID[:]) {
		t.Errorf("GIDs misplaced: % x", b[56:96])
	}
	v, err := ParseQuery(b)
	if err != nil {
		t.Fatal(err)
	}
	var back Query
	v.Decode(&back)
	if diff := cmp.Diff(q, back); diff != "" {
		t.Errorf("query round trip (-sent +decoded):\n%s", diff)
	}
	if v.Record().Reserved() {
		t.Error("a built record has reserved bits set")
	}
}

func TestResponseRoundTrip(t *testing.T) {
	r1, r2 := sample(), sample()
	r2.DLID, r2.RawTraffic, r2.Preference = 7, true, 1
	for _, r := range []Response{
		{TransactionID: 9, Method: MethodGetResp, Records: []PathRecord{r1}},
		{TransactionID: 10, Method: MethodGetTableResp, Records: []PathRecord{r1, r2, r1}},
		{TransactionID: 11, Method: MethodGetTableResp},
	} {
		b := make([]byte, MADSize)
		if _, err := r.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		v, err := ParseResponse(b)
		if err != nil {
			t.Fatalf("%v: %v", r.Method, err)
		}
		got := Response{TransactionID: v.TransactionID(), Method: v.Method(), Status: v.Status()}
		for i := range v.Len() {
			var p PathRecord
			v.Record(i).Decode(&p)
			got.Records = append(got.Records, p)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("response round trip (-sent +decoded):\n%s", diff)
		}
	}
}

func TestBadInput(t *testing.T) {
	good := make([]byte, MADSize)
	r := Response{TransactionID: 1, Method: MethodGetTableResp, Records: []PathRecord{sample()}}
	if _, err := r.MarshalTo(good); err != nil {
		t.Fatal(err)
	}
	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:255], ErrShortBuffer},
		{"CM class", mod(func(b []byte) { b[1] = 0x07 }), ErrNotSA},
		{"class version 1", mod(func(b []byte) { b[2] = 1 }), ErrNotSA},
		{"NodeRecord", mod(func(b []byte) { b[17] = 0x11 }), ErrWrongAttribute},
		{"a query", mod(func(b []byte) { b[3] = byte(MethodGet) }), ErrBadMethod},
		{"RMPP not active", mod(func(b []byte) { b[26] = 0 }), ErrBadRMPP},
		{"second segment", mod(func(b []byte) { b[31] = 2 }), ErrBadRMPP},
		{"offset too small", mod(func(b []byte) { b[45] = 4 }), ErrBadRMPP},
		{"payload not whole records", mod(func(b []byte) { b[35]++ }), ErrBadRMPP},
		{"payload past the buffer", mod(func(b []byte) { binary.BigEndian.PutUint32(b[32:], 2*20+4*64) }), ErrShortBuffer},
		{"no records", mod(func(b []byte) { b[4], b[5] = 0x03, 0x00 }), rdma.ErrNoRoute},
		{"busy", mod(func(b []byte) { b[5] = 1 }), rdma.ErrBusy},
		{"invalid GID", mod(func(b []byte) { b[4] = 0x05 }), rdma.ErrInvalidArgument},
		{"denied", mod(func(b []byte) { b[4] = 0x07 }), rdma.ErrPermission},
	} {
		_, err := ParseResponse(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		} else if !strings.HasPrefix(err.Error(), "sa: ") {
			t.Errorf("%s: %q lacks the package prefix", c.name, err)
		}
	}
	b := make([]byte, MADSize)
	for _, c := range []struct {
		name string
		m    interface{ MarshalTo([]byte) (int, error) }
		want error
	}{
		{"flow label", &Query{Method: MethodGet, Record: PathRecord{PathRecord: rdma.PathRecord{FlowLabel: 1 << 20}}}, ErrFieldRange},
		{"SL", &Query{Method: MethodGet, Record: PathRecord{PathRecord: rdma.PathRecord{SL: 16}}}, ErrFieldRange},
		{"selector", &Query{Method: MethodGet, Record: PathRecord{MTUSelector: 4}}, ErrFieldRange},
		{"query method", &Query{Method: MethodGetResp}, ErrBadMethod},
		{"four records", &Response{Method: MethodGetTableResp, Records: make([]PathRecord, 4)}, ErrFieldRange},
		{"GetResp without record", &Response{Method: MethodGetResp}, ErrFieldRange},
		{"status with record", &Response{Method: MethodGetTableResp, Status: 0x300, Records: make([]PathRecord, 1)}, ErrFieldRange},
	} {
		if _, err := c.m.MarshalTo(b); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

// TestWiresharkDecodes frames a query and a table response as RoCE GSI
// packets and checks every PathRecord field Wireshark's InfiniBand
// dissector decodes: the IBTA layout read by a decoder that is not ours.
func TestWiresharkDecodes(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark is required in CI (apt-get install tshark): it is the independent decoder")
		}
		t.Skip("tshark not installed")
	}
	rec := sample()
	q := Query{TransactionID: 0x42, Method: MethodGet, CompMask: CMCompMask, Record: rec}
	resp := Response{TransactionID: 0x42, Method: MethodGetTableResp, Records: []PathRecord{rec}}
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range []interface{ MarshalTo([]byte) (int, error) }{&q, &resp} {
		raw := make([]byte, MADSize)
		if _, err := m.MarshalTo(raw); err != nil {
			t.Fatal(err)
		}
		f := roce.GSIFrame(raw)
		f.SrcIP, f.DstIP = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
		f.SrcPort, f.PSN = 0xC000|uint16(i), uint32(i)
		frame, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WritePacket(time.Unix(1700000000, 0), frame); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "sa.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fields := []string{"infiniband.mad.mgmtclass", "infiniband.mad.method", "infiniband.sa.componentmask",
		"infiniband.pathrecord.dlid", "infiniband.pathrecord.slid", "infiniband.pathrecord.flowlabel",
		"infiniband.pathrecord.hoplimit", "infiniband.pathrecord.tclass", "infiniband.pathrecord.reversible",
		"infiniband.pathrecord.numbpath", "infiniband.pathrecord.p_key", "infiniband.pathrecord.sl",
		"infiniband.pathrecord.mtuselector", "infiniband.pathrecord.mtu", "infiniband.pathrecord.rateselector",
		"infiniband.pathrecord.rate", "infiniband.pathrecord.packetlifetimeselector",
		"infiniband.pathrecord.packetlifetime", "infiniband.pathrecord.preference"}
	args := []string{"-r", path, "-d", "udp.port==4791,infiniband", "-T", "fields", "-E", "separator=;"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(tshark, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("tshark printed %d lines, want 2:\n%s", len(lines), out)
	}
	wantRec := []uint64{uint64(rec.DLID), uint64(rec.SLID), uint64(rec.FlowLabel), uint64(rec.HopLimit),
		uint64(rec.TrafficClass), 1, uint64(rec.NumbPath), uint64(rec.PKey), uint64(rec.SL),
		uint64(rec.MTUSelector), uint64(rec.MTU), uint64(rec.RateSelector), uint64(rec.Rate),
		uint64(rec.PacketLifeTimeSelector), uint64(rec.PacketLifeTime), uint64(rec.Preference)}
	for i, line := range lines {
		got := strings.Split(line, ";")
		want := append([]uint64{MgmtClass, uint64([]Method{MethodGet, MethodGetTableResp}[i]), uint64([]CompMask{CMCompMask, 0}[i])}, wantRec...)
		if len(got) != len(want) {
			t.Fatalf("packet %d: tshark fields %q, want %d", i, got, len(want))
		}
		for k, g := range got {
			v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(g), "0x"), pickBase(g), 64)
			if err != nil {
				t.Errorf("packet %d: %s = %q does not parse: %v", i, fields[k], g, err)
				continue
			}
			if v != want[k] {
				t.Errorf("packet %d: %s = %d (%q), want %d", i, fields[k], v, g, want[k])
			}
		}
	}
}

func pickBase(s string) int {
	if strings.HasPrefix(strings.ToLower(s), "0x") {
		return 16
	}
	return 10
}

func TestResolver(t *testing.T) {
	now := time.Unix(0, 0)
	r := NewResolver(ResolverConfig{Timeout: time.Second, Retries: 2, FirstTID: 100})
	q := CMQuery(sample().SGID, sample().DGID, 0xffff, sample().ServiceID)
	o, err := r.Query(now, 7, q)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseQuery(o.MAD[:])
	if err != nil || v.TransactionID() != 100 || v.CompMask() != CMCompMask {
		t.Fatalf("query: %v, TID %d, mask %#x", err, v.TransactionID(), v.CompMask())
	}
	answer := func(tid uint64, status uint16, recs ...PathRecord) []byte {
		m := Response{TransactionID: tid, Method: MethodGetResp, Status: status, Records: recs}
		if status != 0 {
			m.Method = MethodGetTableResp
		}
		b := make([]byte, MADSize)
		if _, err := m.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Another agent's answer, a busy SA and an answer before the
	// deadline are not results.
	if _, ok := r.Receive(answer(99, 0, sample())); ok {
		t.Error("an answer to another TID was taken")
	}
	if _, ok := r.Receive(answer(100, 1)); ok {
		t.Error("a busy answer ended the query")
	}
	out, done := r.Advance(now.Add(999*time.Millisecond), nil, nil)
	if len(out)+len(done) != 0 {
		t.Fatalf("before the deadline: %d resends, %d results", len(out), len(done))
	}
	out, _ = r.Advance(now.Add(time.Second), nil, nil)
	if len(out) != 1 || out[0].Retry != 1 || out[0].MAD != o.MAD {
		t.Fatalf("at the deadline: %+v, want the same MAD once with Retry 1", out)
	}
	// The high 32 bits are umad's: the answer matches on the low ones.
	res, ok := r.Receive(answer(0xabcd<<32|100, 0, sample()))
	if !ok || res.Err != nil || res.Context != 7 || len(res.Paths) != 1 || res.Paths[0] != sample() {
		t.Fatalf("answer: ok %v, %+v", ok, res)
	}
	if _, ok := r.Receive(answer(100, 0, sample())); ok || r.Pending() != 0 {
		t.Error("a duplicate answer was taken")
	}

	// Three sends unanswered: rdma.ErrTimeout at the third deadline.
	o, _ = r.Query(now, 8, q)
	for i := 1; i <= 3; i++ {
		out, done = r.Advance(now.Add(time.Duration(i)*time.Second), nil, nil)
		if i < 3 && (len(out) != 1 || len(done) != 0) || i == 3 && (len(out) != 0 || len(done) != 1) {
			t.Fatalf("deadline %d: %d resends, %d results", i, len(out), len(done))
		}
	}
	if !errors.Is(done[0].Err, rdma.ErrTimeout) || done[0].Context != 8 {
		t.Errorf("after the retries: %+v", done[0])
	}
	// A status ends the query with the mapped sentinel.
	o, _ = r.Query(now, 9, q)
	tid := binary.BigEndian.Uint64(o.MAD[8:])
	res, ok = r.Receive(answer(tid, StatusNoRecords<<8))
	if !ok || !errors.Is(res.Err, rdma.ErrNoRoute) || res.Context != 9 {
		t.Errorf("no records: ok %v, %+v", ok, res)
	}
	// Cancel forgets a query.
	o, _ = r.Query(now, 10, q)
	if r.Cancel(10) != 1 || r.Pending() != 0 {
		t.Error("Cancel left the query pending")
	}
	if _, ok := r.Receive(answer(binary.BigEndian.Uint64(o.MAD[8:]), 0, sample())); ok {
		t.Error("an answer to a cancelled query was taken")
	}
}

// TestReassembledTable: a table answer of three RMPP segments, as the
// kernel hands it to an agent registered with RMPP: the first segment's
// headers, whose PayloadLength counts the SA header of each of the three
// segments, then the seven records back to back.
func TestReassembledTable(t *testing.T) {
	const n = 7
	var recs []PathRecord
	for i := range n {
		recs = append(recs, PathRecord{PathRecord: rdma.PathRecord{DLID: uint16(0x100 + i), SLID: 1, MTU: rdma.MTU2048}})
	}
	b := make([]byte, HeaderSize+n*PathRecordSize)
	for i := 0; i < n; i += MaxRecords {
		r := Response{TransactionID: 9, Method: MethodGetTableResp, Records: recs[i:min(n, i+MaxRecords)]}
		var m [MADSize]byte
		if _, err := r.MarshalTo(m[:]); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			copy(b, m[:HeaderSize])
		}
		copy(b[HeaderSize+i*PathRecordSize:], m[HeaderSize:HeaderSize+len(r.Records)*PathRecordSize])
	}
	b[26] = 0x3 // active, first: the last flag is the last segment's
	binary.BigEndian.PutUint32(b[32:], 3*220-(3*200-n*PathRecordSize))
	v, err := ParseResponse(b)
	if err != nil || v.Len() != n {
		t.Fatalf("ParseResponse: %v, %d records", err, v.Len())
	}
	for i := range n {
		var p PathRecord
		v.Record(i).Decode(&p)
		if p.DLID != uint16(0x100+i) {
			t.Errorf("record %d: DLID %#x", i, p.DLID)
		}
	}
	if _, err := ParseResponse(b[:len(b)-1]); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("a byte short: %v", err)
	}
}
