package mad

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/google/go-cmp/cmp"
)

// span is an expected byte run at an absolute MAD offset.
type span struct {
	off  int
	want string // hex, spaces ignored
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// checkSpans compares b against the spans and requires every byte not
// covered by a span to be zero.
func checkSpans(t *testing.T, b []byte, spans []span) {
	t.Helper()
	covered := make([]bool, len(b))
	for _, s := range spans {
		want := unhex(s.want)
		if got := b[s.off : s.off+len(want)]; !bytes.Equal(got, want) {
			t.Errorf("offset %d: got % x, want % x", s.off, got, want)
		}
		for i := range want {
			covered[s.off+i] = true
		}
	}
	for i, c := range covered {
		if !c && b[i] != 0 {
			t.Errorf("offset %d: got %#02x, want 0 (not a field of this vector)", i, b[i])
		}
	}
}

// The hand-computed vectors below follow ibta_vol1_c12.h: absolute
// offset = CM data offset + 24; sub-byte fields counted from the MSB.
func TestREQBytes(t *testing.T) {
	b := mustMarshal(sampleREQ())
	checkSpans(t, b, []span{
		{0, "01 07 02 03"},              // base version, class CM, class version 2, Send
		{8, "00 00 00 01 11 22 33 44"},  // TID
		{16, "00 10"},                   // REQ
		{20, "30 00 00 01"},             // ECE options in AttributeModifier
		{24, "11 22 33 44"},             // local comm ID
		{29, "00 15 b3"},                // ECE vendor ID, data 5..7
		{32, "00 00 00 00 01 06 4e 20"}, // service ID: TCP port space, port 20000
		{40, "00 02 c9 03 00 00 12 34"}, // local CA GUID
		{56, "00 01 23 04"},             // QPN 0x123, responder resources 4
		{60, "00 00 00 04"},             // local EECN 0, initiator depth 4
		{67, "a1"},                      // remote CM timeout 20<<3 | RC<<1 | flow control
		{68, "ab cd ef a7"},             // PSN, local CM timeout 20<<3 | retry 7
		{72, "ff ff 57 f0"},             // P_Key, MTU 5<<4 | RNR 7, max CM retries 15<<4
		{76, "ff ff ff ff"},             // permissive LIDs
		{80, "00000000 00000000 0000ffff c0000201"},
		{96, "00000000 00000000 0000ffff c0000202"},
		{112, "12 34 50 10"}, // flow label 0x12345<<12 | rate 16
		{116, "20 40 30 90"}, // TC, hop limit, SL 3<<4, ACK timeout 18<<3
		// private data: rdma_cm IP header then "hello"
		{164, "00 40 c0 01"},
		{164 + 16, "c0 00 02 01"},
		{164 + 32, "c0 00 02 02"},
		{164 + 36, hex.EncodeToString([]byte("hello"))},
	})
}

func TestREPBytes(t *testing.T) {
	b := mustMarshal(sampleREP())
	checkSpans(t, b, []span{
		{0, "01 07 02 03"},
		{8, "00 00 00 01 11 22 33 44"},
		{16, "00 13"},
		{20, "30 00 00 01"}, // ECE options
		{24, "55 66 77 88"}, // local comm ID
		{28, "11 22 33 44"}, // remote comm ID
		{36, "00 04 56 00"}, // QPN, vendor ID bits 23:16 (data 15)
		{40, "00 00 00 15"}, // EECN 0, vendor ID bits 15:8 (data 19)
		{44, "12 34 56 b3"}, // PSN, vendor ID bits 7:0 (data 23)
		{48, "04 04"},       // responder resources, initiator depth
		{50, "7a"},          // target ACK delay 15<<3 | failover 1<<1 | no flow control
		{51, "f0"},          // RNR retry 7<<5 | SRQ<<4
		{52, "00 02 c9 03 00 00 56 78"},
		{60, "de ad"},
	})
}

func TestREJBytes(t *testing.T) {
	b := mustMarshal(sampleREJ())
	checkSpans(t, b, []span{
		{0, "01 07 02 03"},
		{8, "00 00 00 01 11 22 33 44"},
		{16, "00 12"},
		{24, "55 66 77 88 11 22 33 44"},
		{32, "00"},    // message rejected: REQ
		{33, "20"},    // ARI length 16 << 1
		{34, "00 23"}, // reason 35
		{36, "00000000 00000000 0000ffff c0000202"},
		{108, "6e 6f"}, // "no"
	})
}

func TestSIDRREPBytes(t *testing.T) {
	b := mustMarshal(sampleSIDRREP())
	checkSpans(t, b, []span{
		{0, "01 07 02 03"},
		{8, "00 00 00 02 00 00 00 09"},
		{16, "00 18"},
		{20, "30 00 00 01"},             // ECE options
		{24, "00 00 00 09"},             // request ID
		{28, "00 03"},                   // status success, info length 3
		{30, "00 15"},                   // VENDOR_ID_H: kernel writes (vid>>8)&0xff
		{32, "00 07 89 b3"},             // QPN, VENDOR_ID_L
		{36, "00 00 00 00 01 11 1d 2f"}, // service ID UDP port 7471
		{44, "01 23 45 67"},             // Q_Key
		{48, "01 02 03"},                // additional information
	})
}

func TestSmallMessagesBytes(t *testing.T) {
	msgs := sampleMessages()
	tests := []struct {
		m     Message
		spans []span
	}{
		{msgs[2], []span{{0, "01070203"}, {16, "0011"}, {24, "00000001 00000002"}, {32, "40 c0"}}},
		{msgs[5], []span{{0, "01070203"}, {16, "0014"}, {24, "00000003 00000004"}, {255, "99"}}},
		{msgs[6], []span{{0, "01070203"}, {16, "0015"}, {24, "00000005 00000006"}, {32, "abcdef"}}},
		{msgs[7], []span{{0, "01070203"}, {16, "0016"}, {24, "00000007 00000008"}}},
		{msgs[8], []span{{0, "01070203"}, {16, "0017"}, {24, "00000009 ffff"}, {32, "00000000 01111d2f"}}},
		{msgs[10], []span{{0, "01070203"}, {16, "0019"}, {24, "0000000a 0000000b"},
			{36, "000123 a0"}, // data 12: remote QPN, data 15: timeout 20<<3
			{44, "0001 0002"}, // data 20: LIDs
			{48, "00000000 00000000 0000ffff c0000201"},
			{64, "00000000 00000000 0000ffff c0000202"},
			{80, "fffff0 ff ff 3f f8 f8"}, // data 56: FL, data 59 TC, 60 HL, 61 rate, 62 SL|SL, 63 timeout
		}},
		{msgs[11], []span{{0, "01070203"}, {16, "001a"}, {24, "0000000c 0000000d"}, {32, "10 08"},
			{36, "00000000 00000000 0000ffff c0000201"}}},
		{msgs[0], []span{{0, "01070281"}, {16, "0001"}, {24, "01 02 0001"},
			// CapabilityMask2 (27 ones) << 5 | RespTimeValue 18
			{28, "fffffff2"},
			{32, "00000000 00000000 0000ffff c0000201"},
			{48, "ff ffffff"}, {52, "1234 ffff"}, {56, "00 ffffff"}, {60, "80010000"},
			{64, "00000000 00000000 0000ffff c0000202"},
			{80, "01 200003"}, {84, "0004 0005"}, {88, "06 000007"}, {92, "00000008"}}},
	}
	for _, tt := range tests {
		t.Run(tt.m.AttributeID().String(), func(t *testing.T) {
			checkSpans(t, mustMarshal(tt.m), tt.spans)
		})
	}
}

// Views and structs agree with the builders on every sample.
func TestSamplesRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		t.Run(m.AttributeID().String(), func(t *testing.T) {
			b := mustMarshal(m)
			v, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if v.AttributeID() != m.AttributeID() || v.Header().AttributeID() != m.AttributeID() {
				t.Fatalf("Parse gave %v", v.AttributeID())
			}
			got := v.DecodeMessage()
			if diff := cmp.Diff(m, got); diff != "" {
				t.Fatalf("decode(encode(m)) differs (-want +got):\n%s", diff)
			}
			if err := CheckReserved(b); err != nil {
				t.Fatalf("CheckReserved: %v", err)
			}
			if b2 := mustMarshal(got); !bytes.Equal(b, b2) {
				t.Fatalf("re-encode differs")
			}
		})
	}
}

