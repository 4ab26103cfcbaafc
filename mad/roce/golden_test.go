package roce_test

import (
	"bytes"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// The golden captures are real kernel CM traffic between two soft-RoCE
// guests; mad/testdata/captures/README.md says how they were made and
// what each holds.
var capturesDir = filepath.Join("..", "testdata", "captures")

var (
	guestA = netip.MustParseAddr("192.0.2.1")
	guestB = netip.MustParseAddr("192.0.2.2")
)

// capturedMAD is one CM MAD of a golden capture.
type capturedMAD struct {
	frame  int
	packet roce.Packet
	view   mad.View
	msg    mad.Message
}

func (c capturedMAD) fromA() bool { return c.packet.SrcIP() == guestA }

// readCapture checks every frame of a golden capture at the RoCEv2 and MAD
// level and returns the decoded messages.
func readCapture(t *testing.T, path string) []capturedMAD {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != pcap.LinkTypeEthernet {
		t.Fatalf("link type %d, want Ethernet", r.LinkType())
	}
	var out []capturedMAD
	for n := 1; ; n++ {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		frame := append([]byte(nil), rec.Data...)
		if rec.OrigLen != len(frame) || len(frame) != 322 {
			t.Errorf("frame %d: %d of %d bytes captured, the README promises whole 322-byte frames", n, len(frame), rec.OrigLen)
		}
		p, err := roce.Decode(frame)
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		// Our ICRC over the real frame equals the one rxe put on the wire.
		if got, want := p.ComputeICRC(), p.ICRC(); got != want {
			t.Errorf("frame %d: computed ICRC %#08x, captured %#08x", n, got, want)
		}
		raw, err := p.MAD()
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		if deth, _ := p.DETH(); deth.SrcQP() != roce.GSIQP || p.BTH().PKey() != roce.DefaultPKey {
			t.Errorf("frame %d: source QP %d, P_Key %#x", n, deth.SrcQP(), p.BTH().PKey())
		}
		if src, dst := p.SrcIP(), p.DstIP(); !(src == guestA && dst == guestB || src == guestB && dst == guestA) {
			t.Errorf("frame %d: %v > %v is not between the guests", n, src, dst)
		}
		if _, good := p.IPv4Checksum(); !good {
			t.Errorf("frame %d: IPv4 header checksum wrong", n)
		}
		// The whole frame re-encodes from its decoded struct: our builder
		// writes what the kernel writes (DF, zero UDP checksum, ...).
		fr, err := roce.Parse(frame)
		if err != nil {
			t.Fatalf("frame %d: Parse: %v", n, err)
		}
		again, err := fr.Marshal()
		if err != nil || !bytes.Equal(again, frame) {
			t.Errorf("frame %d: re-encoded frame differs (err %v):\n got %x\nwant %x", n, err, again, frame)
		}

		view, err := mad.Parse(raw)
		if err != nil {
			t.Fatalf("frame %d: mad.Parse: %v", n, err)
		}
		if err := mad.CheckReserved(raw); err != nil {
			t.Errorf("frame %d: the kernel set a reserved bit: %v", n, err)
		}
		msg := view.DecodeMessage()
		enc := make([]byte, mad.MADSize)
		if _, err := msg.MarshalTo(enc); err != nil {
			t.Fatalf("frame %d: re-encoding %s: %v", n, view.AttributeID(), err)
		}
		if !bytes.Equal(enc, raw) {
			t.Errorf("frame %d: %s re-encoded from its struct differs from the capture:\n got %x\nwant %x", n, view.AttributeID(), enc, raw)
		}
		out = append(out, capturedMAD{frame: n, packet: p, view: view, msg: msg})
	}
	return out
}

func TestGoldenCaptures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(capturesDir, "*.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no golden captures in %s: they are committed with the repository", capturesDir)
		}
		t.Skipf("no golden captures in %s", capturesDir)
	}
	checks := map[string]func(*testing.T, []capturedMAD){
		"rping-cm.pcap":    checkRping,
		"ece-req-rep.pcap": checkECEReqRep,
		"ece-rej35.pcap":   checkECERej35,
	}
	seen := map[string]bool{}
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			msgs := readCapture(t, path)
			if len(msgs) == 0 {
				t.Fatal("no CM MADs")
			}
			if check := checks[name]; check != nil {
				seen[name] = true
				check(t, msgs)
			}
		})
	}
	for name := range checks {
		if !seen[name] {
			t.Errorf("%s, described in the captures README, is missing", name)
		}
	}
}

