// Package malformed builds malformed CM MADs framed as RoCEv2 UD SEND
// packets to the GSI (QP 1) with valid ICRCs, and sends them from a plain
// UDP socket to a soft-RoCE (rxe) peer's port 4791. rxe accepts such a
// datagram as a RoCEv2 packet; what reaches the CM agent is then up to
// ib_mad (bad base versions, classes and methods never do).
package malformed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// Case is one malformed (or merely unexpected) MAD.
type Case struct {
	Name string
	// Payload is what follows the DETH: usually 256 bytes, fewer or more
	// for the length cases.
	Payload []byte
	// KernelDrops: ib_mad drops it before any agent sees it (the class
	// version, base version or method matches no registration).
	KernelDrops bool
}

// UnusedPort is the TCP port space port the REQs and SIDR_REQs of Cases
// name: nothing should listen there.
const UnusedPort = 7999

// Cases returns the malformed MADs: truncated and oversized payloads, bad
// base and class versions, a foreign class, request and response methods
// the CM does not register, unknown attributes, valid messages naming
// unknown communication IDs, impossible field values, reserved bits set,
// LAP (refused on RoCE), and randomBodies MADs with a valid CM header and
// a random body per message type, from seed.
func Cases(seed uint64, randomBodies int) []Case {
	build := func(m mad.Message) []byte {
		b := make([]byte, mad.MADSize)
		if _, err := m.MarshalTo(b); err != nil {
			panic(err) // the messages below are valid
		}
		return b
	}
	h := func(tid uint64) mad.Header { return mad.Header{TransactionID: tid} }
	req := func() []byte {
		r := &mad.REQ{Header: h(0x1000), LocalCommID: 0x0badf00d, ServiceID: mad.ServiceID(rdma.PortSpaceTCP, UnusedPort),
			LocalCAGUID: 0x525400fffe0000ff, LocalQPN: 0x77, StartingPSN: 1, LocalCMResponseTimeout: 20,
			RemoteCMResponseTimeout: 20, MaxCMRetries: 15, PathMTU: rdma.MTU1024}
		r.PrivateData[len(r.PrivateData)-1] = 0x5a // a nonzero tail: a truncated copy differs once zero-padded
		return build(r)
	}
	dreq := func() []byte {
		return build(&mad.DREQ{Header: h(0x2000), LocalCommID: 0x11111111, RemoteCommID: 0x22222222, RemoteQPNEECN: 0x77})
	}
	with := func(b []byte, f func(b []byte)) []byte { f(b); return b }
	cs := []Case{
		{Name: "truncated-100", Payload: req()[:100]},
		{Name: "truncated-24", Payload: dreq()[:24]},
		{Name: "truncated-4", Payload: dreq()[:4]},
		{Name: "base-version-2", Payload: with(dreq(), func(b []byte) { b[0] = 2 }), KernelDrops: true},
		{Name: "class-version-1", Payload: with(dreq(), func(b []byte) { b[2] = 1 }), KernelDrops: true},
		{Name: "class-version-3", Payload: with(dreq(), func(b []byte) { b[2] = 3 }), KernelDrops: true},
		{Name: "class-0x08", Payload: with(dreq(), func(b []byte) { b[1] = 0x08 }), KernelDrops: true},
		{Name: "method-get", Payload: with(dreq(), func(b []byte) { b[3] = byte(mad.MethodGet) }), KernelDrops: true},
		{Name: "method-getresp", Payload: with(dreq(), func(b []byte) { b[3] = byte(mad.MethodGetResp) }), KernelDrops: true},
		{Name: "attribute-0x00ff", Payload: with(dreq(), func(b []byte) { binary.BigEndian.PutUint16(b[16:], 0x00ff) })},
		{Name: "attribute-0", Payload: with(dreq(), func(b []byte) { binary.BigEndian.PutUint16(b[16:], 0) })},
		{Name: "classportinfo-send", Payload: with(dreq(), func(b []byte) { binary.BigEndian.PutUint16(b[16:], uint16(mad.AttrClassPortInfo)) })},
		{Name: "req-transport-3", Payload: with(req(), func(b []byte) { b[24+43] |= 0x06 })},
		{Name: "mra-mraed-3", Payload: with(build(&mad.MRA{Header: h(0x3000), LocalCommID: 1, RemoteCommID: 2}), func(b []byte) { b[32] = 0xc0 })},
		{Name: "req-unknown-service", Payload: req()},
		{Name: "req-impossible-fields", Payload: with(req(), func(b []byte) {
			b[24+32], b[24+33], b[24+34] = 0, 0, 0 // local QPN 0
			b[24+43] = 0xf9                        // remote CM response timeout 31, TST RC, EE flow control
			b[24+50] = 0xff                        // path MTU 15, RDC exists, RNR retry 7
		})},
		{Name: "rtu-unknown-id", Payload: build(&mad.RTU{Header: h(0x4000), LocalCommID: 0x33333333, RemoteCommID: 0x44444444})},
		{Name: "rep-unknown-id", Payload: build(&mad.REP{Header: h(0x5000), LocalCommID: 0x55555555, RemoteCommID: 0x66666666, LocalQPN: 0x78})},
		{Name: "rej-unknown-id", Payload: build(&mad.REJ{Header: h(0x6000), LocalCommID: 0x77777777, RemoteCommID: 0x88888888, Reason: mad.RejectConsumerDefined})},
		{Name: "mra-unknown-id", Payload: build(&mad.MRA{Header: h(0x7000), LocalCommID: 0x99999999, RemoteCommID: 0xaaaaaaaa, MessageMRAed: mad.MRAedREP})},
		{Name: "dreq-unknown-id", Payload: dreq()},
		{Name: "drep-unknown-id", Payload: build(&mad.DREP{Header: h(0x8000), LocalCommID: 0xbbbbbbbb, RemoteCommID: 0xcccccccc})},
		{Name: "dreq-reserved-bits", Payload: with(dreq(), func(b []byte) { b[4] = 0xff; b[24+11] = 0xff; b[255] = 0xff })},
		{Name: "sidr-req-unknown-service", Payload: build(&mad.SIDRREQ{Header: h(0x9000), RequestID: 0xdddddddd, ServiceID: mad.ServiceID(rdma.PortSpaceUDP, UnusedPort)})},
		{Name: "lap", Payload: build(&mad.LAP{Header: h(0xa000), LocalCommID: 0xeeeeeeee, RemoteCommID: 0xffffffff})},
	}
	r := rand.New(rand.NewPCG(seed, 0xbad))
	attrs := []mad.AttributeID{mad.AttrREQ, mad.AttrMRA, mad.AttrREJ, mad.AttrREP, mad.AttrRTU, mad.AttrDREQ, mad.AttrDREP,
		mad.AttrSIDRREQ, mad.AttrSIDRREP, mad.AttrLAP, mad.AttrAPR}
	for i := range randomBodies {
		b := make([]byte, mad.MADSize)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		b[0], b[1], b[2], b[3] = mad.BaseVersion, mad.ClassCM, mad.CMClassVersion, byte(mad.MethodSend)
		binary.BigEndian.PutUint16(b[4:], 0) // status
		a := attrs[i%len(attrs)]
		binary.BigEndian.PutUint16(b[16:], uint16(a))
		if a == mad.AttrREQ || a == mad.AttrSIDRREQ { // service ID at 32 in both: nobody listens
			binary.BigEndian.PutUint64(b[32:], mad.ServiceID(rdma.PortSpaceTCP, UnusedPort))
		}
		cs = append(cs, Case{Name: fmt.Sprintf("random-%v-%d", a, i), Payload: b})
	}
	return cs
}

