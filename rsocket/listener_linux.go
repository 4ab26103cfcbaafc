package rsocket

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Listener accepts rsockets connections; it implements net.Listener.
type Listener struct {
	l      *rdmacm.Listener
	cfg    config
	addr   net.Addr
	closed chan struct{}
	once   sync.Once
}

func listen(address string, opts *Options) (*Listener, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	l, err := rdmacm.Listen(address, cfg.endpointOptions())
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "rdma", Err: err}
	}
	return &Listener{l: l, cfg: cfg, addr: net.TCPAddrFromAddrPort(l.Addr()), closed: make(chan struct{})}, nil
}

// AcceptConn waits for a connection request until ctx ends or the
// Listener closes, and answers it as rsocket.c's rs_accept: a request
// whose version is not 1 is rejected and its error (ErrVersion) returned.
func (l *Listener) AcceptConn(ctx context.Context) (*Conn, error) {
	var r *resources
	var peer connDataView
	ep, err := l.l.AcceptQPData(ctx, func(pd *uverbs.PD, peerData []byte) (rdmacm.QPSetup, error) {
		var err error
		if peer, err = parseConnData(peerData); err != nil {
			return rdmacm.QPSetup{}, err
		}
		if r, err = newResources(pd, l.cfg); err != nil {
			return rdmacm.QPSetup{}, err
		}
		return r.setup(), nil
	})
	if err != nil {
		if r != nil {
			r.close()
		}
		if l.isClosed() {
			err = net.ErrClosed
		}
		return nil, &net.OpError{Op: "accept", Net: "rdma", Addr: l.addr, Err: err}
	}
	peer = append(connDataView(nil), peer...)
	return newConn(ep, r, peer)
}

// Accept is AcceptConn for net.Listener. A request that fails its
// handshake (a bad version, a peer that went away) does not end the
// loop of a server: Accept goes on to the next, as net's accept skips
// ECONNABORTED.
func (l *Listener) Accept() (net.Conn, error) {
	delay := 5 * time.Millisecond
	for {
		c, err := l.AcceptConn(context.Background())
		if err == nil {
			return c, nil
		}
		if l.isClosed() || errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		if !errors.Is(err, ErrVersion) && !errors.Is(err, ErrProtocol) {
			// Something else (the device?): do not spin.
			time.Sleep(delay)
			delay = min(2*delay, time.Second)
		}
	}
}

func (l *Listener) isClosed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

// Addr returns the listening address as a *net.TCPAddr.
func (l *Listener) Addr() net.Addr { return l.addr }

// Close stops listening; a blocked Accept returns net.ErrClosed.
// Accepted connections stay up.
func (l *Listener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.closed)
		err = l.l.Close()
	})
	return err
}
