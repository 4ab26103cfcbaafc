package mad

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
	"github.com/google/go-cmp/cmp"
)

func TestTimeout(t *testing.T) {
	tests := []struct {
		n    uint8
		want time.Duration
	}{
		{0, 4096 * time.Nanosecond},
		{1, 8192 * time.Nanosecond},
		{18, 4096 * time.Nanosecond << 18}, // ≈1.07 s, rdma_cm's RoCE packet lifetime
		{20, 4294967296 * time.Nanosecond}, // ≈4.29 s, rdma_cm's CM response timeout
		{31, 4096 * time.Nanosecond << 31},
		{32, 4096 * time.Nanosecond << 31}, // clamped
		{255, 4096 * time.Nanosecond << 31},
	}
	for _, tt := range tests {
		if got := TimeoutDuration(tt.n); got != tt.want {
			t.Errorf("TimeoutDuration(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	inverse := []struct {
		d    time.Duration
		want uint8
	}{
		{0, 0}, {-time.Second, 0}, {4096, 0}, {4097, 1}, {8192, 1},
		{time.Second, 18}, {TimeoutDuration(20), 20}, {TimeoutDuration(20) + 1, 21},
		{TimeoutDuration(31), 31}, {100 * time.Hour, 31},
	}
	for _, tt := range inverse {
		if got := TimeoutExponent(tt.d); got != tt.want {
			t.Errorf("TimeoutExponent(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
	for n := uint8(0); n <= 31; n++ {
		if got := TimeoutExponent(TimeoutDuration(n)); got != n {
			t.Errorf("TimeoutExponent(TimeoutDuration(%d)) = %d", n, got)
		}
	}
}

func TestServiceID(t *testing.T) {
	tests := []struct {
		ps   rdma.PortSpace
		port uint16
		id   uint64
	}{
		{rdma.PortSpaceTCP, 0x4e20, 0x0000_0000_0106_4e20},
		{rdma.PortSpaceUDP, 7471, 0x0000_0000_0111_1d2f},
		{rdma.PortSpaceIB, 1, 0x0000_0000_013f_0001},
		{rdma.PortSpaceIPoIB, 0xffff, 0x0000_0000_0002_ffff},
	}
	for _, tt := range tests {
		if got := ServiceID(tt.ps, tt.port); got != tt.id {
			t.Errorf("ServiceID(%v, %d) = %#x, want %#x", tt.ps, tt.port, got, tt.id)
		}
		ps, port, ok := SplitServiceID(tt.id)
		if !ok || ps != tt.ps || port != tt.port {
			t.Errorf("SplitServiceID(%#x) = %v %d %v", tt.id, ps, port, ok)
		}
	}
	for _, id := range []uint64{0x0000_0001_0106_0001, 0x0200_0000_0000_0000, 0x0000_0000_0107_0001, 0x0000_0000_0100_0000} {
		if _, _, ok := SplitServiceID(id); ok {
			t.Errorf("SplitServiceID(%#x) ok, want not ok", id)
		}
	}
}

func TestIPHeader(t *testing.T) {
	v4 := IPHeader{IPVersion: 4, SrcPort: 0xc001, Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2")}
	v6 := IPHeader{IPVersion: 6, SrcPort: 1, Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("fe80::2")}
	tests := []struct {
		name string
		h    IPHeader
		want string
	}{
		{"v4", v4, "00 40 c001 00000000 00000000 00000000 c0000201 00000000 00000000 00000000 c0000202"},
		{"v6", v6, "00 60 0001 20010db8 00000000 00000000 00000001 fe800000 00000000 00000000 00000002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, IPHeaderSize)
			if n, err := tt.h.MarshalTo(b); err != nil || n != IPHeaderSize {
				t.Fatalf("MarshalTo = %d, %v", n, err)
			}
			if want := unhex(tt.want); string(b) != string(want) {
				t.Fatalf("got %x, want %x", b, want)
			}
			v, err := ParseIPHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			var got IPHeader
			v.Decode(&got)
			if diff := cmp.Diff(tt.h, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	// A v4-mapped address is accepted for IPv4 and written unmapped.
	mapped := v4
	mapped.Src = netip.AddrFrom16(v4.Src.As16())
	b := make([]byte, IPHeaderSize)
	if _, err := mapped.MarshalTo(b); err != nil || b[19] != 1 || b[15] != 0 {
		t.Errorf("mapped v4: %v % x", err, b)
	}

	errs := []struct {
		name string
		h    IPHeader
		buf  int
		want error
	}{
		{"short", v4, 35, ErrShortBuffer},
		{"version", IPHeader{CMAVersion: 1, IPVersion: 4, Src: v4.Src, Dst: v4.Dst}, 36, ErrBadCMAVersion},
		{"ip version 5", IPHeader{IPVersion: 5, Src: v4.Src, Dst: v4.Dst}, 36, ErrBadIPVersion},
		{"v4 header v6 addr", IPHeader{IPVersion: 4, Src: v6.Src, Dst: v4.Dst}, 36, ErrBadIPVersion},
		{"v6 header v4 addr", IPHeader{IPVersion: 6, Src: v6.Src, Dst: v4.Dst}, 36, ErrBadIPVersion},
		{"zero addr", IPHeader{IPVersion: 4}, 36, ErrBadIPVersion},
	}
	for _, tt := range errs {
		if _, err := tt.h.MarshalTo(make([]byte, tt.buf)); !errors.Is(err, tt.want) {
			t.Errorf("%s: MarshalTo = %v, want %v", tt.name, err, tt.want)
		}
	}
	good := make([]byte, IPHeaderSize)
	if _, err := v4.MarshalTo(good); err != nil {
		t.Fatal(err)
	}
	parseErrs := []struct {
		name string
		mod  func([]byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:35] }, ErrShortBuffer},
		{"cma version", func(b []byte) []byte { b[0] = 1; return b }, ErrBadCMAVersion},
		{"ip version 0 (AF_IB)", func(b []byte) []byte { b[1] = 0; return b }, ErrBadIPVersion},
	}
	for _, tt := range parseErrs {
		if _, err := ParseIPHeader(tt.mod(append([]byte(nil), good...))); !errors.Is(err, tt.want) {
			t.Errorf("%s: ParseIPHeader = %v, want %v", tt.name, err, tt.want)
		}
	}

	// MarshalWithData: 56 bytes of user data fit a REQ, 57 do not.
	var req REQ
	if err := v4.MarshalWithData(req.PrivateData[:], make([]byte, REQUserDataSize)); err != nil {
		t.Errorf("56 bytes: %v", err)
	}
	if err := v4.MarshalWithData(req.PrivateData[:], make([]byte, REQUserDataSize+1)); !errors.Is(err, ErrPrivateDataTooLong) {
		t.Errorf("57 bytes: %v", err)
	}
	var sreq SIDRREQ
	if err := v6.MarshalWithData(sreq.PrivateData[:], make([]byte, SIDRREQUserDataSize)); err != nil {
		t.Errorf("SIDR 180 bytes: %v", err)
	}
}

func TestHeaderView(t *testing.T) {
	b := mustMarshal(sampleREQ())
	h, err := ParseHeader(b[:HeaderSize])
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseVersion() != 1 || h.MgmtClass() != 7 || h.ClassVersion() != 2 || h.Method() != MethodSend ||
		h.Status() != 0 || h.ClassSpecific() != 0 || h.TransactionID() != 0x111223344 ||
		h.AttributeID() != AttrREQ || h.Reserved() != 0 || h.AttributeModifier() != 0x30000001 {
		t.Errorf("header view fields wrong")
	}
	want := Header{TransactionID: 0x111223344, AttributeModifier: 0x30000001}
	if got := h.Header(); got != want {
		t.Errorf("Header() = %+v, want %+v", got, want)
	}
	if _, err := ParseHeader(b[:23]); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("ParseHeader(23 bytes) = %v", err)
	}
	// Status and ClassSpecific survive a round trip.
	m := sampleREQ()
	m.Status, m.ClassSpecific = 0x1234, 0x5678
	var got REQ
	if err := got.UnmarshalMAD(mustMarshal(m)); err != nil || got.Status != 0x1234 || got.ClassSpecific != 0x5678 {
		t.Errorf("status/class-specific: %v %+v", err, got.Header)
	}
}

func TestMTUBytes(t *testing.T) {
	for m, want := range map[rdma.MTU]int{0: 0, rdma.MTU256: 256, rdma.MTU512: 512, rdma.MTU1024: 1024, rdma.MTU2048: 2048, rdma.MTU4096: 4096, 6: 0, 15: 0} {
		if got := m.Bytes(); got != want {
			t.Errorf("MTU(%d).Bytes() = %d, want %d", m, got, want)
		}
	}
}

// REQ and REP encode and decode without allocating; so do Parse and
// the other messages.
func TestZeroAllocs(t *testing.T) {
	buf := make([]byte, MADSize)
	req, rep := sampleREQ(), sampleREP()
	reqB, repB := mustMarshal(req), mustMarshal(rep)
	var reqOut REQ
	var repOut REP
	cases := map[string]func(){
		"REQ MarshalTo": func() { _, _ = req.MarshalTo(buf) },
		"REP MarshalTo": func() { _, _ = rep.MarshalTo(buf) },
		"REQ decode": func() {
			v, _ := ParseREQ(reqB)
			v.Decode(&reqOut)
		},
		"REP decode": func() {
			v, _ := ParseREP(repB)
			v.Decode(&repOut)
		},
		"REQ UnmarshalMAD": func() { _ = reqOut.UnmarshalMAD(reqB) },
		"Parse":            func() { _, _ = Parse(repB) },
		"ECE":              func() { v, _ := ParseREQ(reqB); _ = v.ECE() },
	}
	for _, m := range sampleMessages() {
		cases[m.AttributeID().String()+" MarshalTo"] = func() { _, _ = m.MarshalTo(buf) }
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, n)
		}
	}
	if reqOut.ECE() != mlx5ECE || repOut.ECE() != mlx5ECE {
		t.Errorf("decoded ECE %v %v", reqOut.ECE(), repOut.ECE())
	}
}