// sequence checks the message order and directions (A is the client).
func sequence(t *testing.T, msgs []capturedMAD, want ...string) {
	t.Helper()
	if len(msgs) != len(want) {
		t.Fatalf("%d CM MADs, want %d (%v)", len(msgs), len(want), want)
	}
	for i, m := range msgs {
		if got := m.view.AttributeID().String(); got != want[i] {
			t.Errorf("MAD %d is %s, want %s", i+1, got, want[i])
		}
	}
}

// connection checks the REQ/REP/RTU/DREQ/DREP of one connection against
// each other and against the README: REQ from A to TCP port `port` with an
// rdma_cm IPv4 header, the ECEs given.
func connection(t *testing.T, msgs []capturedMAD, port uint16, reqECE, repECE ece.ECE) {
	t.Helper()
	req := msgs[0].msg.(*mad.REQ)
	rep := msgs[1].msg.(*mad.REP)
	rtu := msgs[2].msg.(*mad.RTU)
	dreq := msgs[3].msg.(*mad.DREQ)
	drep := msgs[4].msg.(*mad.DREP)
	if !msgs[0].fromA() || msgs[1].fromA() || !msgs[2].fromA() {
		t.Errorf("REQ, REP, RTU directions: %v %v %v (want A, B, A)", msgs[0].fromA(), msgs[1].fromA(), msgs[2].fromA())
	}
	checkREQ(t, req, port, reqECE)
	if got := rep.ECE(); got != repECE {
		t.Errorf("REP ECE %v, want %v", got, repECE)
	}
	if rep.RemoteCommID != req.LocalCommID || rtu.LocalCommID != req.LocalCommID || rtu.RemoteCommID != rep.LocalCommID {
		t.Errorf("comm IDs: REQ %#x, REP %#x/%#x, RTU %#x/%#x", req.LocalCommID, rep.LocalCommID, rep.RemoteCommID, rtu.LocalCommID, rtu.RemoteCommID)
	}
	if rep.Header.TransactionID != req.Header.TransactionID || rtu.Header.TransactionID != req.Header.TransactionID {
		t.Errorf("REP/RTU TIDs %#x/%#x differ from the REQ's %#x", rep.Header.TransactionID, rtu.Header.TransactionID, req.Header.TransactionID)
	}
	// Disconnect: one side's DREQ names the peer's QPN; the DREP answers it.
	peerQPN := rep.LocalQPN
	if !msgs[3].fromA() {
		peerQPN = req.LocalQPN
	}
	if msgs[3].fromA() == msgs[4].fromA() || dreq.RemoteQPNEECN != peerQPN || drep.LocalCommID != dreq.RemoteCommID || drep.RemoteCommID != dreq.LocalCommID || drep.Header.TransactionID != dreq.Header.TransactionID {
		t.Errorf("DREQ %+v / DREP %+v do not pair up", dreq.Header, drep.Header)
	}
}

