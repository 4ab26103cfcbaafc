package mad

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var parseSentinels = []error{ErrShortBuffer, ErrBadBaseVersion, ErrWrongClass, ErrBadClassVersion,
	ErrBadMethod, ErrUnknownAttribute, ErrWrongAttribute, ErrReservedTransport, ErrReservedValue}

func isParseSentinel(err error) bool {
	for _, s := range parseSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// callAccessors calls every method of v that takes no arguments, so the
// fuzzer reaches each accessor.
func callAccessors(v any) {
	rv := reflect.ValueOf(v)
	for i := range rv.NumMethod() {
		if m := rv.Method(i); m.Type().NumIn() == 0 {
			m.Call(nil)
		}
	}
}

// checkMAD is the property every decoder must have: Parse either fails
// with a sentinel or succeeds; then decoding ignores exactly the
// reserved bits, encoding the decoded struct succeeds and gives b with
// its reserved bits cleared, and decoding that gives the same struct.
func checkMAD(t *testing.T, b []byte) (View, bool) {
	v, err := Parse(b)
	if err != nil {
		if !isParseSentinel(err) {
			t.Fatalf("Parse error %v wraps no sentinel", err)
		}
		return nil, false
	}
	callAccessors(v)
	callAccessors(v.Header())
	m := v.DecodeMessage()
	out := make([]byte, MADSize)
	if n, err := m.MarshalTo(out); err != nil || n != MADSize {
		t.Fatalf("decoded %v does not encode: %d, %v", v.AttributeID(), n, err)
	}
	mask := definedBits()[v.AttributeID()]
	for i := range out {
		if out[i] != b[i]&mask[i] {
			t.Fatalf("%v byte %d: encoded %#02x, input %#02x with reserved bits cleared %#02x",
				v.AttributeID(), i, out[i], b[i], b[i]&mask[i])
		}
	}
	if err := CheckReserved(b); (err == nil) != bytes.Equal(out, b[:MADSize]) {
		t.Fatalf("CheckReserved = %v but round trip equal = %v", err, !bytes.Equal(out, b[:MADSize]))
	}
	m2, err := Decode(out)
	if err != nil {
		t.Fatalf("re-encoded %v does not parse: %v", v.AttributeID(), err)
	}
	if diff := cmp.Diff(m, m2); diff != "" {
		t.Fatalf("decode→encode→decode differs:\n%s", diff)
	}
	return v, true
}

func addSeeds(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(mustMarshal(m))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for attr := AttrClassPortInfo; attr <= AttrAPR; attr++ {
		if attr.Known() {
			f.Add(randomCanonical(r, attr))
		}
	}
	bad := mustMarshal(sampleREQ())
	bad[cmData+43] |= 6
	f.Add(bad)
	f.Add([]byte{1, 7, 2, 3})
}

func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkMAD(t, b)
	})
}

// fuzzAttr fuzzes one message's body behind a valid header, so the
// fuzzer spends its time on the attribute's fields, and checks the
// typed parser agrees with Parse.
func fuzzAttr(f *testing.F, attr AttributeID, typed func([]byte) (View, error)) {
	hdr := mustMarshalAttr(attr)[:HeaderSize]
	f.Add(mustMarshalAttr(attr)[HeaderSize:])
	r := rand.New(rand.NewPCG(5, uint64(attr)))
	f.Add(randomCanonical(r, attr)[HeaderSize:])
	f.Add(bytes.Repeat([]byte{0xff}, DataSize))
	f.Fuzz(func(t *testing.T, body []byte) {
		b := make([]byte, MADSize)
		copy(b, hdr)
		copy(b[HeaderSize:], body)
		v, ok := checkMAD(t, b)
		tv, err := typed(b)
		if ok != (err == nil) {
			t.Fatalf("Parse ok=%v, typed parser error %v", ok, err)
		}
		if ok {
			callAccessors(tv)
			if v.AttributeID() != attr || !bytes.Equal(tv.Bytes(), v.Bytes()) {
				t.Fatalf("typed parser disagrees with Parse")
			}
		}
	})
}

