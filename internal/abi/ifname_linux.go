//go:build linux

package abi

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IfIndexToName names the network interface with the given index, as
// glibc's if_indextoname does (SIOCGIFNAME on an AF_UNIX datagram
// socket), with raw syscalls: net.InterfaceByIndex dumps every link over
// netlink through the scheduler's path, where Go's sysmon retook the
// calls at cm.Open and restarted its 20 µs polling (issue 17).
func IfIndexToName(index int) (string, error) {
	s, _, e := unix.RawSyscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return "", e
	}
	defer CloseRaw(int(s))
	var ifr [unix.IFNAMSIZ + 24]byte // struct ifreq: name, then ifr_ifindex
	Native.PutUint32(ifr[unix.IFNAMSIZ:], uint32(int32(index)))
	_, _, e = unix.RawSyscall(unix.SYS_IOCTL, s, unix.SIOCGIFNAME, uintptr(unsafe.Pointer(&ifr[0])))
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
