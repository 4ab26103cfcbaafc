//go:build !amd64

package barrier

import "unsafe"

// doorbellWC is DoorbellWC from the barrier functions.
// With release not nil, a release store of 0 there ends it
// (DoorbellWCUnlock).
func doorbellWC(rec *uint32, val uint32, dst, src1 unsafe.Pointer, n1 uintptr, src2 unsafe.Pointer, n2 uintptr, release *uint32) {
	UDMAToDevice()
	*rec = val
	MMIOFlushWrites()
	copyWC(dst, src1, n1)
	copyWC(unsafe.Add(dst, n1), src2, n2)
	mutantFinalFlush()
	if release != nil {
		StoreRelease32(release, 0)
	}
}

// copyWC copies n bytes in 8-byte stores (mmio_memcpy_x64 and
// mmio_write64_be on 64-bit hosts).
func copyWC(dst, src unsafe.Pointer, n uintptr) {
	for i := uintptr(0); i < n; i += 8 {
		*(*uint64)(unsafe.Add(dst, i)) = *(*uint64)(unsafe.Add(src, i))
	}
}