// Field accessors return the sample's values (the struct Decode goes
// through them too, so this pins the accessors to the vectors above).
func TestViewAccessors(t *testing.T) {
	req, err := ParseREQ(mustMarshal(sampleREQ()))
	if err != nil {
		t.Fatal(err)
	}
	if req.ECE() != mlx5ECE || req.VendorID() != 0x15b3 || req.LocalQPN() != 0x123 ||
		req.StartingPSN() != 0xabcdef || req.PathMTU() != rdma.MTU4096 || req.RetryCount() != 7 ||
		!req.EndToEndFlowControl() || req.HasAlternate() || req.Primary().FlowLabel != 0x12345 ||
		req.Primary().LocalGID.Addr().String() != "::ffff:192.0.2.1" {
		t.Errorf("REQ view fields wrong: ece=%v qpn=%#x psn=%#x", req.ECE(), req.LocalQPN(), req.StartingPSN())
	}
	ip, err := ParseIPHeader(req.PrivateData())
	if err != nil {
		t.Fatal(err)
	}
	if ip.Src().String() != "192.0.2.1" || ip.Dst().String() != "192.0.2.2" || ip.SrcPort() != 0xc001 {
		t.Errorf("IP header: %v %v %d", ip.Src(), ip.Dst(), ip.SrcPort())
	}
	ps, port, ok := SplitServiceID(req.ServiceID())
	if !ok || ps != rdma.PortSpaceTCP || port != 20000 {
		t.Errorf("SplitServiceID = %v %d %v", ps, port, ok)
	}

	rep, err := ParseREP(mustMarshal(sampleREP()))
	if err != nil {
		t.Fatal(err)
	}
	if rep.ECE() != mlx5ECE || rep.FailoverAccepted() != FailoverNotSupported || !rep.SRQ() ||
		rep.TargetACKDelay() != 15 || rep.RNRRetryCount() != 7 {
		t.Errorf("REP view fields wrong: ece=%v", rep.ECE())
	}
	rej, err := ParseREJ(mustMarshal(sampleREJ()))
	if err != nil {
		t.Fatal(err)
	}
	if rej.Reason() != RejectVendorOptionNotSupported || !bytes.Equal(rej.ARI(), gidB[:]) || rej.ARILength() != 16 {
		t.Errorf("REJ view: reason %v ari % x", rej.Reason(), rej.ARI())
	}
	sidr, err := ParseSIDRREP(mustMarshal(sampleSIDRREP()))
	if err != nil {
		t.Fatal(err)
	}
	if sidr.ECE() != mlx5ECE || sidr.VendorIDHigh() != 0x15 || sidr.VendorIDLow() != 0xb3 ||
		!bytes.Equal(sidr.Info(), []byte{1, 2, 3}) || sidr.Status() != SIDRSuccess {
		t.Errorf("SIDR_REP view: ece %v info % x", sidr.ECE(), sidr.Info())
	}
	var sm SIDRREP
	sidr.Decode(&sm)
	if sm.ECE() != mlx5ECE {
		t.Errorf("SIDRREP.ECE() = %v", sm.ECE())
	}
}

