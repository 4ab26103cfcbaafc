package rdmacm

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// Listener accepts connections. Its endpoints outlive it.
type Listener struct {
	c      *channel
	id     *cm.ID
	box    *mailbox
	cfg    config
	addr   string // as given to Listen
	closed chan struct{}
	once   sync.Once
}

// Listen listens on address ("host:port"; an empty host, or 0.0.0.0 or ::,
// listens on every RDMA device). opts configure the accepted endpoints;
// it may be nil. Like net.Listen it waits for nothing but the lookup of a
// host name, and takes no context.
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
	l := &Listener{c: c, id: id, cfg: cfg, addr: address, closed: make(chan struct{})}
	l.box = c.register(id)
	if err := id.Bind(addrs[0]); err != nil {
		l.Close()
		return nil, err
	}
	if err := id.Listen(0); err != nil {
		l.Close()
		return nil, err
	}
	// ECE asked for with the endpoint's own QPs on a known device that
	// applies none: every Accept would refuse it, so Listen does.
	if a := id.LocalAddr().Addr(); cfg.ece != nil && cfg.setup == nil && a.IsValid() && !a.IsUnspecified() {
		if x, _, err := id.Verbs(); err == nil && !x.HasECE() {
			l.Close()
			return nil, fmt.Errorf("rdmacm: listen %s: ECE %v asked for, but device %s (provider %s) applies no ECE: %w",
				address, *cfg.ece, x.Name(), x.Provider(), ErrNotSupported)
		}
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

// Accept waits for a connection request, sets up its endpoint
// (EndpointOptions.Setup, RecvSlots), answers it and returns the
// established endpoint. A request that cannot be served is rejected and
// its error returned; the listener goes on listening. ctx bounds the wait
// and the exchange; Close interrupts it.
func (l *Listener) Accept(ctx context.Context) (*Endpoint, error) {
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
	ep := newEndpoint(l.c, id, l.cfg)
	ep.peerData, ep.remote = pd, offer
	if err := ep.accept(ctx); err != nil {
		id.Reject(nil)
		ep.fail()
		return nil, wrapErr("accept", err)
	}
	return ep, nil
}

func (ep *Endpoint) accept(ctx context.Context) error {
	if err := ep.createQP(); err != nil {
		return err
	}
	// The endpoint's QP on a device without ECE: no offer is applied, so
	// none is answered, and asking for one is an error.
	ownNoECE := !ep.extQP && !ep.hasECE()
	if ownNoECE && ep.cfg.ece != nil {
		return ep.noECE(*ep.cfg.ece)
	}
	// The passive half of rdma_set_local_ece(3): apply the offer to the
	// QP, move it, then answer with what it took.
	if !ownNoECE {
		if err := ep.applyECE(ep.remote); err != nil {
			return err
		}
	}
	if err := ep.toInit(); err != nil {
		return err
	}
	if err := ep.modify(qp.RTR, qp.RTS); err != nil {
		return err
	}
	p := ep.connParam()
	switch {
	case ownNoECE:
		ep.local = ece.ECE{}
	case ep.remote.VendorID != 0:
		if q, err := ep.qp.QueryECE(); err == nil && q.VendorID != 0 {
			ep.local = q
		} else {
			ep.local = ep.cfg.reply.Reply(ep.remote, ep.localECE())
		}
	default:
		ep.local = ep.localECE()
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
		return err
	}
	ep.start()
	return nil
}

// localECE is the accepting side's own ECE: the options' or the QP's.
func (ep *Endpoint) localECE() ece.ECE {
	if ep.cfg.ece != nil {
		return *ep.cfg.ece
	}
	return ep.queryECE()
}
