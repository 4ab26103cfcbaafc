//go:build linux

package kcall

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A netlink request to the kernel is answered inside the sendto (the
// kernel's handler queues the reply on the socket before sendto returns;
// a dump's next part is queued by the recvfrom that drains the previous
// one), and the handlers take the RDMA core's locks and allocate, so
// every call goes through the scheduler. NetlinkRecv reads without
// waiting first and falls back to a blocking read if nothing is queued.

// NetlinkSocket opens a netlink socket of the protocol, close-on-exec,
// binds it (the kernel picks the port id), asks for extended acks where
// the kernel has them (Linux 4.12+), and returns its port id.
func NetlinkSocket(proto int) (fd int, pid uint32, err error) {
	r, _, e := unix.Syscall(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, uintptr(proto))
	if e != 0 {
		return -1, 0, e
	}
	fd = int(r)
	sa := unix.RawSockaddrNetlink{Family: unix.AF_NETLINK}
	if _, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrNetlink); e != 0 {
		Close(fd)
		return -1, 0, e
	}
	n := uint32(unix.SizeofSockaddrNetlink)
	if _, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&n))); e != 0 {
		Close(fd)
		return -1, 0, e
	}
	on := int32(1)
	unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, uintptr(unsafe.Pointer(&on)), 4, 0)
	runtime.KeepAlive(&sa)
	runtime.KeepAlive(&n)
	runtime.KeepAlive(&on)
	return fd, sa.Pid, nil
}

// NetlinkSendToKernel sends msg to the kernel (port id 0).
func NetlinkSendToKernel(fd int, msg []byte) error {
	if len(msg) == 0 {
		return unix.EINVAL
	}
	sa := unix.RawSockaddrNetlink{Family: unix.AF_NETLINK}
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)), 0,
		uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrNetlink)
	runtime.KeepAlive(msg)
	runtime.KeepAlive(&sa)
	if e != 0 {
		return e
	}
	return nil
}

// NetlinkRecv reads one datagram (with flags such as MSG_PEEK|MSG_TRUNC:
// n is then its real size) and the port id it came from; with nothing
// queued it blocks in unix.Recvfrom.
func NetlinkRecv(fd int, buf []byte, flags int) (n int, fromPid uint32, err error) {
	if len(buf) == 0 {
		return 0, 0, unix.EINVAL
	}
	var sa unix.RawSockaddrNetlink
	sl := uint32(unix.SizeofSockaddrNetlink)
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			uintptr(flags|unix.MSG_DONTWAIT), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&sl)))
		runtime.KeepAlive(buf)
		runtime.KeepAlive(&sa)
		runtime.KeepAlive(&sl)
		switch e {
		case 0:
			return int(r), sa.Pid, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			n, from, err := unix.Recvfrom(fd, buf, flags)
			if err != nil {
				return 0, 0, err
			}
			nl, ok := from.(*unix.SockaddrNetlink)
			if !ok {
				return n, ^uint32(0), nil
			}
			return n, nl.Pid, nil
		default:
			return 0, 0, e
		}
	}
}
