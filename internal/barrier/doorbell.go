package barrier

import "unsafe"

// DoorbellWC is the doorbell sequence of post_send_db
// (providers/mlx5/qp.c) for a doorbell register that needs no lock, from
// udma_to_device_barrier to mmio_flush_writes, in one call:
//
//	udma_to_device_barrier();
//	*rec = val;
//	mmio_wc_start();
//	copy n1 bytes from src1, then n2 bytes from src2, to dst;
//	mmio_flush_writes();
//
// The copy is mmio_memcpy_x64 (a BlueFlame copy: 64-byte multiples, the
// source wrapping at the end of the send queue, so in two parts) or,
// with n1 = 8 and n2 = 0, mmio_write64_be of the ctrl segment's first 8
// bytes. dst and the sources are 8-byte aligned; n1 is 8 and n2 0, or
// n1 is a positive multiple of 64 and n2 a multiple of 64. On amd64 it is one assembly function (a Go call keeps no value
// in a register across a call, so one call instead of three saves the
// spills around each); elsewhere it is the same sequence of barrier
// calls.
func DoorbellWC(rec *uint32, val uint32, dst, src1 unsafe.Pointer, n1 uintptr, src2 unsafe.Pointer, n2 uintptr) {
	doorbellWC(rec, val, dst, src1, n1, src2, n2, nil)
}

// DoorbellWCUnlock is DoorbellWC followed by l.Unlock(), in the same
// call: post_send_db runs under the send queue's lock, which libmlx5
// releases right after it (mlx5_spin_unlock), and here the release
// store is the assembly's last instruction instead of a call of its
// own. Under the race detector it is DoorbellWC and then l.Unlock()
// (doorbell_race.go), so that the detector sees the unlock.
func DoorbellWCUnlock(l *SpinLock, rec *uint32, val uint32, dst, src1 unsafe.Pointer, n1 uintptr, src2 unsafe.Pointer, n2 uintptr) {
	doorbellWCUnlock(l, rec, val, dst, src1, n1, src2, n2)
}
