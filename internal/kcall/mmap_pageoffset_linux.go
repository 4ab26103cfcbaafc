//go:build linux && (386 || arm || mips || mipsle)

package kcall

import "golang.org/x/sys/unix"

// mmap2Unit is the unit of mmap2's offset argument on these arches,
// whatever the page size (the kernel divides again by PAGE_SIZE/4096 on
// mips: sys_mips_mmap2 in arch/mips/kernel/syscall.c).
const mmap2Unit = 4096

// mmap is mmap(2) through x/sys/unix's stub, without its mapping table
// (see Mmap). On 32-bit x86, arm and mips the call is mmap2, whose last
// argument is the offset in 4096-byte units (sys_mmap_pgoff): 386's
// SYS_MMAP is old_mmap, one pointer to the six arguments
// (arch/x86/entry/syscalls/syscall_32.tbl); arm's EABI has no mmap, 90 is
// OABI only (arch/arm/tools/syscall.tbl); mips' o32 mmap takes a 32-bit
// byte offset, cut past 4 GiB. x/sys/unix's mmap makes the same call.
func mmap(addr, length uintptr, prot, flags, fd int, offset int64) (uintptr, error) {
	units, err := mmap2Offset(offset)
	if err != nil {
		return 0, err
	}
	p, _, e := unix.Syscall6(unix.SYS_MMAP2, addr, length, uintptr(prot), uintptr(flags), uintptr(fd), units)
	if e != 0 {
		return 0, e
	}
	return p, nil
}

// mmap2Offset converts a byte offset into mmap2's argument: EINVAL if it
// is negative or not a multiple of 4096 (what the kernel answers for an
// offset off its page size), EOVERFLOW if it does not fit the 32-bit
// argument (past 16 TiB; mmap(2), "EOVERFLOW").
func mmap2Offset(offset int64) (uintptr, error) {
	if offset < 0 || offset%mmap2Unit != 0 {
		return 0, unix.EINVAL
	}
	units := offset / mmap2Unit
	if uint64(units) > uint64(^uintptr(0)) {
		return 0, unix.EOVERFLOW
	}
	return uintptr(units), nil
}
