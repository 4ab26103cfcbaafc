//go:build linux

package kcall

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// IfIndexToName names the network interface with the given index, as
// glibc's if_indextoname does (SIOCGIFNAME on an AF_UNIX datagram
// socket): one socket and one ioctl, where net.InterfaceByIndex dumps
// every link over netlink.
func IfIndexToName(index int) (string, error) {
	s, _, e := unix.Syscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return "", e
	}
	defer Close(int(s))
	var ifr [unix.IFNAMSIZ + 24]byte // struct ifreq: name, then ifr_ifindex
	abi.Native.PutUint32(ifr[unix.IFNAMSIZ:], uint32(int32(index)))
	_, _, e = unix.Syscall(unix.SYS_IOCTL, s, unix.SIOCGIFNAME, uintptr(unsafe.Pointer(&ifr[0])))
	runtime.KeepAlive(&ifr)
	if e != 0 {
		return "", e
	}
	n := 0
	for n < unix.IFNAMSIZ && ifr[n] != 0 {
		n++
	}
	return string(ifr[:n]), nil
}
