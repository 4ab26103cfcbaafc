//go:build linux

package kcall

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// RouteSource returns the local IPv4 address the routing table picks to
// reach dst: the source address of a UDP socket connected to dst
// (connect on a datagram socket looks the route up and sends nothing;
// the rdma_cm's rdma_resolve_ip does the same lookup in the kernel).
func RouteSource(dst [4]byte) ([4]byte, error) {
	fd, _, e := unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return [4]byte{}, e
	}
	defer Close(int(fd))
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: dst}
	port := (*[2]byte)(unsafe.Pointer(&sa.Port)) // network byte order
	port[0], port[1] = 4791>>8, 4791&0xff
	if _, _, e := unix.Syscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)); e != 0 {
		return [4]byte{}, e
	}
	var got unix.RawSockaddrInet4
	n := uint32(unsafe.Sizeof(got))
	if _, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, fd, uintptr(unsafe.Pointer(&got)), uintptr(unsafe.Pointer(&n))); e != 0 {
		return [4]byte{}, e
	}
	if got.Family != unix.AF_INET || uintptr(n) < unsafe.Sizeof(got) {
		return [4]byte{}, unix.EAFNOSUPPORT
	}
	return got.Addr, nil
}

// RouteSource6 is RouteSource for IPv6; scope is the interface index a
// link-local dst needs (0 for any other).
func RouteSource6(dst [16]byte, scope uint32) ([16]byte, error) {
	fd, _, e := unix.Syscall(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return [16]byte{}, e
	}
	defer Close(int(fd))
	sa := unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: dst, Scope_id: scope}
	port := (*[2]byte)(unsafe.Pointer(&sa.Port)) // network byte order
	port[0], port[1] = 4791>>8, 4791&0xff
	if _, _, e := unix.Syscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)); e != 0 {
		return [16]byte{}, e
	}
	var got unix.RawSockaddrInet6
	n := uint32(unsafe.Sizeof(got))
	if _, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, fd, uintptr(unsafe.Pointer(&got)), uintptr(unsafe.Pointer(&n))); e != 0 {
		return [16]byte{}, e
	}
	if got.Family != unix.AF_INET6 || uintptr(n) < unsafe.Sizeof(got) {
		return [16]byte{}, unix.EAFNOSUPPORT
	}
	return got.Addr, nil
}
