package mad

import (
	"net/netip"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
)

// Shared test vectors. mlx5 ECE: vendor 0x15b3, options 0x30000001.
var mlx5ECE = ece.ECE{VendorID: 0x15b3, Options: 0x30000001}

var (
	gidA = rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.1"))
	gidB = rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.2"))
)

func sampleREQ() *REQ {
	m := &REQ{
		Header:                  Header{TransactionID: 0x0000_0001_1122_3344},
		LocalCommID:             0x11223344,
		ServiceID:               ServiceID(rdma.PortSpaceTCP, 20000),
		LocalCAGUID:             0x0002_c903_0000_1234,
		LocalQPN:                0x000123,
		ResponderResources:      4,
		InitiatorDepth:          4,
		RemoteCMResponseTimeout: 20,
		TransportServiceType:    TransportRC,
		EndToEndFlowControl:     true,
		StartingPSN:             0xabcdef,
		LocalCMResponseTimeout:  20,
		RetryCount:              7,
		PartitionKey:            0xffff,
		PathMTU:                 rdma.MTU4096,
		RNRRetryCount:           7,
		MaxCMRetries:            15,
		Primary: Path{
			LocalLID: 0xffff, RemoteLID: 0xffff,
			LocalGID: gidA, RemoteGID: gidB,
			FlowLabel: 0x12345, PacketRate: 16, TrafficClass: 0x20, HopLimit: 64,
			SL: 3, LocalACKTimeout: 18,
		},
	}
	m.SetECE(mlx5ECE)
	h := IPHeader{IPVersion: 4, SrcPort: 0xc001,
		Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2")}
	if err := h.MarshalWithData(m.PrivateData[:], []byte("hello")); err != nil {
		panic(err)
	}
	return m
}

func sampleREP() *REP {
	m := &REP{
		Header:             Header{TransactionID: 0x0000_0001_1122_3344},
		LocalCommID:        0x55667788,
		RemoteCommID:       0x11223344,
		LocalQPN:           0x000456,
		StartingPSN:        0x123456,
		ResponderResources: 4,
		InitiatorDepth:     4,
		TargetACKDelay:     15,
		FailoverAccepted:   FailoverNotSupported,
		RNRRetryCount:      7,
		SRQ:                true,
		LocalCAGUID:        0x0002_c903_0000_5678,
	}
	m.SetECE(mlx5ECE)
	if err := m.SetPrivateData([]byte{0xde, 0xad}); err != nil {
		panic(err)
	}
	return m
}

func sampleREJ() *REJ {
	m := &REJ{
		Header:          Header{TransactionID: 0x0000_0001_1122_3344},
		LocalCommID:     0x55667788,
		RemoteCommID:    0x11223344,
		MessageRejected: RejectedREQ,
		Reason:          RejectVendorOptionNotSupported,
	}
	if err := m.SetARI(gidB[:]); err != nil {
		panic(err)
	}
	if err := m.SetPrivateData([]byte("no")); err != nil {
		panic(err)
	}
	return m
}

func sampleSIDRREP() *SIDRREP {
	m := &SIDRREP{
		Header:    Header{TransactionID: 0x0000_0002_0000_0009},
		RequestID: 0x0000_0009,
		Status:    SIDRSuccess,
		QPN:       0x000789,
		ServiceID: ServiceID(rdma.PortSpaceUDP, 7471),
		QKey:      0x01234567,
	}
	m.SetECE(mlx5ECE)
	if err := m.SetInfo([]byte{1, 2, 3}); err != nil {
		panic(err)
	}
	return m
}

// sampleMessages returns one filled message of every attribute.
func sampleMessages() []Message {
	mra := &MRA{LocalCommID: 1, RemoteCommID: 2, MessageMRAed: MRAedREP, ServiceTimeout: 24}
	rtu := &RTU{LocalCommID: 3, RemoteCommID: 4}
	rtu.PrivateData[223] = 0x99
	dreq := &DREQ{LocalCommID: 5, RemoteCommID: 6, RemoteQPNEECN: 0xabcdef}
	drep := &DREP{LocalCommID: 7, RemoteCommID: 8}
	sidrReq := &SIDRREQ{RequestID: 9, PartitionKey: 0xffff, ServiceID: ServiceID(rdma.PortSpaceUDP, 7471)}
	lap := &LAP{LocalCommID: 10, RemoteCommID: 11, RemoteQPNEECN: 0x123, RemoteCMResponseTimeout: 20,
		Alternate: Path{LocalLID: 1, RemoteLID: 2, LocalGID: gidA, RemoteGID: gidB, FlowLabel: 0xfffff,
			PacketRate: 0x3f, TrafficClass: 0xff, HopLimit: 0xff, SL: 15, SubnetLocal: true, LocalACKTimeout: 31}}
	apr := &APR{LocalCommID: 12, RemoteCommID: 13, Status: APRInvalidGID}
	if err := apr.SetInfo(gidA[:]); err != nil {
		panic(err)
	}
	cpi := &ClassPortInfo{Method: MethodGetResp, BaseVersion: 1, ClassVersion: 2, CapabilityMask: 0x0001,
		CapabilityMask2: 1<<27 - 1, RespTimeValue: 18, RedirectGID: gidA, RedirectTC: 0xff, RedirectSL: 15,
		RedirectFL: 0xfffff, RedirectLID: 0x1234, RedirectPKey: 0xffff, RedirectQP: 0xffffff,
		RedirectQKey: 0x80010000, TrapGID: gidB, TrapTC: 1, TrapSL: 2, TrapFL: 3, TrapLID: 4, TrapPKey: 5,
		TrapHL: 6, TrapQP: 7, TrapQKey: 8}
	return []Message{cpi, sampleREQ(), mra, sampleREJ(), sampleREP(), rtu, dreq, drep, sidrReq, sampleSIDRREP(), lap, apr}
}

func mustMarshal(m Message) []byte {
	b := make([]byte, MADSize)
	if _, err := m.MarshalTo(b); err != nil {
		panic(err)
	}
	return b
}
