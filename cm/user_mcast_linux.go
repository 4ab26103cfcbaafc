//go:build linux

package cm

import (
	"net"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Multicast on the user backend, as the rdma_cm joins a group on RoCE
// (cma_iboe_join_multicast): no SA and no MAD. The MGID comes from the
// IP group (cma_iboe_set_mgid), the netdev joins the IP group (the
// IGMP membership, held by a socket for the join's life; not for a
// send-only join), and the join event carries the group's address
// handle, QPN 0xFFFFFF and RDMA_UDP_QKEY at once.

// userMcast is one joined group.
type userMcast struct {
	id   uint32 // the ID's handle
	sock int    // the socket holding the IGMP membership, or -1
}

// mcastQPN is the QPN of a multicast send (IB_MULTICAST_QPN).
const mcastQPN = 0xffffff

// roceMGID is cma_iboe_set_mgid: an IPv6 group is its own MGID; an IPv4
// group is IPv4-mapped, under ff0e::/16 for RoCE v1 GIDs and ::ffff:0:0/96
// for RoCE v2 (the IP destination of the packets is then the group).
func roceMGID(group netip.Addr, v2 bool) rdma.GID {
	if group.Is6() && !group.Is4In6() {
		return rdma.GID(group.As16())
	}
	g := rdma.GID(netip.AddrFrom16(group.Unmap().As16()).As16())
	if !v2 {
		g[0], g[1] = 0xff, 0x0e
	}
	return g
}

func (u *user) join(h uint32, uid uint64, addr netip.Addr, sendOnly bool) (uint32, error) {
	addr = addr.Unmap()
	u.mu.Lock()
	x, err := u.get(h)
	if err != nil {
		u.mu.Unlock()
		return 0, err
	}
	if x.ps != rdma.PortSpaceUDP {
		u.mu.Unlock()
		return 0, unix.EOPNOTSUPP
	}
	if x.port == nil {
		u.mu.Unlock()
		return 0, unix.ENODEV // bound to no device (cma_iboe_join_multicast: no bound_dev_if)
	}
	if !addr.IsMulticast() {
		u.mu.Unlock()
		return 0, unix.EINVAL
	}
	gid, port := x.gid, x.port
	u.mu.Unlock()
	v2 := gid.Type == uverbs.GIDTypeRoCEv2
	if v2 && !addr.Is4() {
		return 0, unix.EOPNOTSUPP // the kernel joins no IPv6 group on RoCE v2 (ENOTSUPP)
	}
	m := &userMcast{id: h, sock: -1}
	if v2 && !sendOnly {
		ifindex := gid.NetdevIndex
		if ifindex == 0 {
			ifi, err := net.InterfaceByName(gid.Netdev)
			if err != nil {
				return 0, unix.ENODEV
			}
			ifindex = ifi.Index
		}
		if m.sock, err = kcall.JoinIPv4Group(addr.As4(), ifindex); err != nil {
			return 0, err
		}
	}
	// The kernel's hop limit: 64 (IPV6_DEFAULT_HOPLIMIT) for an IPv4 group
	// on RoCE v2, else 1 (link-local).
	hop := uint8(1)
	if v2 {
		hop = 64
	}
	ah := qp.AH{IsGlobal: true, PortNum: uint8(port.port.Num),
		GRH: qp.GRH{DGID: roceMGID(addr, v2), SGIDIndex: uint8(gid.Index), HopLimit: hop}}
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, err := u.get(h); err != nil || u.isClosed {
		m.close()
		return 0, unix.EINVAL
	}
	if u.mcasts == nil {
		u.mcasts = make(map[uint32]*userMcast)
	}
	u.next++
	mh := u.next
	u.mcasts[mh] = m
	u.queueLocked(rawEvent{uid: uid, handle: h, typ: EventMulticastJoin,
		ud: UDParam{QPNum: mcastQPN, QKey: UDPQKey, AH: ah}})
	return mh, nil
}

func (u *user) leave(mh uint32) (uint32, error) {
	u.mu.Lock()
	m, ok := u.mcasts[mh]
	delete(u.mcasts, mh)
	u.mu.Unlock()
	if !ok {
		return 0, unix.EINVAL
	}
	m.close()
	return 1, nil
}

// leaveAllLocked drops the groups of ID h (of every ID when h is 0), as
// destroying an rdma_cm ID leaves its groups (cma_leave_mc_groups).
func (u *user) leaveAllLocked(h uint32) {
	for mh, m := range u.mcasts {
		if h == 0 || m.id == h {
			m.close()
			delete(u.mcasts, mh)
		}
	}
}

func (m *userMcast) close() {
	if m.sock >= 0 {
		kcall.Close(m.sock)
		m.sock = -1
	}
}
