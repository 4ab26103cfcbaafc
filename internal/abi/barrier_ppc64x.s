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