// reservedBits lists, per attribute, the bits ibta_vol1_c12.h (and
// ib_mad.h for the header and ClassPortInfo) leave undefined: absolute
// offset and mask. It is written from the header, independently of the
// codec, and checked against what the encoders write.
var reservedBits = map[AttributeID][][2]int{
	AttrREQ: {{28, 0xff}, {48, 0xff}, {49, 0xff}, {50, 0xff}, {51, 0xff},
		{114, 0x0f}, {115, 0xc0}, {118, 0x07}, {119, 0x07},
		{158, 0x0f}, {159, 0xc0}, {162, 0x07}, {163, 0x03}},
	AttrMRA:     {{32, 0x3f}, {33, 0x07}},
	AttrREJ:     {{32, 0x3f}, {33, 0x01}},
	AttrREP:     {{51, 0x0f}},
	AttrRTU:     {},
	AttrDREQ:    {{35, 0xff}},
	AttrDREP:    {},
	AttrSIDRREQ: {{30, 0xff}, {31, 0xff}},
	// data 6 is the top byte of VENDOR_ID_H, which Linux never writes.
	AttrSIDRREP: {{30, 0xff}},
	AttrLAP: {{32, 0xff}, {33, 0xff}, {34, 0xff}, {35, 0xff}, {39, 0x07},
		{40, 0xff}, {41, 0xff}, {42, 0xff}, {43, 0xff},
		{82, 0x0f}, {85, 0xc0}, {86, 0x07}, {87, 0x07}},
	AttrAPR:           {{34, 0xff}, {35, 0xff}},
	AttrClassPortInfo: {{56, 0xff}},
}

