package rsocket

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/go-rdma/rdmacm"
)

// Listener accepts rsockets connections; it implements net.Listener.
type Listener struct {
	l      *rdmacm.Listener
	cfg    config
	addr   net.Addr
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	pending map[*rdmacm.Endpoint]*resources // made by setup, not yet taken by AcceptConn
}

func listen(address string, opts *Options) (*Listener, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	rl := &Listener{cfg: cfg, closed: make(chan struct{}), pending: map[*rdmacm.Endpoint]*resources{}}
	eo := cfg.endpointOptions()
	eo.Setup = rl.setup
	l, err := rdmacm.Listen(address, eo)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "rdma", Err: err}
	}
	rl.l, rl.addr = l, net.TCPAddrFromAddrPort(l.Addr())
	return rl, nil
}

// setup answers a request as rs_accept: a request whose version is not 1
// is rejected (ErrVersion); otherwise the connection's resources are made
// and kept for AcceptConn, which gets the same endpoint.
func (l *Listener) setup(ep *rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
	if _, err := parseConnData(ep.PrivateData()); err != nil {
		return rdmacm.ConnSetup{}, err
	}
	r, err := newResources(ep.PD(), l.cfg)
	if err != nil {
		return rdmacm.ConnSetup{}, err
	}
	l.mu.Lock()
	l.pending[ep] = r
	l.mu.Unlock()
	return r.setup(func() {
		l.take(ep)
		r.close()
	}), nil
}

// take removes ep's resources from the pending ones.
func (l *Listener) take(ep *rdmacm.Endpoint) *resources {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.pending[ep]
	delete(l.pending, ep)
	return r
}

// AcceptConn waits for a connection request until ctx ends or the
// Listener closes, and answers it as rsocket.c's rs_accept: a request
// whose version is not 1 is rejected and its error (ErrVersion) returned.
func (l *Listener) AcceptConn(ctx context.Context) (*Conn, error) {
	ep, err := l.l.Accept(ctx)
	if err != nil {
		if l.isClosed() {
			err = net.ErrClosed
		}
		return nil, &net.OpError{Op: "accept", Net: "rdma", Addr: l.addr, Err: err}
	}
	r := l.take(ep)
	peer, err := parseConnData(ep.PrivateData()) // checked by setup
	if err != nil {
		r.close()
		ep.Close()
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
