package roce

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testMAD is a 256-byte payload with a recognisable pattern.
func testMAD() []byte {
	mad := make([]byte, MADLen)
	for i := range mad {
		mad[i] = byte(i*7 + 3)
	}
	mad[0], mad[1], mad[2], mad[3] = 1, 7, 2, 3 // a CM Send MAD header
	return mad
}

func testFrame(ipv6 bool) Frame {
	f := GSIFrame(testMAD())
	f.DstMAC = MAC{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	f.SrcMAC = MAC{0x52, 0x54, 0x00, 0xab, 0xcd, 0xef}
	f.SrcPort = 0xC123
	f.PSN = 0x123456
	if ipv6 {
		f.SrcIP = netip.MustParseAddr("2001:db8::1")
		f.DstIP = netip.MustParseAddr("2001:db8::2")
		f.FlowLabel = 0xABCDE
		f.TrafficClass = 0x68
		f.DontFragment = false
	} else {
		f.SrcIP = netip.MustParseAddr("192.0.2.1")
		f.DstIP = netip.MustParseAddr("192.0.2.2")
		f.IPv4ID = 0x4321
		f.TrafficClass = 0x60
	}
	return f
}

func TestGSIFrameRoundTrip(t *testing.T) {
	vlan := testFrame(false)
	vlan.VLAN = &VLANTag{TPID: EtherTypeVLAN, Priority: 5, DropEligible: true, ID: 42}
	odd := testFrame(true)
	odd.Payload = []byte{1, 2, 3, 4, 5} // needs 3 pad bytes
	odd.Opcode = 0x04                   // RC SEND only: no DETH
	odd.QKey, odd.SrcQP = 0, 0          // ... so no Q_Key or source QP
	odd.Solicited, odd.MigReq, odd.AckReq = true, true, true
	odd.FECN, odd.BECN, odd.TVer = true, true, 0
	for name, f := range map[string]Frame{"IPv4": testFrame(false), "IPv6": testFrame(true), "VLAN": vlan, "RC": odd} {
		t.Run(name, func(t *testing.T) {
			frame, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(frame)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(f, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("Parse(Marshal(f)) differs (-want +got):\n%s", diff)
			}
			again, err := got.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, frame) {
				t.Errorf("second encoding differs")
			}
			// AppendTo appends after existing bytes.
			prefixed, err := f.AppendTo([]byte("xx"))
			if err != nil || !bytes.Equal(prefixed[2:], frame) || string(prefixed[:2]) != "xx" {
				t.Errorf("AppendTo with a prefix: err %v", err)
			}
			p, err := Decode(frame)
			if err != nil {
				t.Fatal(err)
			}
			if p.BTH().PadCount() != uint8(-len(f.Payload)&3) {
				t.Errorf("pad count %d for %d payload bytes", p.BTH().PadCount(), len(f.Payload))
			}
			if f.Opcode == OpcodeUDSendOnly {
				mad, err := p.MAD()
				if err != nil || !bytes.Equal(mad, f.Payload) {
					t.Errorf("MAD() = %x, %v", mad, err)
				}
			}
			if _, ok := p.IPv4Checksum(); !ok {
				t.Error("built IPv4 header checksum is wrong")
			}
			// JSON round trip of the struct (cmdump prints it).
			js, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back Frame
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatalf("json: %v in %s", err, js)
			}
			if diff := cmp.Diff(got, back, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("JSON round trip differs:\n%s", diff)
			}
		})
	}
}

// TestGSIFrameLayout pins the GSI header bytes against IBTA 9.2/9.3.2 and
// Linux's constants, independently of the decoder.
func TestGSIFrameLayout(t *testing.T) {
	f := testFrame(false)
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if want := 14 + 20 + 8 + 12 + 8 + 256 + 4; len(b) != want {
		t.Fatalf("frame is %d bytes, want %d", len(b), want)
	}
	check := func(name string, got, want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) {
			t.Errorf("%s = % x, want % x", name, got, want)
		}
	}
	check("EtherType", b[12:14], []byte{0x08, 0x00})
	check("IPv4 version/IHL, TOS, length", b[14:18], []byte{0x45, 0x60, 0x01, 0x34})
	check("IPv4 ID, DF", b[18:22], []byte{0x43, 0x21, 0x40, 0x00})
	check("TTL, protocol", b[22:24], []byte{64, 17})
	check("UDP ports, length, checksum", b[34:42], []byte{0xc1, 0x23, 0x12, 0xb7, 0x01, 0x20, 0, 0})
	check("BTH", b[42:54], []byte{0x64, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x12, 0x34, 0x56})
	check("DETH", b[54:62], []byte{0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01})
	check("MAD", b[62:62+256], testMAD())
	icrc := binary.LittleEndian.Uint32(b[len(b)-4:])
	if ref := referenceICRC(b[14:], 20, false); icrc != ref {
		t.Errorf("ICRC %#08x, reference %#08x", icrc, ref)
	}
}

