package uverbs

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// unsafe: ring passes the doorbell buffer's address to a raw write(2).

// ring writes the doorbell. It is a raw syscall: the write never blocks
// (the kernel only schedules or runs the requester), and skipping the
// runtime's syscall bookkeeping keeps sysmon from handing the P to another
// thread while the kernel runs the requester inline — a context switch per
// post on small guests.
func (r *rxeQP) ring() error {
	_, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(r.fd), uintptr(unsafe.Pointer(&r.doorbell[0])), uintptr(len(r.doorbell)))
	if e != 0 {
		return e
	}
	return nil
}
