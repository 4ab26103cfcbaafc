package main

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// Test addresses: the active side A and the passive side B.
var (
	ipA  = netip.MustParseAddr("192.0.2.1")
	ipB  = netip.MustParseAddr("192.0.2.2")
	macA = roce.MAC{0x52, 0x54, 0x00, 0x00, 0x00, 0x01}
	macB = roce.MAC{0x52, 0x54, 0x00, 0x00, 0x00, 0x02}

	captureStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
)

const (
	commIDA = 0x11223344
	commIDB = 0x55667788
	reqTID  = 0x0000000111223344
	dreqTID = 0x0000000211223344
	qpnA    = 0x000011
	qpnB    = 0x000012
)

// testMessage is one CM message of the test capture and its direction.
type testMessage struct {
	msg     mad.Message
	fromA   bool
	comment string
}

func mustSet(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// connectionMessages returns an rdma_cm-like exchange with ECE, a REJ with
// reason 35, a disconnect, and one of each remaining CM message.
func connectionMessages(t testing.TB) []testMessage {
	req := &mad.REQ{
		Header:                  mad.Header{TransactionID: reqTID},
		LocalCommID:             commIDA,
		ServiceID:               mad.ServiceID(rdma.PortSpaceTCP, 7174),
		LocalCAGUID:             0x525400fffe000001,
		LocalQPN:                qpnA,
		ResponderResources:      1,
		InitiatorDepth:          2,
		RemoteCMResponseTimeout: 20,
		TransportServiceType:    mad.TransportRC,
		EndToEndFlowControl:     true,
		StartingPSN:             0x123456,
		LocalCMResponseTimeout:  20,
		RetryCount:              7,
		PartitionKey:            0xFFFF,
		PathMTU:                 rdma.MTU1024,
		RNRRetryCount:           6,
		MaxCMRetries:            15,
		Primary: mad.Path{
			LocalLID:        0xFFFF,
			RemoteLID:       0xFFFF,
			LocalGID:        rdma.GIDFromAddr(ipA),
			RemoteGID:       rdma.GIDFromAddr(ipB),
			FlowLabel:       0x12345,
			PacketRate:      0x10,
			TrafficClass:    0x60,
			HopLimit:        64,
			SL:              3,
			LocalACKTimeout: 17,
		},
	}
	req.SetECE(ece.ECE{VendorID: 0x15b3, Options: 0x30000001})
	hdr := mad.IPHeader{IPVersion: 4, SrcPort: 40000, Src: ipA, Dst: ipB}
	mustSet(t, hdr.MarshalWithData(req.PrivateData[:], []byte("hello")))

	rep := &mad.REP{
		Header:             mad.Header{TransactionID: reqTID},
		LocalCommID:        commIDB,
		RemoteCommID:       commIDA,
		LocalQPN:           qpnB,
		StartingPSN:        0x654321,
		ResponderResources: 2,
		InitiatorDepth:     1,
		TargetACKDelay:     15,
		FailoverAccepted:   mad.FailoverNotSupported,
		RNRRetryCount:      7,
		LocalCAGUID:        0x525400fffe000002,
	}
	rep.SetECE(ece.ECE{VendorID: 0x15b3, Options: 0x30000003})
	mustSet(t, rep.SetPrivateData([]byte{1, 2, 3}))

	rtu := &mad.RTU{Header: mad.Header{TransactionID: reqTID}, LocalCommID: commIDA, RemoteCommID: commIDB}

	rej := &mad.REJ{
		Header:          mad.Header{TransactionID: reqTID + 1},
		LocalCommID:     commIDB + 1,
		RemoteCommID:    commIDA + 1,
		MessageRejected: mad.RejectedREQ,
		Reason:          mad.RejectVendorOptionNotSupported,
	}
	mustSet(t, rej.SetPrivateData([]byte("ece mismatch")))

	dreq := &mad.DREQ{Header: mad.Header{TransactionID: dreqTID}, LocalCommID: commIDA, RemoteCommID: commIDB, RemoteQPNEECN: qpnB}
	drep := &mad.DREP{Header: mad.Header{TransactionID: dreqTID}, LocalCommID: commIDB, RemoteCommID: commIDA}

	mra := &mad.MRA{Header: mad.Header{TransactionID: reqTID}, LocalCommID: commIDB, RemoteCommID: commIDA, MessageMRAed: mad.MRAedREQ, ServiceTimeout: 24}
	timeoutRej := &mad.REJ{Header: mad.Header{TransactionID: reqTID + 2}, LocalCommID: commIDA + 2, RemoteCommID: commIDB + 2, MessageRejected: mad.RejectedREP, Reason: mad.RejectTimeout}
	mustSet(t, timeoutRej.SetARI([]byte{0x52, 0x54, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x01}))

	sidrReq := &mad.SIDRREQ{Header: mad.Header{TransactionID: 0x0000000300000009}, RequestID: 9, PartitionKey: 0xFFFF, ServiceID: mad.ServiceID(rdma.PortSpaceUDP, 7471)}
	mustSet(t, (&mad.IPHeader{IPVersion: 4, SrcPort: 50000, Src: ipA, Dst: ipB}).MarshalWithData(sidrReq.PrivateData[:], nil))
	sidrRep := &mad.SIDRREP{Header: mad.Header{TransactionID: 0x0000000300000009}, RequestID: 9, Status: mad.SIDRSuccess, QPN: 0x000033, ServiceID: mad.ServiceID(rdma.PortSpaceUDP, 7471), QKey: 0x01234567}
	sidrRep.SetECE(ece.ECE{VendorID: 0x15b3, Options: 0x10000000})

	// An AF_IB REQ: a service ID outside the rdma_cm port spaces, no IP
	// header, no ECE.
	afib := &mad.REQ{
		Header: mad.Header{TransactionID: 0x0000000400000005}, LocalCommID: 5, ServiceID: 0x1000000000000abc,
		LocalQPN: 0x44, StartingPSN: 1, PartitionKey: 0xFFFF, PathMTU: rdma.MTU4096, MaxCMRetries: 15,
		Primary: mad.Path{LocalGID: rdma.GIDFromAddr(ipA), RemoteGID: rdma.GIDFromAddr(ipB), HopLimit: 64},
	}
	mustSet(t, afib.SetPrivateData([]byte{0x01, 0, 0, 0, 0, 0, 0, 9}))

	return []testMessage{
		{req, true, "REQ with ECE and rdma_cm IP header"},
		{mra, false, "MRA"},
		{rep, false, "REP with ECE"},
		{rtu, true, "RTU"},
		{dreq, true, "DREQ"},
		{drep, false, "DREP"},
		{rej, false, "REJ reason 35"},
		{timeoutRej, true, "REJ timeout with ARI"},
		{sidrReq, true, "SIDR_REQ"},
		{sidrRep, false, "SIDR_REP with ECE"},
		{afib, true, "AF_IB REQ"},
	}
}

// gsiFrame wraps a MAD as a RoCEv2 GSI packet between A and B.
func gsiFrame(t testing.TB, raw []byte, fromA bool, n int) []byte {
	f := roce.GSIFrame(raw)
	f.SrcMAC, f.DstMAC, f.SrcIP, f.DstIP = macA, macB, ipA, ipB
	if !fromA {
		f.SrcMAC, f.DstMAC, f.SrcIP, f.DstIP = macB, macA, ipB, ipA
	}
	f.SrcPort = 0xC000 | uint16(n)
	f.IPv4ID = uint16(n)
	f.PSN = uint32(n)
	b, err := f.Marshal()
	mustSet(t, err)
	return b
}

// capturedFrame is one frame of the test capture.
type capturedFrame struct {
	data    []byte
	cm      bool // a CM MAD cmdump prints
	bad     bool // malformed: reported on stderr
	comment string
}

// testFrames returns the CM exchange interleaved with frames cmdump must
// skip (ARP, other UDP, RoCE data, an SA MAD) or report (bad ICRC,
// truncated, an unparsable CM MAD).
func testFrames(t testing.TB) []capturedFrame {
	var frames []capturedFrame
	msgs := connectionMessages(t)
	for i, m := range msgs {
		raw := make([]byte, mad.MADSize)
		_, err := m.msg.MarshalTo(raw)
		mustSet(t, err)
		frames = append(frames, capturedFrame{data: gsiFrame(t, raw, m.fromA, i+1), cm: true, comment: m.comment})
		switch i {
		case 0:
			arp := append(append(append([]byte(nil), macB[:]...), macA[:]...), 0x08, 0x06)
			frames = append(frames, capturedFrame{data: append(arp, make([]byte, 28)...), comment: "ARP"})
		case 3:
			data := roce.GSIFrame(bytes.Repeat([]byte{0xEE}, 64))
			data.Opcode, data.QKey, data.SrcQP = 0x04, 0, 0 // RC SEND only
			data.DestQP, data.SrcMAC, data.DstMAC, data.SrcIP, data.DstIP = qpnB, macA, macB, ipA, ipB
			b, err := data.Marshal()
			mustSet(t, err)
			frames = append(frames, capturedFrame{data: b, comment: "RoCE data packet"})
		case 4:
			sa := make([]byte, mad.MADSize)
			sa[0], sa[1], sa[2], sa[3] = 1, 0x03, 2, 0x01 // SA Get
			frames = append(frames, capturedFrame{data: gsiFrame(t, sa, true, 99), comment: "SA MAD"})
			udp := gsiFrame(t, raw, true, 98)
			udp[36], udp[37] = 0x00, 0x35 // to port 53
			frames = append(frames, capturedFrame{data: udp, comment: "DNS-port UDP"})
		case 5:
			bad := gsiFrame(t, raw, false, 97)
			bad[len(bad)-1] ^= 0xFF
			frames = append(frames, capturedFrame{data: bad, bad: true, comment: "bad ICRC"})
			frames = append(frames, capturedFrame{data: bad[:100], bad: true, comment: "truncated"})
			wrong := append([]byte(nil), raw...)
			wrong[2] = 1 // CM class version 1
			frames = append(frames, capturedFrame{data: gsiFrame(t, wrong, false, 96), bad: true, comment: "CM class version 1"})
		}
	}
	return frames
}

// buildCapture writes the frames as a pcap file, one millisecond apart.
func buildCapture(t testing.TB, frames []capturedFrame) []byte {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkTypeEthernet)
	mustSet(t, err)
	for i, f := range frames {
		mustSet(t, w.WritePacket(captureStart.Add(time.Duration(i)*time.Millisecond+time.Duration(i)*time.Microsecond), f.data))
	}
	return buf.Bytes()
}
