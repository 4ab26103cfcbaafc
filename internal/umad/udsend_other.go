//go:build !linux

package umad

import (
	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/uverbs"
)

// UDSend sends MADs from a UD QP of its own; umad and the uverbs data
// path exist only on Linux (udsend_linux.go).
type UDSend struct {
	Transport
}

// NewUDSend fails: umad exists only on Linux.
func NewUDSend(t Transport, dev uverbs.Device, port uint8) (*UDSend, error) {
	return nil, errNotSupportedOS
}

// Num is 0: there is no UD QP.
func (s *UDSend) Num() uint32 { return 0 }

// Failed is errNotSupportedOS.
func (s *UDSend) Failed() error { return errNotSupportedOS }

// Send fails: umad exists only on Linux.
func (s *UDSend) Send(to engine.Addr, m []byte) error { return errNotSupportedOS }

// Close fails: umad exists only on Linux.
func (s *UDSend) Close() error { return errNotSupportedOS }
