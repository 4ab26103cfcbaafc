//go:build unix

package testfabric

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user plus system CPU time, all threads
// (the GC's included).
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
