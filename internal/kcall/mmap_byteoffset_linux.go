//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64 || ppc64le || mips64 || mips64le)

package kcall

import "golang.org/x/sys/unix"

// mmap is mmap(2) through x/sys/unix's stub, without its mapping table
// (see Mmap). Here SYS_MMAP takes six registers and the offset in bytes,
// which the kernel checks against its page size (EINVAL if unaligned):
// ksys_mmap_pgoff(..., off >> PAGE_SHIFT) behind arch/x86/kernel/sys_x86_64.c,
// arch/arm64/kernel/sys.c, arch/riscv/kernel/sys_riscv.c,
// arch/loongarch/kernel/syscall.c, arch/powerpc/kernel/syscalls.c and
// arch/mips/kernel/syscall.c (n64 mips_mmap).
func mmap(addr, length uintptr, prot, flags, fd int, offset int64) (uintptr, error) {
	p, _, e := unix.Syscall6(unix.SYS_MMAP, addr, length, uintptr(prot), uintptr(flags), uintptr(fd), uintptr(offset))
	if e != 0 {
		return 0, e
	}
	return p, nil
}
