//go:build linux

package cm

import (
	"net"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/rdma"
)

// Address and route resolution for the user backend, as the rdma_cm does
// it for RoCE (rdma_resolve_ip, cma_resolve_iboe_route), and QUERY.

// sourceFor asks the routing table which local address reaches dst, from
// a UDP socket connected to dst (kcall.RouteSource: four syscalls and no
// netpoller, where net.DialUDP made eight with its options, the peer-name
// query and the poller's epoll_ctl ADD and DEL). A link-local IPv6 dst
// needs its zone, as rdma_resolve_addr needs sin6_scope_id.
func sourceFor(dst netip.Addr) (netip.Addr, error) {
	if dst.Is4() {
		src, err := kcall.RouteSource(dst.As4())
		if err != nil {
			return netip.Addr{}, err
		}
		return netip.AddrFrom4(src), nil
	}
	var scope uint32
	if z := dst.Zone(); z != "" {
		if n, err := strconv.ParseUint(z, 10, 32); err == nil {
			scope = uint32(n)
		} else if ifi, err := net.InterfaceByName(z); err == nil {
			scope = uint32(ifi.Index)
		} else {
			return netip.Addr{}, unix.ENODEV
		}
	}
	src, err := kcall.RouteSource6(dst.As16(), scope)
	if err != nil {
		return netip.Addr{}, err
	}
	return netip.AddrFrom16(src), nil
}

func (u *user) resolveAddr(h uint32, src, dst netip.AddrPort, _ time.Duration) error {
	dstA := dst.Addr().Unmap()
	if !dstA.IsValid() || src.IsValid() && !src.Addr().Unmap().IsUnspecified() && src.Addr().Unmap().Is4() != dstA.Is4() {
		return unix.EAFNOSUPPORT // the rdma_cm refuses mixed families too
	}
	// The route lookup may block briefly; do it outside the lock.
	routeSrc, routeErr := sourceFor(dstA)
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return err
	}
	if src.IsValid() && !x.src.IsValid() {
		if err := u.bindLocked(h, x, src); err != nil {
			return err
		}
	}
	status := int32(0)
	switch {
	case routeErr != nil:
		status = -int32(unix.ENETUNREACH)
	case x.port == nil:
		if x.src.IsValid() && !x.src.Addr().IsUnspecified() && x.src.Addr() != routeSrc {
			status = -int32(unix.EHOSTUNREACH)
			break
		}
		p, g, ok := u.portOf(routeSrc)
		if !ok {
			status = -int32(unix.ENODEV) // the route's device has no RDMA port
			break
		}
		x.port, x.gid = p, g
		if !x.src.IsValid() {
			if err := u.bindLocked(h, x, netip.AddrPortFrom(routeSrc, 0)); err != nil {
				return err
			}
		} else if x.src.Addr().IsUnspecified() {
			x.src = netip.AddrPortFrom(routeSrc, x.src.Port())
		}
	}
	if status == 0 {
		x.dst = netip.AddrPortFrom(dstA, dst.Port())
		u.queueLocked(rawEvent{uid: x.uid, handle: h, typ: EventAddrResolved})
	} else {
		u.queueLocked(rawEvent{uid: x.uid, handle: h, typ: EventAddrError, status: status})
	}
	return nil
}

// rocePacketLifeTime is the rdma_cm's packet lifetime on RoCE paths
// (CMA_IBOE_PACKET_LIFETIME, 18 in Linux 6.1).
const rocePacketLifeTime = 18

func (u *user) resolveRoute(h uint32, _ time.Duration) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return err
	}
	if x.port == nil || !x.dst.IsValid() {
		return unix.EINVAL
	}
	// cma_resolve_iboe_route: the port's MTU, the current rate, hop
	// limit 64 for a routed IPv4 peer, the ID's TOS as traffic class.
	x.path = engine.Path{
		PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: x.gid.GID, DGID: rdma.GIDFromAddr(x.dst.Addr()),
			HopLimit: 64, TrafficClass: x.tos, MTU: x.port.port.ActiveMTU, PacketLifeTime: rocePacketLifeTime},
		Port: uint8(x.port.port.Num), SGIDIndex: uint8(x.gid.Index), RoCE: true,
	}
	if x.path.MTU == 0 {
		x.path.MTU = rdma.MTU1024
	}
	x.routed = true
	u.queueLocked(rawEvent{uid: x.uid, handle: h, typ: EventRouteResolved})
	return nil
}

func (u *user) queryAddr(h uint32) (AddrInfo, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return AddrInfo{}, err
	}
	ai := AddrInfo{Src: x.src, Dst: x.dst, PKey: 0xffff}
	if x.port != nil {
		ai.NodeGUID, ai.HasDevice, ai.Port = x.port.guid, true, uint8(x.port.port.Num)
	}
	return ai, nil
}

func (u *user) queryPath(h uint32) ([]rdma.PathRecord, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return nil, err
	}
	if !x.routed {
		return nil, nil
	}
	pr := x.path.PathRecord
	pr.Reversible = true
	pr.FlowLabel = engine.RoCEFlowLabel(x.src.Port(), x.dst.Port())
	return []rdma.PathRecord{pr}, nil
}
