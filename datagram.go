package rdmacm

import (
	"net/netip"

	"github.com/go-rdma/rdmacm/rdma"
)

// GRHSize is the 40 bytes a UD receive buffer holds before the message:
// the Global Route Header (on RoCE v2 over IPv4, its last 20 bytes are the
// IPv4 header). DatagramEndpoint handles it: Recv returns the message
// alone and the sender as a *Peer.
const GRHSize = 40

// DatagramOptions configure DialDatagram and ListenDatagram. A nil
// *DatagramOptions and every zero field mean the default.
type DatagramOptions struct {
	// Backend is the CM: "" (rdma.BackendAuto), rdma.BackendKernel or
	// rdma.BackendUser.
	Backend rdma.Backend
	// Source is the local address DialDatagram sends from (udaddy's -b);
	// the zero Addr lets the route choose.
	Source netip.Addr
	// MaxSendWR and MaxRecvWR size the work queues (0: DefaultMaxWR).
	// MaxRecvWR receives are kept posted: the datagrams that can arrive
	// between two Recv calls (UD drops a message with no receive posted).
	MaxSendWR, MaxRecvWR int
	// MaxMessage is the largest message, in bytes (0: the path MTU). A
	// UD message is one packet: more than the path MTU is refused.
	MaxMessage int
	// PrivateData goes in the SIDR request (DialDatagram, at most 180
	// bytes) or the SIDR reply (ListenDatagram, at most 136 bytes).
	PrivateData []byte
	// OnRequest, when set, sees each SIDR request a ListenDatagram
	// endpoint receives before it is answered; an error rejects the
	// request (SIDR status REJECT).
	OnRequest func(DatagramRequest) error
}

// DatagramRequest is a peer's SIDR request (DatagramOptions.OnRequest).
type DatagramRequest struct {
	// From is the peer's address, To the one it asked for.
	From, To netip.AddrPort
	// PrivateData is the request's, after the rdma_cm's IP header,
	// zero-padded to the whole field.
	PrivateData []byte
}

// Datagram describes one received message (DatagramEndpoint.Recv).
type Datagram struct {
	// N is the message's length; Recv copied min(N, len(b)) bytes.
	N int
	// From is the sender: Send to it to reply.
	From *Peer
	// Imm is the immediate data in host order, valid when HasImm.
	Imm    uint32
	HasImm bool
}
