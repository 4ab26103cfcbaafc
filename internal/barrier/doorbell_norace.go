//go:build !race

package barrier

import "unsafe"

func doorbellWCUnlock(l *SpinLock, rec *uint32, val uint32, dst, src1 unsafe.Pointer, n1 uintptr, src2 unsafe.Pointer, n2 uintptr) {
	doorbellWC(rec, val, dst, src1, n1, src2, n2, &l.v)
}
