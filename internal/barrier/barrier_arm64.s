//go:build !barriermutant

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

// func storeRelease32(p *uint32, v uint32): store-release.
TEXT ·storeRelease32(SB),NOSPLIT|NOFRAME,$0-12
	MOVD	p+0(FP), R0
	MOVWU	v+8(FP), R1
	STLRW	R1, (R0)
	RET