func TestFrameValidation(t *testing.T) {
	mixed := testFrame(false)
	mixed.DstIP = netip.MustParseAddr("2001:db8::2")
	noAddr := testFrame(false)
	noAddr.SrcIP = netip.Addr{}
	flow4 := testFrame(false)
	flow4.FlowLabel = 1
	wideFlow := testFrame(true)
	wideFlow.FlowLabel = 1 << 20
	wideQP := testFrame(false)
	wideQP.DestQP = 1 << 24
	widePSN := testFrame(false)
	widePSN.PSN = 1 << 24
	qkeyNoDETH := testFrame(false)
	qkeyNoDETH.Opcode = 0x04
	badVLAN := testFrame(false)
	badVLAN.VLAN = &VLANTag{ID: 4096}
	badTPID := testFrame(false)
	badTPID.VLAN = &VLANTag{TPID: 0x0800}
	huge := testFrame(true)
	huge.Payload = make([]byte, 65535-8-12-8-4+1) // one byte over the IPv6 payload limit
	tver := testFrame(false)
	tver.TVer = 16
	for name, f := range map[string]Frame{
		"mixed families": mixed, "no address": noAddr, "flow label on IPv4": flow4,
		"flow label too wide": wideFlow, "QPN too wide": wideQP, "PSN too wide": widePSN,
		"Q_Key without DETH": qkeyNoDETH, "VLAN ID": badVLAN, "VLAN TPID": badTPID,
		"payload too long": huge, "TVer": tver,
	} {
		b, err := f.AppendTo([]byte{9})
		if !errors.Is(err, ErrInvalidFrame) {
			t.Errorf("%s: err = %v, want ErrInvalidFrame", name, err)
		}
		if len(b) != 1 {
			t.Errorf("%s: AppendTo changed the buffer on error", name)
		}
	}
	// IPv4-mapped addresses are sent as IPv4.
	mapped := testFrame(false)
	mapped.SrcIP = netip.MustParseAddr("::ffff:192.0.2.1")
	mapped.DstIP = netip.MustParseAddr("::ffff:192.0.2.2")
	b, err := mapped.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Decode(b); err != nil || p.IsIPv6() || p.SrcIP() != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("mapped addresses: IPv6 %v src %v err %v", p.IsIPv6(), p.SrcIP(), err)
	}
}

