package rdmacm

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/internal/errfmt"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// Listener accepts connections. Its endpoints outlive it.
type Listener struct {
	c      *channel
	id     *cm.ID
	box    *mailbox
	cfg    config
	closed chan struct{}
	once   sync.Once
}

// Listen listens on address ("host:port"; an empty host listens on every
// RDMA device). opts configure the accepted endpoints; it may be nil.
func Listen(address string, opts *EndpointOptions) (*Listener, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	addrs, err := resolve(context.Background(), address)
	if err != nil {
		return nil, err
	}
	c, err := acquireChannel(cfg.backend)
	if err != nil {
		return nil, err
	}
	id, err := c.ch.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		c.release()
		return nil, err
	}
	l := &Listener{c: c, id: id, cfg: cfg, closed: make(chan struct{})}
	l.box = c.register(id)
	if err := id.Bind(addrs[0]); err != nil {
		l.Close()
		return nil, err
	}
	if err := id.Listen(0); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() netip.AddrPort { return l.id.LocalAddr() }

// Close stops listening and rejects the requests not yet accepted; it
// interrupts Accept. Accepted endpoints stay up.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.closed)
		l.c.unregister(l.id)
		err = l.id.Destroy()
		l.c.release()
	})
	return err
}

// Accept waits for a connection request, answers it and returns the
// established endpoint. A request that cannot be served is rejected and
// its error returned.
func (l *Listener) Accept(ctx context.Context) (*Endpoint, error) {
	return l.AcceptData(ctx, l.cfg.privateData)
}

// AcceptData is Accept with privateData in the REP (at most 196 bytes)
// instead of the options' PrivateData.
func (l *Listener) AcceptData(ctx context.Context, privateData []byte) (*Endpoint, error) {
	return l.accept(ctx, privateData, nil)
}

// AcceptQP is AcceptData with the caller's QP, which newQP makes on the
// listener's device, instead of one the endpoint makes (see DialQP).
func (l *Listener) AcceptQP(ctx context.Context, privateData []byte, newQP NewQPFunc) (*Endpoint, error) {
	if newQP == nil {
		return nil, fmt.Errorf("rdmacm: AcceptQP: nil NewQPFunc: %w", ErrInvalidArgument)
	}
	return l.accept(ctx, privateData, newQP.withData())
}

func (l *Listener) accept(ctx context.Context, privateData []byte, newQP NewQPDataFunc) (*Endpoint, error) {
	ev, err := l.box.get(ctx, l.closed)
	if err != nil {
		return nil, err
	}
	id, offer := ev.ID, ev.ECE
	pd := append([]byte(nil), ev.Conn.PrivateData...)
	ev.Ack()
	channelsMu.Lock()
	l.c.refs++ // the endpoint's reference: it outlives the listener
	channelsMu.Unlock()
	cfg := l.cfg
	cfg.privateData = privateData
	ep := newEndpoint(l.c, id, cfg)
	ep.newQP = newQP
	ep.peerData, ep.remote = pd, offer
	if err := ep.accept(ctx); err != nil {
		id.Reject(nil)
		ep.Close()
		return nil, err
	}
	return ep, nil
}

func (ep *Endpoint) accept(ctx context.Context) error {
	if err := ep.createQP(); err != nil {
		return err
	}
	// The passive half of rdma_set_local_ece(3): apply the offer to the
	// QP, move it, then answer with what it took.
	if err := ep.applyECE(ep.remote); err != nil {
		return err
	}
	if err := ep.modify(qp.Init); err != nil {
		return err
	}
	if err := ep.atInit(); err != nil {
		return err
	}
	if err := ep.modify(qp.RTR, qp.RTS); err != nil {
		return err
	}
	p := ep.connParam()
	local := ep.queryECE()
	if ep.cfg.ece != nil {
		local = *ep.cfg.ece
	}
	if ep.remote.VendorID != 0 {
		if q, err := ep.qp.QueryECE(); err == nil && q.VendorID != 0 {
			ep.local = q
		} else {
			ep.local = ep.cfg.reply.Reply(ep.remote, local)
		}
	} else {
		ep.local = local
	}
	if ep.local.VendorID != 0 {
		if err := ep.id.SetLocalECE(ep.local); err != nil {
			return err
		}
	} else if ep.remote.VendorID != 0 {
		p.DeclineECE = true
	}
	if err := ep.id.Accept(ctx, p); err != nil {
		return err
	}
	if _, err := ep.expect(ctx, cm.EventEstablished); err != nil {
		return errfmt.Wrap("rdmacm", "accept", err)
	}
	ep.start()
	return nil
}