func TestReservedBitsMatchKernelHeader(t *testing.T) {
	for attr, list := range reservedBits {
		var want mad
		for i := range want {
			want[i] = 0xff
		}
		want[18], want[19] = 0, 0 // MAD header reserved
		for _, r := range list {
			want[r[0]] &^= byte(r[1])
		}
		if attr == AttrClassPortInfo {
			for i := cmData + ClassPortInfoSize; i < MADSize; i++ {
				want[i] = 0
			}
		}
		got := definedBits()[attr]
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%v: defined bits at offset %d = %#02x, kernel header gives %#02x", attr, i, got[i], want[i])
			}
		}
	}
}

// Encoders write every reserved bit as zero even into a dirty buffer.
func TestEncodeZeroesReserved(t *testing.T) {
	for _, m := range sampleMessages() {
		b := bytes.Repeat([]byte{0xff}, MADSize+8)
		if n, err := m.MarshalTo(b); err != nil || n != MADSize {
			t.Fatalf("%v MarshalTo = %d, %v", m.AttributeID(), n, err)
		}
		if !bytes.Equal(b, mustMarshal(m)[:MADSize:MADSize]) && !bytes.Equal(b[:MADSize], mustMarshal(m)) {
			t.Errorf("%v: encoding into a dirty buffer differs from a clean one", m.AttributeID())
		}
		if !bytes.Equal(b[MADSize:], bytes.Repeat([]byte{0xff}, 8)) {
			t.Errorf("%v: MarshalTo wrote past 256 bytes", m.AttributeID())
		}
		for _, r := range reservedBits[m.AttributeID()] {
			if b[r[0]]&byte(r[1]) != 0 {
				t.Errorf("%v: reserved bits %#02x at %d set", m.AttributeID(), r[1], r[0])
			}
		}
		if b[18] != 0 || b[19] != 0 {
			t.Errorf("%v: header reserved bytes set", m.AttributeID())
		}
	}
}

// randomCanonical returns a random MAD of attribute attr that Parse and
// CheckReserved accept.
func randomCanonical(r *rand.Rand, attr AttributeID) []byte {
	b := make([]byte, MADSize)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	mask := definedBits()[attr]
	for i := range b {
		b[i] &= mask[i]
	}
	b[0], b[1], b[2], b[3] = BaseVersion, ClassCM, CMClassVersion, byte(MethodSend)
	b[16], b[17] = byte(attr>>8), byte(attr)
	switch attr {
	case AttrClassPortInfo:
		b[3] = byte([]Method{MethodGet, MethodSet, MethodGetResp}[r.IntN(3)])
	case AttrREQ:
		if b[cmData+43]>>1&3 == 3 {
			b[cmData+51] = b[cmData+51]&^7 | 1 // XRC
		}
	case AttrMRA:
		b[cmData+8] &= 0x7f
	}
	return b
}

func TestRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for attr := AttrClassPortInfo; attr <= AttrAPR; attr++ {
		if !attr.Known() {
			continue
		}
		for range 200 {
			b := randomCanonical(r, attr)
			if err := CheckReserved(b); err != nil {
				t.Fatalf("%v: CheckReserved: %v", attr, err)
			}
			m, err := Decode(b)
			if err != nil {
				t.Fatalf("%v: Decode: %v", attr, err)
			}
			b2 := mustMarshal(m)
			if !bytes.Equal(b, b2) {
				t.Fatalf("%v: decode→encode differs:\n in  %x\n out %x", attr, b, b2)
			}
			m2, _ := Decode(b2)
			if diff := cmp.Diff(m, m2); diff != "" {
				t.Fatalf("%v: decode→encode→decode differs:\n%s", attr, diff)
			}
		}
	}
}

// Reserved bits set on input: Parse accepts, CheckReserved reports the
// offset, and the re-encoding clears exactly those bits.
func TestCheckReserved(t *testing.T) {
	for attr, list := range reservedBits {
		for _, r := range list {
			b := mustMarshalAttr(attr)
			b[r[0]] |= byte(r[1])
			err := CheckReserved(b)
			var fe *FieldError
			if !errors.Is(err, ErrReservedNonZero) || !errors.As(err, &fe) || fe.Offset != r[0] {
				t.Errorf("%v bit %#x at %d: CheckReserved = %v", attr, r[1], r[0], err)
				continue
			}
			m, err := Decode(b)
			if err != nil {
				t.Fatalf("%v: Decode: %v", attr, err)
			}
			if !bytes.Equal(mustMarshal(m), mustMarshalAttr(attr)) {
				t.Errorf("%v: re-encoding kept reserved bits at %d", attr, r[0])
			}
		}
	}
	b := mustMarshalAttr(AttrRTU)
	b[19] = 1
	if err := CheckReserved(b); !errors.Is(err, ErrReservedNonZero) {
		t.Errorf("header reserved byte: CheckReserved = %v", err)
	}
	if err := CheckReserved(b[:10]); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("short: CheckReserved = %v", err)
	}
}

func mustMarshalAttr(attr AttributeID) []byte {
	for _, m := range sampleMessages() {
		if m.AttributeID() == attr {
			return mustMarshal(m)
		}
	}
	panic(attr)
}

