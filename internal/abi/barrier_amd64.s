#include "textflag.h"

// util/udma_barrier.h, __x86_64__.

// udma_to_device_barrier: asm volatile("" ::: "memory"); the call itself
// is the compiler barrier (x86 keeps stores to WB memory in order).
TEXT ·udmaToDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	RET

// udma_from_device_barrier: lfence.
TEXT ·udmaFromDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	LFENCE
	RET

// mmio_flush_writes / mmio_wc_start: sfence.
TEXT ·mmioFlushWrites(SB),NOSPLIT|NOFRAME,$0-0
	SFENCE
	RET
