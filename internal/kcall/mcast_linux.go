//go:build linux

package kcall

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// JoinIPv4Group opens a UDP socket holding the interface's membership of
// the IPv4 group (IP_ADD_MEMBERSHIP with a struct ip_mreqn naming the
// interface): the kernel sends the IGMP report, accepts the group's
// packets on the interface and puts its MAC in the netdev's filter until
// the socket is closed (Close), which leaves the group. This is what the
// rdma_cm's join does for RoCE v2 (cma_igmp_send, ip_mc_inc_group).
func JoinIPv4Group(group [4]byte, ifindex int) (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	mreq := unix.IPMreqn{Multiaddr: group, Ifindex: int32(ifindex)}
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP,
		uintptr(unsafe.Pointer(&mreq)), unsafe.Sizeof(mreq), 0); e != 0 {
		Close(int(fd))
		return -1, e
	}
	return int(fd), nil
}
