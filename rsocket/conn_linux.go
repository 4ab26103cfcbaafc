package rsocket

import (
	"context"
	"errors"
	"net"
	"time"
)

var errTODO = errors.New("rsocket: not implemented yet")

// Conn is an rsockets connection; it implements net.Conn.
type Conn struct{}

// Listener accepts rsockets connections; it implements net.Listener.
type Listener struct{}

func dial(ctx context.Context, address string, opts *Options) (*Conn, error) {
	return nil, errTODO
}
func listen(address string, opts *Options) (*Listener, error) { return nil, errTODO }

// AcceptConn waits for a connection until ctx ends or the Listener closes.
func (l *Listener) AcceptConn(ctx context.Context) (*Conn, error) { return nil, errTODO }

// Addr returns the listening address as a *net.TCPAddr.
func (l *Listener) Addr() net.Addr { return nil }

// Close stops listening; blocked Accepts return net.ErrClosed.
func (l *Listener) Close() error { return errTODO }

func (c *Conn) Read(b []byte) (int, error)  { return 0, errTODO }
func (c *Conn) Write(b []byte) (int, error) { return 0, errTODO }
func (c *Conn) Close() error                { return errTODO }

// CloseWrite half-closes: the peer reads io.EOF (rshutdown(SHUT_WR)).
func (c *Conn) CloseWrite() error                  { return errTODO }
func (c *Conn) LocalAddr() net.Addr                { return nil }
func (c *Conn) RemoteAddr() net.Addr               { return nil }
func (c *Conn) SetDeadline(t time.Time) error      { return errTODO }
func (c *Conn) SetReadDeadline(t time.Time) error  { return errTODO }
func (c *Conn) SetWriteDeadline(t time.Time) error { return errTODO }
