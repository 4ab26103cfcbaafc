package kcall

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// MmapAnonAt maps n bytes of zeroed private anonymous memory at exactly
// addr (MAP_FIXED_NOREPLACE: EEXIST when anything is mapped there).
func MmapAnonAt(addr uint64, n int) ([]byte, error) {
	if uint64(uintptr(addr)) != addr { // past a 32-bit address space, as the kernel answers
		return nil, unix.ENOMEM
	}
	p, err := mmap(uintptr(addr), uintptr(n), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, -1, 0)
	if err != nil {
		return nil, err
	}
	if uint64(p) != addr { // kernels before 4.17 treat the flag as a hint
		Munmap(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), n))
		return nil, unix.EEXIST
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), p)), n), nil
}
