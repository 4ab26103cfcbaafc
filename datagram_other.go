//go:build !linux

package rdmacm

import (
	"context"
	"net/netip"

	"github.com/go-rdma/rdmacm/qp"
)

// DatagramEndpoint is a UD queue pair with its CM ID (Linux only).
type DatagramEndpoint struct{}

// Peer is a resolved UD destination (Linux only).
type Peer struct {
	QPN, QKey uint32
	Addr      netip.Addr
}

// DialDatagram returns ErrNotSupported off Linux.
func DialDatagram(ctx context.Context, address string, opts *DatagramOptions) (*DatagramEndpoint, error) {
	return nil, errNotSupported
}

// ListenDatagram returns ErrNotSupported off Linux.
func ListenDatagram(address string, opts *DatagramOptions) (*DatagramEndpoint, error) {
	return nil, errNotSupported
}

func (p *Peer) AH() qp.AH                              { return qp.AH{} }
func (p *Peer) String() string                         { return "" }
func (ep *DatagramEndpoint) Peer() *Peer               { return nil }
func (ep *DatagramEndpoint) MaxMessage() int           { return 0 }
func (ep *DatagramEndpoint) QPNum() uint32             { return 0 }
func (ep *DatagramEndpoint) QKey() uint32              { return 0 }
func (ep *DatagramEndpoint) LocalAddr() netip.AddrPort { return netip.AddrPort{} }
func (ep *DatagramEndpoint) Send(ctx context.Context, to *Peer, p []byte) error {
	return errNotSupported
}
func (ep *DatagramEndpoint) SendImm(ctx context.Context, to *Peer, p []byte, imm uint32) error {
	return errNotSupported
}
func (ep *DatagramEndpoint) Flush(ctx context.Context) error { return errNotSupported }
func (ep *DatagramEndpoint) Recv(ctx context.Context, b []byte) (Datagram, error) {
	return Datagram{}, errNotSupported
}
func (ep *DatagramEndpoint) Close() error { return errNotSupported }
