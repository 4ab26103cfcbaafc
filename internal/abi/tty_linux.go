//go:build linux

package abi

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether fd is a terminal, as glibc's isatty does
// (TCGETS succeeds), with a raw ioctl: rdmacm-ping asks it for stdout at
// start-up, where a call through the scheduler (os.File.Stat) was retaken
// by Go's sysmon and restarted its 20 µs polling (issue 17).
func IsTerminal(fd int) bool {
	var t unix.Termios
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.TCGETS), uintptr(unsafe.Pointer(&t)))
	runtime.KeepAlive(&t)
	return e == 0
}
