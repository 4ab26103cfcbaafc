package roce

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"net/netip"
	"strings"
	"testing"
)

// cx4CNP is a RoCEv2 CNP (BTH opcode 0x81) captured on a Mellanox
// ConnectX-4 Lx, as published in scapy's RoCE regression tests
// (secdev/scapy test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4
// Lx"), whose hardware-computed ICRC is the last four bytes 82 fd 00 2a.
// Hex transcribed from that hexdump.
const cx4CNP = "e41d2dab2bc27cfe90643b32080045c2" +
	"003c718c400040119161" + "0a001101" + "0a001201" +
	"000012b700280000" + // UDP: source port 0, checksum 0
	"8100ffff4000011800000000" + // BTH: CNP, P_Key 0xffff, BECN, QP 0x118
	"00000000000000000000000000000000" +
	"82fd002a"

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestICRCOfRealConnectX4Frame(t *testing.T) {
	frame := mustHex(t, cx4CNP)
	p, err := Decode(frame)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got, want := p.ICRC(), uint32(0x2a00fd82); got != want {
		t.Errorf("ICRC() = %#08x, want %#08x (wire bytes 82 fd 00 2a, least significant first)", got, want)
	}
	if got := p.ComputeICRC(); got != p.ICRC() {
		t.Errorf("ComputeICRC() = %#08x, the NIC sent %#08x", got, p.ICRC())
	}
	if err := p.CheckICRC(); err != nil {
		t.Errorf("CheckICRC: %v", err)
	}
	bth := p.BTH()
	if bth.Opcode() != 0x81 || bth.DestQP() != 0x118 || !bth.BECN() || bth.FECN() || bth.PKey() != 0xFFFF {
		t.Errorf("BTH opcode %#x QP %#x BECN %v FECN %v P_Key %#x", bth.Opcode(), bth.DestQP(), bth.BECN(), bth.FECN(), bth.PKey())
	}
	if p.TrafficClass() != 0xC2 || p.HopLimit() != 64 || p.SrcIP() != netip.MustParseAddr("10.0.17.1") {
		t.Errorf("IP TOS %#x TTL %d src %v", p.TrafficClass(), p.HopLimit(), p.SrcIP())
	}
	if _, ok := p.IPv4Checksum(); !ok {
		t.Error("IPv4 header checksum of the captured frame reported wrong")
	}
	if _, err := p.MAD(); !errors.Is(err, ErrNotGSI) {
		t.Errorf("MAD() of a CNP: err = %v, want ErrNotGSI", err)
	}

	// Parse verifies the ICRC; re-encoding the parsed Frame gives the frame back.
	f, err := Parse(frame)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	again, err := f.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if hex.EncodeToString(again) != hex.EncodeToString(frame) {
		t.Errorf("re-encoded frame differs:\n got %x\nwant %x", again, frame)
	}
}

// referenceICRC is the A17.8 recipe written out plainly, for comparison.
func referenceICRC(ipPacket []byte, ipHdrLen int, ipv6 bool) uint32 {
	m := append([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, ipPacket...)
	ip := m[8:]
	if ipv6 {
		ip[0] |= 0x0F
		ip[1], ip[2], ip[3] = 0xFF, 0xFF, 0xFF
		ip[7] = 0xFF
	} else {
		ip[1], ip[8], ip[10], ip[11] = 0xFF, 0xFF, 0xFF, 0xFF
	}
	ip[ipHdrLen+6], ip[ipHdrLen+7] = 0xFF, 0xFF
	ip[ipHdrLen+8+4] = 0xFF
	return crc32.ChecksumIEEE(m[:len(m)-ICRCLen])
}

func TestICRCMasksVariantFields(t *testing.T) {
	for _, tc := range []struct {
		name      string
		frame     Frame
		variant   []int // offsets from the IP header that routers may change
		invariant []int // offsets that must change the ICRC
	}{
		{"IPv4", testFrame(false), []int{1, 8, 10, 11, 20 + 6, 20 + 7, 28 + 4}, []int{4, 12, 19, 20, 28, 29, 33, 36, 40, 60}},
		{"IPv6", testFrame(true), []int{0, 1, 2, 3, 7, 40 + 6, 40 + 7, 48 + 4}, []int{8, 39, 40, 48, 49, 53, 56, 60, 80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame, err := tc.frame.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			p, err := Decode(frame)
			if err != nil {
				t.Fatal(err)
			}
			ipHdr := len(p.IPHeader())
			ipStart := ethHeaderLen
			want := p.ICRC()
			if ref := referenceICRC(frame[ipStart:], ipHdr, tc.frame.SrcIP.Is6()); ref != want {
				t.Fatalf("built ICRC %#08x, reference recipe %#08x", want, ref)
			}
			for _, off := range tc.variant {
				m := append([]byte(nil), frame...)
				m[ipStart+off] ^= 0x0F // the low nibble: IPv6 byte 0 keeps its version
				q, err := Decode(m)
				if err != nil {
					t.Fatalf("offset %d: %v", off, err)
				}
				if got := q.ComputeICRC(); got != want {
					t.Errorf("changing variant byte at IP+%d changed the ICRC to %#08x", off, got)
				}
			}
			for _, off := range tc.invariant {
				m := append([]byte(nil), frame...)
				m[ipStart+off] ^= 0x01
				q, err := Decode(m)
				if err != nil {
					t.Fatalf("offset %d: %v", off, err)
				}
				if got := q.ComputeICRC(); got == want {
					t.Errorf("changing invariant byte at IP+%d left the ICRC at %#08x", off, got)
				}
				if err := q.CheckICRC(); !errors.Is(err, ErrBadICRC) {
					t.Errorf("IP+%d flipped: CheckICRC = %v, want ErrBadICRC", off, err)
				}
			}
		})
	}
}

func BenchmarkICRC(b *testing.B) {
	f := testFrame(false)
	frame, err := f.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	p, err := Decode(frame)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame) - ethHeaderLen - ICRCLen))
	var sink uint32
	for b.Loop() {
		sink += p.ComputeICRC()
	}
	if sink == 1 {
		b.Log(binary.LittleEndian.AppendUint32(nil, sink))
	}
}
