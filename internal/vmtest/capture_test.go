package vmtest

import (
	"os"
	"path/filepath"
	"testing"
)

func goldenCapture(t *testing.T, name string) []CMPacket {
	t.Helper()
	pkts, err := ReadCMCapture(filepath.Join("..", "..", "mad", "testdata", "captures", name))
	if err != nil {
		t.Fatal(err)
	}
	return pkts
}

func names(pkts []CMPacket) []string {
	var n []string
	for _, p := range pkts {
		n = append(n, p.AttrName)
	}
	return n
}

// The golden captures (real kernel traffic, see their README) decode to the
// messages and ECE values the README states.
func TestGoldenCaptures(t *testing.T) {
	type ece struct{ vendor, options uint32 }
	cases := []struct {
		file  string
		msgs  []string
		ece   map[string]ece
		rej35 bool
	}{
		{"rping-cm.pcap", []string{"REQ", "REP", "RTU", "DREQ", "DREP"}, map[string]ece{"REQ": {0, 0}, "REP": {0, 0}}, false},
		{"ece-req-rep.pcap", []string{"REQ", "REP", "RTU", "DREQ", "DREP"}, map[string]ece{"REQ": {0x15b3, 0x30000001}, "REP": {0x15b3, 0x30000003}}, false},
		{"ece-rej35.pcap", []string{"REQ", "REJ"}, map[string]ece{"REQ": {0x15b3, 0x30000001}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			pkts := goldenCapture(t, tc.file)
			got := names(pkts)
			if len(got) != len(tc.msgs) {
				t.Fatalf("messages %v, want %v", got, tc.msgs)
			}
			for i, p := range pkts {
				if p.AttrName != tc.msgs[i] || p.DestQP != 1 || p.Class != 0x07 || len(p.MAD) != 256 {
					t.Errorf("packet %d: %s QP %d class %#x len %d, want %s to QP1 class 7", i, p.AttrName, p.DestQP, p.Class, len(p.MAD), tc.msgs[i])
				}
				if w, ok := tc.ece[p.AttrName]; ok {
					v, _ := p.ECEVendorID()
					if v != w.vendor || p.AttrMod != w.options {
						t.Errorf("%s: ECE %#x/%#x, want %#x/%#x", p.AttrName, v, p.AttrMod, w.vendor, w.options)
					}
				}
				if p.AttrName == "REJ" && tc.rej35 && p.RejectReason() != 35 {
					t.Errorf("REJ reason %d, want 35", p.RejectReason())
				}
			}
			// The active side is guest a: REQ goes a -> b.
			if pkts[0].SrcIP != [4]byte{192, 0, 2, 1} || pkts[0].DstIP != [4]byte{192, 0, 2, 2} {
				t.Errorf("REQ %v -> %v, want 192.0.2.1 -> 192.0.2.2", pkts[0].SrcIP, pkts[0].DstIP)
			}
		})
	}
}

// Truncated and corrupted captures give errors or fewer packets, never a panic.
func TestCaptureParserBadInput(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "mad", "testdata", "captures", "ece-req-rep.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(b); n++ {
		pkts, err := parseCMCapture(b[:n])
		if err == nil && len(pkts) > 5 {
			t.Fatalf("truncated at %d: %d packets", n, len(pkts))
		}
	}
	for i := 24; i < len(b); i += 7 {
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		_, _ = parseCMCapture(c)
	}
	if _, err := parseCMCapture([]byte("not a pcap file at all, really")); err == nil {
		t.Error("garbage accepted")
	}
}
