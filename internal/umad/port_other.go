//go:build !linux

package umad

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// Port is a umad device; only Linux has them.
type Port struct{}

// errNotSupportedOS is every function's error here: "umad: not supported
// on GOOS", matching ErrNotSupported.
var errNotSupportedOS = fmt.Errorf("umad: %w", unix.ErrNotSupported)

// Open fails: umad exists only on Linux.
func Open(dev string) (*Port, error) { return nil, errNotSupportedOS }

func (p *Port) Close() error                        { return errNotSupportedOS }
func (p *Port) Send(to engine.Addr, m []byte) error { return errNotSupportedOS }
func (p *Port) Recv(ctx context.Context, buf []byte) (engine.Addr, int, error) {
	return engine.Addr{}, 0, errNotSupportedOS
}

// FindDevice fails: umad exists only on Linux.
func FindDevice(ibdev string, port int) (string, error) { return "", errNotSupportedOS }

// LocalGID fails: umad exists only on Linux.
func LocalGID(ibdev string, port int, addr netip.Addr) (rdma.GID, uint8, error) {
	return rdma.GID{}, 0, errNotSupportedOS
}
