#include "textflag.h"

// util/udma_barrier.h, __aarch64__.

// udma_to_device_barrier: dsb st.
TEXT ·udmaToDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	DSB	$14	// DSB ST
	RET

// udma_from_device_barrier: dsb ld.
TEXT ·udmaFromDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	DSB	$13	// DSB LD
	RET

// mmio_flush_writes / mmio_wc_start: dsb st.
TEXT ·mmioFlushWrites(SB),NOSPLIT|NOFRAME,$0-0
	DSB	$14	// DSB ST
	RET