func checkREQ(t *testing.T, req *mad.REQ, port uint16, want ece.ECE) {
	t.Helper()
	if got := req.ECE(); got != want {
		t.Errorf("REQ ECE %v, want %v", got, want)
	}
	if ps, p, ok := mad.SplitServiceID(req.ServiceID); !ok || ps != rdma.PortSpaceTCP || p != port {
		t.Errorf("REQ service ID %#x, want TCP:%d", req.ServiceID, port)
	}
	v, err := mad.ParseIPHeader(req.PrivateData[:])
	if err != nil {
		t.Fatalf("REQ rdma_cm header: %v", err)
	}
	if v.IPVersion() != 4 || v.Src() != guestA || v.Dst() != guestB {
		t.Errorf("REQ rdma_cm header: IPv%d %v > %v", v.IPVersion(), v.Src(), v.Dst())
	}
	if req.Primary.LocalGID != rdma.GIDFromAddr(guestA) || req.Primary.RemoteGID != rdma.GIDFromAddr(guestB) {
		t.Errorf("REQ GIDs %v > %v", req.Primary.LocalGID, req.Primary.RemoteGID)
	}
	// rdma_cm constants (sheet §2.1, §6.2): response timeouts 20, 15 retries.
	if req.LocalCMResponseTimeout != 20 || req.RemoteCMResponseTimeout != 20 || req.MaxCMRetries != 15 || req.PartitionKey != 0xFFFF {
		t.Errorf("REQ timeouts %d/%d, retries %d, P_Key %#x", req.LocalCMResponseTimeout, req.RemoteCMResponseTimeout, req.MaxCMRetries, req.PartitionKey)
	}
}

func checkRping(t *testing.T, msgs []capturedMAD) {
	sequence(t, msgs, "REQ", "REP", "RTU", "DREQ", "DREP")
	connection(t, msgs, 7174, ece.ECE{}, ece.ECE{})
	for _, m := range msgs[:2] {
		if attrMod := m.view.Header().AttributeModifier(); attrMod != 0 {
			t.Errorf("%s attribute modifier %#x, want 0", m.view.AttributeID(), attrMod)
		}
	}
}

var (
	offerECE  = ece.ECE{VendorID: 0x15b3, Options: 0x30000001}
	answerECE = ece.ECE{VendorID: 0x15b3, Options: 0x30000003}
)

func checkECEReqRep(t *testing.T, msgs []capturedMAD) {
	sequence(t, msgs, "REQ", "REP", "RTU", "DREQ", "DREP")
	connection(t, msgs, 7471, offerECE, answerECE)
	// The raw placement the README states: REQ abs 20..23 and 29..31,
	// REP abs 20..23 and 39/43/47.
	req, rep := msgs[0].view.Bytes(), msgs[1].view.Bytes()
	if !bytes.Equal(req[20:24], []byte{0x30, 0, 0, 0x01}) || !bytes.Equal(req[29:32], []byte{0x00, 0x15, 0xb3}) {
		t.Errorf("REQ ECE bytes % x / % x", req[20:24], req[29:32])
	}
	if !bytes.Equal(rep[20:24], []byte{0x30, 0, 0, 0x03}) || rep[39] != 0x00 || rep[43] != 0x15 || rep[47] != 0xb3 {
		t.Errorf("REP ECE bytes % x / %02x %02x %02x", rep[20:24], rep[39], rep[43], rep[47])
	}
}

func checkECERej35(t *testing.T, msgs []capturedMAD) {
	sequence(t, msgs, "REQ", "REJ")
	checkREQ(t, msgs[0].msg.(*mad.REQ), 7473, offerECE)
	req := msgs[0].msg.(*mad.REQ)
	rej := msgs[1].msg.(*mad.REJ)
	if msgs[1].fromA() || rej.Reason != mad.RejectVendorOptionNotSupported || rej.MessageRejected != mad.RejectedREQ || rej.RemoteCommID != req.LocalCommID {
		t.Errorf("REJ from A %v, reason %d, rejected %v, remote comm ID %#x (REQ %#x)", msgs[1].fromA(), rej.Reason, rej.MessageRejected, rej.RemoteCommID, req.LocalCommID)
	}
	if rej.ARILength != 0 {
		t.Errorf("REJ 35 carries %d bytes of ARI", rej.ARILength)
	}
}