func TestDecodeErrors(t *testing.T) {
	good, err := testFrame(false).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	good6, err := testFrame(true).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	mod := func(b []byte, f func([]byte)) []byte {
		c := append([]byte(nil), b...)
		f(c)
		return c
	}
	arp := mod(good[:42], func(b []byte) { b[12], b[13] = 0x08, 0x06 })
	rocev1 := mod(good, func(b []byte) { b[12], b[13] = 0x89, 0x15 })
	tcp := mod(good, func(b []byte) { b[23] = 6 })
	otherPort := mod(good, func(b []byte) { b[36], b[37] = 0x00, 0x35 })
	fragment := mod(good, func(b []byte) { b[20] |= 0x20 })
	badIHL := mod(good, func(b []byte) { b[14] = 0x44 })
	ipv6InV4 := mod(good6, func(b []byte) { b[12], b[13] = 0x08, 0x00 })
	udpLong := mod(good, func(b []byte) { b[38], b[39] = 0x01, 0x29 })
	udpShort := mod(good, func(b []byte) { b[38], b[39] = 0x00, 0x07 })
	pad := mod(good, func(b []byte) { b[43] = 0x30 }) // pad count 3 is fine ...
	ipv6Ext := mod(good6, func(b []byte) { b[20] = 0 })
	ipv5 := mod(good, func(b []byte) { b[14] = 0x55 })
	threeTags := append(append([]byte(nil), good[:12]...), 0x81, 0, 0, 1, 0x81, 0, 0, 2, 0x81, 0, 0, 3)
	threeTags = append(threeTags, good[12:]...)
	badICRC := mod(good, func(b []byte) { b[len(b)-1] ^= 1 })
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"ARP", arp, ErrNotIP},
		{"RoCEv1 EtherType", rocev1, ErrNotIP},
		{"IP version 5", ipv5, ErrNotIP},
		{"TCP", tcp, ErrNotRoCEv2},
		{"UDP port 53", otherPort, ErrNotRoCEv2},
		{"IPv6 extension header", ipv6Ext, ErrNotRoCEv2},
		{"fragment", fragment, ErrMalformed},
		{"IHL 16", badIHL, ErrMalformed},
		{"IPv6 header under IPv4 EtherType", ipv6InV4, ErrMalformed},
		{"UDP length beyond IP", udpLong, ErrMalformed},
		{"UDP length below header", udpShort, ErrMalformed},
		{"three VLAN tags", threeTags, ErrMalformed},
		{"empty", nil, ErrTruncated},
	} {
		if _, err := Decode(tc.frame); !errors.Is(err, tc.want) {
			t.Errorf("%s: Decode err = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := Parse(tc.frame); !errors.Is(err, tc.want) {
			t.Errorf("%s: Parse err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := Parse(badICRC); !errors.Is(err, ErrBadICRC) {
		t.Errorf("flipped ICRC: Parse err = %v, want ErrBadICRC", err)
	}
	// A pad count makes the MAD 253 bytes: still RoCEv2, but not a GSI MAD.
	p, err := Decode(pad)
	if err != nil {
		t.Fatalf("pad count 3: %v", err)
	}
	if _, err := p.MAD(); !errors.Is(err, ErrNotGSI) {
		t.Errorf("pad count 3: MAD() err = %v, want ErrNotGSI", err)
	}
	qkey := mod(good, func(b []byte) { b[54] = 0 })
	otherQP := mod(good, func(b []byte) { b[49] = 2 })
	rc := mod(good, func(b []byte) { b[42] = 0x04 })
	for name, frame := range map[string][]byte{"Q_Key": qkey, "dest QP 2": otherQP, "RC opcode": rc} {
		p, err := Decode(frame)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := p.MAD(); !errors.Is(err, ErrNotGSI) {
			t.Errorf("%s: MAD() err = %v, want ErrNotGSI", name, err)
		}
	}
	// Every truncation fails with ErrTruncated (or a length contradiction),
	// never a panic; trailing bytes (Ethernet padding, FCS) are ignored.
	for _, frame := range [][]byte{good, good6, threeTags} {
		for n := range len(frame) {
			_, err := Decode(frame[:n])
			if err == nil {
				t.Fatalf("Decode of %d/%d bytes succeeded", n, len(frame))
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
				t.Errorf("Decode of %d/%d bytes: %v", n, len(frame), err)
			}
		}
	}
	withFCS := append(append([]byte(nil), good...), 0xde, 0xad, 0xbe, 0xef)
	if _, err := Parse(withFCS); err != nil {
		t.Errorf("frame with trailing FCS: %v", err)
	}
}

func TestDecodeIPAndVLANs(t *testing.T) {
	f := testFrame(true)
	frame, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodeIP(frame[ethHeaderLen:])
	if err != nil {
		t.Fatal(err)
	}
	if p.HasEthernet() || p.SrcMAC() != (MAC{}) || p.FlowLabel() != 0xABCDE || p.TrafficClass() != 0x68 || p.CheckICRC() != nil {
		t.Errorf("DecodeIP: eth %v mac %v flow %#x tc %#x icrc %v", p.HasEthernet(), p.SrcMAC(), p.FlowLabel(), p.TrafficClass(), p.CheckICRC())
	}
	// 802.1ad outer + 802.1Q inner tag.
	tagged := append(append([]byte(nil), frame[:12]...), 0x88, 0xa8, 0x20, 0x07, 0x81, 0x00, 0xb0, 0x2a)
	tagged = append(tagged, frame[12:]...)
	q, err := Decode(tagged)
	if err != nil {
		t.Fatal(err)
	}
	want := []VLANTag{{TPID: EtherTypeQinQ, Priority: 1, ID: 7}, {TPID: EtherTypeVLAN, Priority: 5, DropEligible: true, ID: 42}}
	if diff := cmp.Diff(want, q.VLANTags()); diff != "" {
		t.Errorf("VLAN tags (-want +got):\n%s", diff)
	}
	if err := q.CheckICRC(); err != nil {
		t.Error(err)
	}
	var m MAC
	if err := m.UnmarshalText([]byte("52:54:00:ab:cd:ef")); err != nil || m != f.SrcMAC {
		t.Errorf("MAC UnmarshalText: %v %v", m, err)
	}
	if err := m.UnmarshalText([]byte("52:54:00:ab:cd")); err == nil {
		t.Error("MAC UnmarshalText accepted 5 bytes")
	}
}

func FuzzDecode(f *testing.F) {
	for _, v6 := range []bool{false, true} {
		b, err := testFrame(v6).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(mustHex(f, cx4CNP))
	f.Fuzz(func(t *testing.T, frame []byte) {
		p, err := Decode(frame)
		if err != nil {
			return
		}
		_ = p.CheckICRC()
		_, _ = p.MAD()
		_, _ = p.IPv4Checksum()
		_ = p.VLANTags()
		got := p.Frame()
		if len(got.Payload) > len(frame) {
			t.Fatalf("payload longer than the frame")
		}
		// A decoded frame whose ICRC checks re-encodes to a frame that
		// decodes to the same struct.
		if p.CheckICRC() != nil || len(p.VLANTags()) > 1 || p.SrcIP().Is4In6() || p.DstIP().Is4In6() {
			return // mapped IPv6 addresses would be re-encoded as IPv4
		}
		again, err := got.Marshal()
		if err != nil {
			t.Fatalf("a decoded frame does not encode: %v", err)
		}
		back, err := Parse(again)
		if err != nil {
			t.Fatalf("re-encoded frame does not parse: %v", err)
		}
		if diff := cmp.Diff(got, back, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
			t.Fatalf("re-encode round trip differs:\n%s", diff)
		}
	})
}
