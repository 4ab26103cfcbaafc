//go:build linux

package rdmacm

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/go-rdma/rdmacm/cm"
)

// JoinMulticast joins the multicast group (an IP address such as
// "239.1.2.3"; on RoCE v2 an IPv4 group) on either CM backend and returns
// a datagram endpoint whose Peer is the group: Send(ctx, ep.Peer(), p)
// reaches every member (the group's address handle, QPN 0xFFFFFF and
// cm.UDPQKey), and Recv returns what members send to the group, each
// datagram with its sender's *Peer (which a Send may answer directly).
// The endpoint's QP is attached to the group unless opts.SendOnly. Close
// detaches it and leaves the group (the IGMP membership goes with it). An
// address that is not a group fails with ErrInvalidArgument.
func JoinMulticast(ctx context.Context, group string, opts *MulticastOptions) (_ *DatagramEndpoint, err error) {
	var o MulticastOptions
	if opts != nil {
		o = *opts
	}
	o.PrivateData, o.OnRequest = nil, nil
	cfg, err := o.DatagramOptions.config()
	if err != nil {
		return nil, err
	}
	g, err := netip.ParseAddr(group)
	if err != nil || !g.IsMulticast() {
		return nil, fmt.Errorf("rdmacm: join multicast group %q: not a multicast address: %w", group, ErrInvalidArgument)
	}
	g = g.Unmap()
	var src netip.AddrPort
	if o.Bind != "" {
		a, err := netip.ParseAddr(o.Bind)
		if err != nil {
			return nil, fmt.Errorf("rdmacm: join multicast group %s: bind address %q: %w", g, o.Bind, ErrInvalidArgument)
		}
		src = netip.AddrPortFrom(a.Unmap(), 0)
	}
	ep, id, err := openDatagram(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ep.Close()
			err = wrapErr("join multicast group "+g.String(), err)
		}
	}()
	if err := id.ResolveAddr(ctx, src, netip.AddrPortFrom(g, 0), 0); err != nil {
		return nil, err
	}
	if _, err := ep.expect(ctx, cm.EventAddrResolved); err != nil {
		return nil, err
	}
	// The receives are posted before the join, so that nothing the group
	// sends after it is dropped for want of one.
	if err := ep.makeQP(id); err != nil {
		return nil, err
	}
	if _, err := id.JoinMulticast(ctx, g, o.SendOnly, nil); err != nil {
		return nil, err
	}
	ev, err := ep.expect(ctx, cm.EventMulticastJoin)
	if err != nil {
		return nil, err
	}
	ah := ev.UD.AH
	if !o.SendOnly {
		// The endpoint's QP is its own, not a cm library QP: attach it here
		// as librdmacm attaches its ID's QP.
		if err := ep.qp.AttachMcast(ah.GRH.DGID, ah.DLID); err != nil {
			return nil, err
		}
	}
	h, err := ep.pd.CreateAH(ah)
	if err != nil {
		return nil, err
	}
	ep.server = &Peer{ah: h, attr: ah, QPN: ev.UD.QPNum, QKey: ev.UD.QKey, Addr: g}
	ep.peerMu.Lock()
	ep.peers[peerKey{ah.GRH.DGID, ah.GRH.SGIDIndex, ev.UD.QPNum}] = ep.server
	ep.peerMu.Unlock()
	return ep, nil
}
