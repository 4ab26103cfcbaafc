//go:build !linux

package umad

import (
	"context"
	"net/netip"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
)

// Port is a umad device; only Linux has them.
type Port struct{}

// Open fails: umad exists only on Linux.
func Open(dev string) (*Port, error) { return nil, ErrNotSupported }

func (p *Port) Close() error                        { return ErrNotSupported }
func (p *Port) Send(to engine.Addr, m []byte) error { return ErrNotSupported }
func (p *Port) Recv(ctx context.Context, buf []byte) (engine.Addr, int, error) {
	return engine.Addr{}, 0, ErrNotSupported
}

// FindDevice fails: umad exists only on Linux.
func FindDevice(ibdev string, port int) (string, error) { return "", ErrNotSupported }

// LocalGID fails: umad exists only on Linux.
func LocalGID(ibdev string, port int, addr netip.Addr) (mad.GID, uint8, error) {
	return mad.GID{}, 0, ErrNotSupported
}