// Oversized returns a DREQ for an unknown ID followed by 256 more bytes:
// longer than the GSI's receive buffers. On Linux 6.1 rxe this ends the
// GSI QP's reception (a UD length error completes in error; ib_mad does
// not repost after an error completion), so it is kept out of Cases.
func Oversized() Case {
	b := make([]byte, 2*mad.MADSize)
	if _, err := (&mad.DREQ{Header: mad.Header{TransactionID: 0x2001}, LocalCommID: 0x12121212, RemoteCommID: 0x34343434}).MarshalTo(b); err != nil {
		panic(err)
	}
	return Case{Name: "oversized-512", Payload: b}
}

// UDPPayload returns the UDP payload of a RoCEv2 UD SEND only packet
// carrying payload from the GSI at src to the GSI at dst: BTH (P_Key
// 0xFFFF, QP 1), DETH (Q_Key 0x80010000, source QP 1), payload, pad and
// ICRC. The ICRC covers the IPv4 header the sending kernel will write: no
// options, DF set and ID 0 (Linux's IP ID for DF datagrams of an
// unconnected socket); TTL and TOS are masked out of it.
func UDPPayload(payload []byte, src, dst netip.AddrPort, psn uint32) ([]byte, error) {
	f := roce.GSIFrame(payload)
	f.SrcIP, f.DstIP, f.SrcPort = src.Addr(), dst.Addr(), src.Port()
	f.PSN = psn & 0xffffff
	frame, err := f.Marshal()
	if err != nil {
		return nil, err
	}
	const l4 = 14 + 20 // Ethernet, IPv4 without options
	if len(frame) < l4+8 || binary.BigEndian.Uint16(frame[12:]) != 0x0800 || frame[14] != 0x45 {
		return nil, errors.New("malformed: unexpected frame layout")
	}
	return frame[l4+8:], nil
}

// Sender sends cases from a UDP socket bound to a source address.
type Sender struct {
	conn *net.UDPConn
	src  netip.AddrPort
	psn  uint32
}

// NewSender binds a UDP socket to src (port 0 picks one) with path MTU
// discovery on, so every datagram leaves with DF set and IP ID 0.
func NewSender(src netip.Addr) (*Sender, error) {
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)))
	if err != nil {
		return nil, err
	}
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = setPMTUDiscDo(fd) }); err != nil {
		serr = err
	}
	if serr != nil {
		c.Close()
		return nil, fmt.Errorf("malformed: IP_MTU_DISCOVER: %w", serr)
	}
	return &Sender{conn: c, src: c.LocalAddr().(*net.UDPAddr).AddrPort()}, nil
}

// Close closes the socket.
func (s *Sender) Close() error { return s.conn.Close() }

// Send sends one case to dst's GSI (dst's port is normally roce.UDPPort).
func (s *Sender) Send(dst netip.AddrPort, c Case) error {
	p, err := UDPPayload(c.Payload, netip.AddrPortFrom(s.src.Addr().Unmap(), s.src.Port()), dst, s.psn)
	if err != nil {
		return fmt.Errorf("malformed: %s: %w", c.Name, err)
	}
	s.psn++
	if _, err := s.conn.WriteToUDPAddrPort(p, dst); err != nil {
		return fmt.Errorf("malformed: %s: %w", c.Name, err)
	}
	return nil
}

// SendAll sends every case repeat times, gap apart (the GSI receive queue
// is small), and returns how many datagrams went out.
func (s *Sender) SendAll(dst netip.AddrPort, cases []Case, repeat int, gap time.Duration) (int, error) {
	n := 0
	for range repeat {
		for _, c := range cases {
			if err := s.Send(dst, c); err != nil {
				return n, err
			}
			n++
			time.Sleep(gap)
		}
	}
	return n, nil
}