func view[V View](parse func([]byte) (V, error)) func([]byte) (View, error) {
	return func(b []byte) (View, error) { return parse(b) }
}

func FuzzClassPortInfo(f *testing.F) { fuzzAttr(f, AttrClassPortInfo, view(ParseClassPortInfo)) }
func FuzzREQ(f *testing.F)           { fuzzAttr(f, AttrREQ, view(ParseREQ)) }
func FuzzMRA(f *testing.F)           { fuzzAttr(f, AttrMRA, view(ParseMRA)) }
func FuzzREJ(f *testing.F)           { fuzzAttr(f, AttrREJ, view(ParseREJ)) }
func FuzzREP(f *testing.F)           { fuzzAttr(f, AttrREP, view(ParseREP)) }
func FuzzRTU(f *testing.F)           { fuzzAttr(f, AttrRTU, view(ParseRTU)) }
func FuzzDREQ(f *testing.F)          { fuzzAttr(f, AttrDREQ, view(ParseDREQ)) }
func FuzzDREP(f *testing.F)          { fuzzAttr(f, AttrDREP, view(ParseDREP)) }
func FuzzSIDRREQ(f *testing.F)       { fuzzAttr(f, AttrSIDRREQ, view(ParseSIDRREQ)) }
func FuzzSIDRREP(f *testing.F)       { fuzzAttr(f, AttrSIDRREP, view(ParseSIDRREP)) }
func FuzzLAP(f *testing.F)           { fuzzAttr(f, AttrLAP, view(ParseLAP)) }
func FuzzAPR(f *testing.F)           { fuzzAttr(f, AttrAPR, view(ParseAPR)) }

// ipHeaderDefined masks the bits of the IP header the codec keeps for
// IP version 4: bytes 4..15 and 20..31 are padding, byte 1's low nibble
// is reserved.
func ipHeaderDefined(ipVersion uint8) [IPHeaderSize]byte {
	var m [IPHeaderSize]byte
	for i := range m {
		m[i] = 0xff
	}
	m[1] = 0xf0
	if ipVersion == 4 {
		for i := 4; i < 16; i++ {
			m[i], m[i+16] = 0, 0
		}
	}
	return m
}

func FuzzIPHeader(f *testing.F) {
	f.Add(mustMarshal(sampleREQ())[cmData+140:])
	v6 := IPHeader{IPVersion: 6, SrcPort: 1, Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("::ffff:192.0.2.1")}
	b6 := make([]byte, IPHeaderSize)
	if _, err := v6.MarshalTo(b6); err != nil {
		f.Fatal(err)
	}
	f.Add(b6)
	f.Add([]byte{0, 0x4f})
	f.Fuzz(func(t *testing.T, pd []byte) {
		v, err := ParseIPHeader(pd)
		if err != nil {
			if !errors.Is(err, ErrShortBuffer) && !errors.Is(err, ErrBadCMAVersion) && !errors.Is(err, ErrBadIPVersion) {
				t.Fatalf("ParseIPHeader error %v wraps no sentinel", err)
			}
			return
		}
		callAccessors(v)
		var h IPHeader
		v.Decode(&h)
		out := make([]byte, IPHeaderSize)
		if _, err := h.MarshalTo(out); err != nil {
			t.Fatalf("decoded header does not encode: %v", err)
		}
		mask := ipHeaderDefined(h.IPVersion)
		for i := range out {
			if out[i] != pd[i]&mask[i] {
				t.Fatalf("byte %d: encoded %#02x, input %#02x", i, out[i], pd[i])
			}
		}
		v2, err := ParseIPHeader(out)
		if err != nil {
			t.Fatal(err)
		}
		var h2 IPHeader
		v2.Decode(&h2)
		if h2 != h {
			t.Fatalf("decode→encode→decode: %+v != %+v", h2, h)
		}
	})
}
