package malformed

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestUDPPayloadICRC rebuilds the IPv4 and UDP headers a Linux sender
// writes for the payload (DF, ID 0, TTL 64, UDP checksum set) and checks
// that roce decodes it with a valid ICRC, GSI addressing and the payload.
func TestUDPPayloadICRC(t *testing.T) {
	src := netip.MustParseAddrPort("192.0.2.2:40123")
	dst := netip.MustParseAddrPort("192.0.2.1:4791")
	for _, c := range append(Cases(1, 11), Oversized()) {
		p, err := UDPPayload(c.Payload, src, dst, 7)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		ip := []byte{0x45, 0x00, 0, 0, 0, 0, 0x40, 0x00, 64, 17, 0, 0, 192, 0, 2, 2, 192, 0, 2, 1}
		n := 20 + 8 + len(p)
		ip[2], ip[3] = byte(n>>8), byte(n)
		udp := []byte{byte(src.Port() >> 8), byte(src.Port()), 0x12, 0xb7, byte((8 + len(p)) >> 8), byte(8 + len(p)), 0xab, 0xcd}
		pkt, err := roce.DecodeIP(append(append(ip, udp...), p...))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if err := pkt.CheckICRC(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		d, _ := pkt.DETH()
		if pkt.BTH().DestQP() != 1 || pkt.BTH().PKey() != 0xffff || d.QKey() != 0x80010000 || d.SrcQP() != 1 || pkt.BTH().Opcode() != roce.OpcodeUDSendOnly {
			t.Errorf("%s: BTH/DETH %x", c.Name, p[:20])
		}
		if !bytes.Equal(pkt.Payload(), c.Payload) {
			t.Errorf("%s: payload changed", c.Name)
		}
	}
}

// TestCasesAreMalformedOrUnexpected: the full-size cases that parse are
// the ones meant to (unknown IDs, unknown service, LAP); the others fail
// mad.Parse.
func TestCasesAreMalformedOrUnexpected(t *testing.T) {
	parses := map[string]bool{"req-unknown-service": true, "rtu-unknown-id": true, "rep-unknown-id": true, "rej-unknown-id": true,
		"mra-unknown-id": true, "dreq-unknown-id": true, "drep-unknown-id": true, "dreq-reserved-bits": true,
		"sidr-req-unknown-service": true, "lap": true, "req-impossible-fields": true}
	for _, c := range Cases(1, 0) {
		_, err := mad.Parse(c.Payload)
		if (err == nil) != parses[c.Name] {
			t.Errorf("%s: Parse error %v", c.Name, err)
		}
	}
}

// TestCasesDistinct: no case equals another once zero-padded to 256
// bytes (the receiver tells them apart that way).
func TestCasesDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, c := range Cases(1, 44) {
		p := make([]byte, mad.MADSize)
		copy(p, c.Payload)
		if o, ok := seen[string(p)]; ok {
			t.Errorf("%s and %s are the same MAD once padded", c.Name, o)
		}
		seen[string(p)] = c.Name
	}
}

// TestFloodREQs: every REQ of a flood parses, carries the rdma_cm header
// for the listener, and draws a new communication ID.
func TestFloodREQs(t *testing.T) {
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	f, err := NewFlood(src, dst, 7471, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	b := make([]byte, mad.MADSize)
	for range 1000 {
		if err := f.Next(b); err != nil {
			t.Fatal(err)
		}
		v, err := mad.ParseREQ(b)
		if err != nil {
			t.Fatal(err)
		}
		h, err := mad.ParseIPHeader(v.PrivateData())
		if err != nil || h.Dst() != dst || h.Src() != src || v.ServiceID() != mad.ServiceID(rdma.PortSpaceTCP, 7471) {
			t.Fatalf("REQ %s: header %v", mad.Describe(b), err)
		}
		seen[v.LocalCommID()] = true
	}
	if len(seen) < 990 {
		t.Fatalf("%d distinct communication IDs in 1000 REQs", len(seen))
	}
	if _, err := NewFlood(netip.MustParseAddr("fd00::1"), dst, 1, 1); err == nil {
		t.Fatal("an IPv6 flood was built")
	}
}
