//go:build !linux

package rsocket

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/go-rdma/rdmacm"
)

var errNotSupported = fmt.Errorf("rsocket: RDMA on this platform: %w", rdmacm.ErrNotSupported)

// Conn is an rsockets connection (Linux only).
type Conn struct{}

// Listener accepts rsockets connections (Linux only).
type Listener struct{}

func dial(ctx context.Context, address string, opts *Options) (*Conn, error) {
	return nil, errNotSupported
}
func listen(address string, opts *Options) (*Listener, error) { return nil, errNotSupported }

// Accept returns ErrNotSupported off Linux.
func (l *Listener) Accept() (net.Conn, error) { return nil, errNotSupported }

// AcceptConn returns ErrNotSupported off Linux.
func (l *Listener) AcceptConn(ctx context.Context) (*Conn, error) { return nil, errNotSupported }

// Addr returns nil off Linux.
func (l *Listener) Addr() net.Addr { return nil }

// Close returns ErrNotSupported off Linux.
func (l *Listener) Close() error { return errNotSupported }

func (c *Conn) Read(b []byte) (int, error)         { return 0, errNotSupported }
func (c *Conn) Write(b []byte) (int, error)        { return 0, errNotSupported }
func (c *Conn) Close() error                       { return errNotSupported }
func (c *Conn) CloseWrite() error                  { return errNotSupported }
func (c *Conn) LocalAddr() net.Addr                { return nil }
func (c *Conn) RemoteAddr() net.Addr               { return nil }
func (c *Conn) SetDeadline(t time.Time) error      { return errNotSupported }
func (c *Conn) SetReadDeadline(t time.Time) error  { return errNotSupported }
func (c *Conn) SetWriteDeadline(t time.Time) error { return errNotSupported }

// IOMap is a window the peer writes into (Linux only).
type IOMap struct{}

// IOMap returns ErrNotSupported off Linux.
func (c *Conn) IOMap(size int, offset int64) (*IOMap, error) { return nil, errNotSupported }

// WriteAt returns ErrNotSupported off Linux.
func (c *Conn) WriteAt(p []byte, off int64) (int, error) { return 0, errNotSupported }

// Bytes returns nil off Linux.
func (m *IOMap) Bytes() []byte { return nil }

// Offset returns 0 off Linux.
func (m *IOMap) Offset() int64 { return 0 }

// Close returns ErrNotSupported off Linux.
func (m *IOMap) Close() error { return errNotSupported }
