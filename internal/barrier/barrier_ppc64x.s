//go:build ppc64 || ppc64le

#include "textflag.h"

// util/udma_barrier.h, __PPC64__.

// udma_to_device_barrier: sync.
TEXT ·udmaToDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	SYNC
	RET

// udma_from_device_barrier: lwsync.
TEXT ·udmaFromDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	LWSYNC
	RET

// mmio_flush_writes / mmio_wc_start: sync.
TEXT ·mmioFlushWrites(SB),NOSPLIT|NOFRAME,$0-0
	SYNC
	RET

// func storeRelease32(p *uint32, v uint32): lwsync, then the store.
TEXT ·storeRelease32(SB),NOSPLIT|NOFRAME,$0-12
	MOVD	p+0(FP), R3
	MOVWZ	v+8(FP), R4
	LWSYNC
	MOVW	R4, 0(R3)
	RET
