//go:build !linux

package rdmacm

// The endpoint layer is Linux-only: here every call fails with
// ErrNotSupported. (Endpoint.QP and Endpoint.ID exist on Linux only.)

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/uverbs"
)

var errNotSupported = fmt.Errorf("rdmacm: RDMA endpoints on this platform: %w", ErrNotSupported)

// Endpoint is a connected RC queue pair (Linux only).
type Endpoint struct{}

// Listener accepts connections (Linux only).
type Listener struct{}

// MR is registered memory (Linux only).
type MR struct{}

// CQ is a completion queue endpoints share (Linux only).
type CQ struct{}

// DefaultCQEntries is the size of a NewCQ(0).
const DefaultCQEntries = 256

// NewCQ returns ErrNotSupported off Linux.
func NewCQ(entries int) (*CQ, error) { return nil, errNotSupported }

// Next returns ErrNotSupported off Linux.
func (cq *CQ) Next(ctx context.Context) (WC, error) { return WC{}, errNotSupported }

// Close returns ErrNotSupported off Linux.
func (cq *CQ) Close() error { return errNotSupported }

// Dial returns ErrNotSupported off Linux.
func Dial(ctx context.Context, address string, opts *EndpointOptions) (*Endpoint, error) {
	return nil, errNotSupported
}

// Listen returns ErrNotSupported off Linux.
func Listen(address string, opts *EndpointOptions) (*Listener, error) {
	return nil, errNotSupported
}

func (l *Listener) Accept(ctx context.Context) (*Endpoint, error)    { return nil, errNotSupported }
func (l *Listener) Addr() netip.AddrPort                             { return netip.AddrPort{} }
func (l *Listener) Close() error                                     { return errNotSupported }
func (l *Listener) RegMsgs(size int) (*MR, error)                    { return nil, errNotSupported }
func (l *Listener) RegRead(size int) (*MR, error)                    { return nil, errNotSupported }
func (l *Listener) RegWrite(size int) (*MR, error)                   { return nil, errNotSupported }
func (ep *Endpoint) Close() error                                    { return errNotSupported }
func (ep *Endpoint) Disconnect(ctx context.Context) error            { return errNotSupported }
func (ep *Endpoint) Done() <-chan struct{}                           { return nil }
func (ep *Endpoint) Err() error                                      { return errNotSupported }
func (ep *Endpoint) LocalAddr() netip.AddrPort                       { return netip.AddrPort{} }
func (ep *Endpoint) RemoteAddr() netip.AddrPort                      { return netip.AddrPort{} }
func (ep *Endpoint) PrivateData() []byte                             { return nil }
func (ep *Endpoint) LocalECE() ece.ECE                               { return ece.ECE{} }
func (ep *Endpoint) RemoteECE() ece.ECE                              { return ece.ECE{} }
func (ep *Endpoint) QPNum() uint32                                   { return 0 }
func (ep *Endpoint) RecvMR() *MR                                     { return nil }
func (ep *Endpoint) PD() *uverbs.PD                                  { return nil }
func (ep *Endpoint) RegMsgs(size int) (*MR, error)                   { return nil, errNotSupported }
func (ep *Endpoint) RegRead(size int) (*MR, error)                   { return nil, errNotSupported }
func (ep *Endpoint) RegWrite(size int) (*MR, error)                  { return nil, errNotSupported }
func (ep *Endpoint) PostRecv(m *MR, off, n int) error                { return errNotSupported }
func (ep *Endpoint) PostSend(m *MR, off, n int) error                { return errNotSupported }
func (ep *Endpoint) PostSendImm(m *MR, off, n int, imm uint32) error { return errNotSupported }
func (ep *Endpoint) PostWrite(m *MR, off, n int, dst RemoteBuf) error {
	return errNotSupported
}
func (ep *Endpoint) PostWriteImm(m *MR, off, n int, dst RemoteBuf, imm uint32) error {
	return errNotSupported
}
func (ep *Endpoint) PostRead(m *MR, off, n int, src RemoteBuf) error { return errNotSupported }
func (ep *Endpoint) WaitSend(ctx context.Context) (WC, error)        { return WC{}, errNotSupported }
func (ep *Endpoint) WaitRecv(ctx context.Context) (WC, error)        { return WC{}, errNotSupported }
func (m *MR) Bytes() []byte                                          { return nil }
func (m *MR) Len() int                                               { return 0 }
func (m *MR) Remote() RemoteBuf                                      { return RemoteBuf{} }
func (m *MR) Close() error                                           { return errNotSupported }
