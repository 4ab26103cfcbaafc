package barrier

import "unsafe"

// doorbellWC is DoorbellWC in assembly (barrier_amd64.s); with release
// not nil, it ends with a store of 0 there (x86-TSO: a release store),
// for DoorbellWCUnlock.
//
//go:noescape
func doorbellWC(rec *uint32, val uint32, dst, src1 unsafe.Pointer, n1 uintptr, src2 unsafe.Pointer, n2 uintptr, release *uint32)
