//go:build linux

package abi

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A netlink request to the kernel is answered inside the sendto (the
// kernel's handler queues the reply on the socket before sendto returns;
// a dump's next part is queued by the recvfrom that drains the previous
// one), so these calls are raw, as the commands are: through the
// scheduler's path each of the half-dozen calls of a request could be
// retaken by Go's sysmon and restart its 20 µs polling, which the device
// opens at cm.Open did (issue 17, docs/benchmarks.md "Fourth pass").
// NetlinkRecv falls back to a blocking read through the scheduler if
// nothing is queued.

// NetlinkSocket opens a netlink socket of the protocol, close-on-exec,
// binds it (the kernel picks the port id), asks for extended acks where
// the kernel has them (Linux 4.12+), and returns its port id.
func NetlinkSocket(proto int) (fd int, pid uint32, err error) {
	r, _, e := unix.RawSyscall(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, uintptr(proto))
	if e != 0 {
		return -1, 0, e
	}
	fd = int(r)
	sa := unix.RawSockaddrNetlink{Family: unix.AF_NETLINK}
	if _, _, e := unix.RawSyscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrNetlink); e != 0 {
		CloseRaw(fd)
		return -1, 0, e
	}
	n := uint32(unix.SizeofSockaddrNetlink)
	if _, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&n))); e != 0 {
		CloseRaw(fd)
		return -1, 0, e
	}
	on := int32(1)
	unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, uintptr(unsafe.Pointer(&on)), 4, 0)
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
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)), 0,
		uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrNetlink)
	runtime.KeepAlive(msg)
	runtime.KeepAlive(&sa)
	if e != 0 {
		return e
	}
	return nil
}

// NetlinkRecv reads one datagram (with flags such as MSG_PEEK|MSG_TRUNC:
// n is then its real size) and the port id it came from: raw while one
// is queued, otherwise a blocking read through the scheduler.
func NetlinkRecv(fd int, buf []byte, flags int) (n int, fromPid uint32, err error) {
	if len(buf) == 0 {
		return 0, 0, unix.EINVAL
	}
	var sa unix.RawSockaddrNetlink
	sl := uint32(unix.SizeofSockaddrNetlink)
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
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

// CloseRaw closes fd with a raw close (a socket or file nothing waits on).
func CloseRaw(fd int) { unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }
