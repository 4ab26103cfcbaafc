package kcall

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkSyscallPath is the price of the runtime's syscall path over a
// raw syscall: "short" returns at once (TIOCINQ on an empty pipe), "long"
// keeps the kernel busy past sysmon's 20 µs (a 1 MiB read of /dev/zero),
// so that with no idle P (-cpu 1) sysmon hands the P to another thread.
func BenchmarkSyscallPath(b *testing.B) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	zero, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(zero)
	var n int32
	buf := make([]byte, 1<<20)
	calls := []struct {
		name    string
		a1, a2  uintptr
		a3      uintptr
		trap    uintptr
		keepPtr any
	}{
		{"short", uintptr(p[0]), unix.TIOCINQ, uintptr(unsafe.Pointer(&n)), unix.SYS_IOCTL, &n},
		{"long", uintptr(zero), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), unix.SYS_READ, buf},
	}
	for _, c := range calls {
		for _, path := range []struct {
			name string
			call func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, unix.Errno)
		}{{"runtime", unix.Syscall}, {"raw", unix.RawSyscall}} {
			b.Run(c.name+"/"+path.name, func(b *testing.B) {
				before := contextSwitches(b)
				for range b.N {
					if _, _, e := path.call(c.trap, c.a1, c.a2, c.a3); e != 0 {
						b.Fatal(e)
					}
				}
				runtime.KeepAlive(c.keepPtr)
				b.ReportMetric(float64(contextSwitches(b)-before)/float64(b.N), "switches/op")
			})
		}
	}
}

// contextSwitches is the process's voluntary and involuntary context
// switches so far, every thread's.
func contextSwitches(b *testing.B) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return int64(ru.Nvcsw) + int64(ru.Nivcsw)
}