// A SIDR_REP whose VENDOR_ID_H top byte is set: Linux never writes that
// byte, so the codec treats it as reserved; the raw field stays readable.
func TestSIDRREPHighVendorByte(t *testing.T) {
	b := mustMarshal(sampleSIDRREP())
	b[30] = 0xab
	v, err := ParseSIDRREP(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.VendorID(); got != 0x15b3 || v.VendorIDHigh() != 0xab15 {
		t.Errorf("VendorID = %#x, VendorIDHigh = %#x; want 0x15b3, 0xab15", got, v.VendorIDHigh())
	}
	if err := CheckReserved(b); !errors.Is(err, ErrReservedNonZero) {
		t.Errorf("CheckReserved = %v", err)
	}
	var m SIDRREP
	v.Decode(&m)
	if !bytes.Equal(mustMarshal(&m), mustMarshal(sampleSIDRREP())) {
		t.Errorf("re-encoding kept data byte 6")
	}
	m.VendorID = 0xab15b3
	if _, err := m.MarshalTo(make([]byte, MADSize)); !errors.Is(err, ErrFieldRange) {
		t.Errorf("encode of 24-bit SIDR_REP vendor: %v, want ErrFieldRange", err)
	}
}

func TestTypedParsersAndUnmarshal(t *testing.T) {
	type unmarshaler interface {
		Message
		UnmarshalMAD([]byte) error
	}
	for _, m := range sampleMessages() {
		b := mustMarshal(m)
		fresh := reflect.New(reflect.TypeOf(m).Elem()).Interface().(unmarshaler)
		if err := fresh.UnmarshalMAD(b); err != nil {
			t.Fatalf("%v UnmarshalMAD: %v", m.AttributeID(), err)
		}
		if diff := cmp.Diff(m, Message(fresh)); diff != "" {
			t.Errorf("%v UnmarshalMAD differs:\n%s", m.AttributeID(), diff)
		}
		// Every typed parser refuses every other message.
		other := mustMarshalAttr(AttrRTU)
		if m.AttributeID() == AttrRTU {
			other = mustMarshalAttr(AttrDREP)
		}
		if err := fresh.UnmarshalMAD(other); !errors.Is(err, ErrWrongAttribute) {
			t.Errorf("%v UnmarshalMAD(other) = %v, want ErrWrongAttribute", m.AttributeID(), err)
		}
		mb, err := (m.(interface{ Marshal() ([]byte, error) })).Marshal()
		if err != nil || !bytes.Equal(mb, b) {
			t.Errorf("%v Marshal = %x, %v", m.AttributeID(), mb, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	good := mustMarshal(sampleREQ())
	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, ErrShortBuffer},
		{"255 bytes", good[:255], ErrShortBuffer},
		{"base version", mod(func(b []byte) { b[0] = 2 }), ErrBadBaseVersion},
		{"class SA", mod(func(b []byte) { b[1] = 0x03 }), ErrWrongClass},
		{"class version 1", mod(func(b []byte) { b[2] = 1 }), ErrBadClassVersion},
		{"attribute 0x0020", mod(func(b []byte) { b[17] = 0x20 }), ErrUnknownAttribute},
		{"attribute 0x0002", mod(func(b []byte) { b[17] = 0x02 }), ErrUnknownAttribute},
		{"REQ with GetResp", mod(func(b []byte) { b[3] = 0x81 }), ErrBadMethod},
		{"REQ TST 3 no ext", mod(func(b []byte) { b[cmData+43] |= 3 << 1 }), ErrReservedTransport},
		{"REQ TST 3 ext 2", mod(func(b []byte) { b[cmData+43] |= 3 << 1; b[cmData+51] |= 2 }), ErrReservedTransport},
		{"ClassPortInfo with Send", func() []byte {
			b := mustMarshalAttr(AttrClassPortInfo)
			b[3] = byte(MethodSend)
			return b
		}(), ErrBadMethod},
		{"MRA MessageMRAed 3", func() []byte {
			b := mustMarshalAttr(AttrMRA)
			b[cmData+8] = 0xc0
			return b
		}(), ErrReservedValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse(tt.in)
			if !errors.Is(err, tt.want) || v != nil {
				t.Fatalf("Parse = %v, %v; want %v", v, err, tt.want)
			}
			if _, err := ParseREQ(tt.in); !errors.Is(err, tt.want) {
				t.Fatalf("ParseREQ = %v; want %v", err, tt.want)
			}
		})
	}
	// XRC (TST 3 + extended type 1) is valid.
	xrc := mod(func(b []byte) { b[cmData+43] |= 3 << 1; b[cmData+51] |= 1 })
	if v, err := ParseREQ(xrc); err != nil || v.TransportServiceType() != TransportExtended ||
		v.ExtendedTransportType() != ExtendedTransportXRC {
		t.Errorf("XRC REQ: %v", err)
	}
	// Trailing bytes (e.g. a RoCE ICRC) are ignored.
	if _, err := Parse(append(bytes.Clone(good), 1, 2, 3, 4)); err != nil {
		t.Errorf("260 bytes: %v", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	buf := make([]byte, MADSize)
	tests := []struct {
		name  string
		m     Message
		field string
		off   int
		want  error
	}{
		{"REQ vendor 25 bits", &REQ{VendorID: 1 << 24}, "VendorID", 29, ErrFieldRange},
		{"REQ QPN", &REQ{LocalQPN: 1 << 24}, "LocalQPN", 56, ErrFieldRange},
		{"REQ MTU", &REQ{PathMTU: 16}, "PathMTU", 74, ErrFieldRange},
		{"REQ alt SL", &REQ{Alternate: Path{SL: 16}}, "Alternate.SL", cmData + 96 + 42, ErrFieldRange},
		{"REQ flow label", &REQ{Primary: Path{FlowLabel: 1 << 20}}, "Primary.FlowLabel", cmData + 88, ErrFieldRange},
		{"REQ TST 3", &REQ{TransportServiceType: TransportExtended}, "ExtendedTransportType", 75, ErrReservedTransport},
		{"REQ TST 4", &REQ{TransportServiceType: 4}, "TransportServiceType", 67, ErrFieldRange},
		{"REP vendor", &REP{VendorID: 1 << 24}, "VendorID", 39, ErrFieldRange},
		{"REP PSN", &REP{StartingPSN: 1 << 24}, "StartingPSN", 44, ErrFieldRange},
		{"MRA reserved", &MRA{MessageMRAed: 3}, "MessageMRAed", 32, ErrReservedValue},
		{"MRA timeout", &MRA{ServiceTimeout: 32}, "ServiceTimeout", 33, ErrFieldRange},
		{"REJ ARI length", &REJ{ARILength: 128}, "ARILength", 33, ErrFieldRange},
		{"DREQ QPN", &DREQ{RemoteQPNEECN: 1 << 24}, "RemoteQPNEECN", 32, ErrFieldRange},
		{"SIDR_REP vendor 17 bits", &SIDRREP{VendorID: 1 << 16}, "VendorID", 30, ErrFieldRange},
		{"LAP ack timeout", &LAP{Alternate: Path{LocalACKTimeout: 32}}, "Alternate.LocalACKTimeout", 87, ErrFieldRange},
		{"ClassPortInfo method", &ClassPortInfo{Method: MethodSend}, "Method", 3, ErrBadMethod},
		{"ClassPortInfo QP", &ClassPortInfo{Method: MethodGet, RedirectQP: 1 << 24}, "RedirectQP", 57, ErrFieldRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := tt.m.MarshalTo(buf)
			var fe *FieldError
			if n != 0 || !errors.Is(err, tt.want) || !errors.As(err, &fe) || fe.Field != tt.field || fe.Offset != tt.off {
				t.Fatalf("MarshalTo = %d, %v; want %v on %s at %d", n, err, tt.want, tt.field, tt.off)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error text %q lacks the field name", err)
			}
		})
	}
	for _, m := range sampleMessages() {
		if _, err := m.MarshalTo(buf[:255]); !errors.Is(err, ErrShortBuffer) {
			t.Errorf("%v MarshalTo(255 bytes) = %v", m.AttributeID(), err)
		}
	}
	if b, err := (&REQ{VendorID: 1 << 24}).Marshal(); b != nil || !errors.Is(err, ErrFieldRange) {
		t.Errorf("Marshal = %v, %v", b, err)
	}
}

func TestPrivateDataAndInfoLimits(t *testing.T) {
	sizes := []struct {
		set  func([]byte) error
		size int
	}{
		{new(REQ).SetPrivateData, 92}, {new(MRA).SetPrivateData, 222}, {new(REJ).SetPrivateData, 148},
		{new(REP).SetPrivateData, 196}, {new(RTU).SetPrivateData, 224}, {new(DREQ).SetPrivateData, 220},
		{new(DREP).SetPrivateData, 224}, {new(LAP).SetPrivateData, 168}, {new(APR).SetPrivateData, 148},
		{new(SIDRREQ).SetPrivateData, 216}, {new(SIDRREP).SetPrivateData, 136},
	}
	for i, s := range sizes {
		if err := s.set(make([]byte, s.size)); err != nil {
			t.Errorf("#%d: %d bytes: %v", i, s.size, err)
		}
		if err := s.set(make([]byte, s.size+1)); !errors.Is(err, ErrPrivateDataTooLong) {
			t.Errorf("#%d: %d bytes: %v, want ErrPrivateDataTooLong", i, s.size+1, err)
		}
	}
	for i, set := range []func([]byte) error{new(REJ).SetARI, new(APR).SetInfo, new(SIDRREP).SetInfo} {
		if err := set(make([]byte, 72)); err != nil {
			t.Errorf("info #%d: 72 bytes: %v", i, err)
		}
		if err := set(make([]byte, 73)); !errors.Is(err, ErrInfoTooLong) {
			t.Errorf("info #%d: 73 bytes: %v, want ErrInfoTooLong", i, err)
		}
	}
	// SetPrivateData zeroes what a previous longer value left.
	m := sampleREP()
	if err := m.SetPrivateData([]byte{1}); err != nil || m.PrivateData[1] != 0 || m.PrivateData[0] != 1 {
		t.Errorf("SetPrivateData did not clear: % x", m.PrivateData[:4])
	}
	// An ARI length above 72 (7-bit field) is kept; ARI() clamps.
	rej := sampleREJ()
	rej.ARILength = 100
	v, err := ParseREJ(mustMarshal(rej))
	if err != nil || len(v.ARI()) != 72 || v.ARILength() != 100 {
		t.Errorf("ARI length 100: %v len %d", err, len(v.ARI()))
	}
}

func TestECEAccessors(t *testing.T) {
	for _, m := range []interface {
		Message
		SetECE(eceT)
		ECE() eceT
	}{new(REQ), new(REP), new(SIDRREP)} {
		m.SetECE(mlx5ECE)
		if got := m.ECE(); got != mlx5ECE {
			t.Errorf("%v: ECE() = %v after SetECE", m.AttributeID(), got)
		}
		v, err := Parse(mustMarshal(m))
		if err != nil {
			t.Fatal(err)
		}
		if got := v.(interface{ ECE() eceT }).ECE(); got != mlx5ECE {
			t.Errorf("%v view ECE() = %v", m.AttributeID(), got)
		}
		if got := v.Header().AttributeModifier(); got != 0x30000001 {
			t.Errorf("%v AttributeModifier = %#x", m.AttributeID(), got)
		}
	}
}

func TestNames(t *testing.T) {
	checks := []struct{ got, want string }{
		{RejectVendorOptionNotSupported.String(), "vendor option is not supported"},
		{RejectVendorOptionNotSupported.ConstantName(), "IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED"},
		{RejectTimeout.ARIDescription(), "CA GUID of the sender (8 bytes)"},
		{RejectConsumerDefined.String(), "consumer defined"},
		{RejectReason(34).String(), "unrecognized reason (34)"},
		{RejectReason(34).ConstantName(), ""},
		{RejectStaleConn.ARIDescription(), ""},
		{AttrSIDRREP.String(), "SIDR_REP"},
		{AttrClassPortInfo.String(), "ClassPortInfo"},
		{AttributeID(0x99).String(), "Attribute(0x0099)"},
		{MethodGetResp.String(), "GetResp"},
		{MRAedREP.String(), "REP"},
		{MRAedMessage(3).String(), "reserved(3)"},
		{RejectedOther.String(), "other"},
		{SIDRUnsupportedVersion.String(), "unsupported version"},
		{SIDRStatus(6).String(), "reserved(6)"},
		{APRInvalidSL.String(), "invalid SL"},
		{APRStatus(14).String(), "reserved(14)"},
		{FailoverRejected.String(), "rejected"},
		{TransportUC.String(), "UC"},
		{rdma.MTU1024.String(), "1024"},
		{rdma.MTU(6).String(), "MTU(6)"},
		{rdma.PortSpaceIB.String(), "IB"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for r := RejectReason(0); r < 40; r++ {
		known := (r >= 1 && r <= 33) || r == 35
		if r.Known() != known || (known && (r.ConstantName() == "" || strings.HasPrefix(r.String(), "unrecognized"))) {
			t.Errorf("reason %d: Known=%v name %q", r, r.Known(), r.String())
		}
	}
	if gidA.Addr().String() != "::ffff:192.0.2.1" || gidA.String() != "0000:0000:0000:0000:0000:ffff:c000:0201" {
		t.Errorf("GID String = %v", gidA)
	}
}

type eceT = ece.ECE
