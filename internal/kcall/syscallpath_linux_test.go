package kcall

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkSyscallPath is the price of the runtime's syscall path over a
// raw syscall, for a call that returns at once (FIONREAD, TIOCINQ, on an empty
// pipe): what every command pays for not holding its P.
func BenchmarkSyscallPath(b *testing.B) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var n int32
	arg := uintptr(unsafe.Pointer(&n))
	for _, c := range []struct {
		name string
		call func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, unix.Errno)
	}{{"runtime", unix.Syscall}, {"raw", unix.RawSyscall}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, _, e := c.call(unix.SYS_IOCTL, uintptr(p[0]), unix.TIOCINQ, arg); e != 0 {
					b.Fatal(e)
				}
			}
			runtime.KeepAlive(&n)
		})
	}
}
