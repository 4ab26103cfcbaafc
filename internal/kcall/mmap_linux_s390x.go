package kcall

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmap is mmap(2) through x/sys/unix's stub, without its mapping table
// (see Mmap). On s390x SYS_MMAP is old_mmap: its one argument points to
// the six as unsigned longs, offset in bytes (struct mmap_arg_struct,
// mm/mmap.c, __ARCH_WANT_SYS_OLD_MMAP; EINVAL if not page-aligned). The
// pointer is converted in the call expression, so the array stays alive
// and in place for the call (unsafe.Pointer rule 4; x/sys/unix's s390x
// mmap does the same).
func mmap(addr, length uintptr, prot, flags, fd int, offset int64) (uintptr, error) {
	args := [6]uintptr{addr, length, uintptr(prot), uintptr(flags), uintptr(fd), uintptr(offset)}
	p, _, e := unix.Syscall(unix.SYS_MMAP, uintptr(unsafe.Pointer(&args)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return p, nil
}
