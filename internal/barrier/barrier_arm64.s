#include "textflag.h"

// util/udma_barrier.h, __aarch64__. Each barrier first loads the test
// hook (barrierHook; a hook is installed before the barriers it observes
// run, by the same goroutine) and, when one is installed, tail-calls
// hooked* (barrier.go), which reports the fence and then executes it.

// udma_to_device_barrier: dsb st.
TEXT ·udmaToDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	MOVD	·barrierHook(SB), R0
	CBNZ	R0, hooked
	DSB	$14	// DSB ST
	RET
hooked:
	JMP	·hookedToDevice(SB)

// udma_from_device_barrier: dsb ld.
TEXT ·udmaFromDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	MOVD	·barrierHook(SB), R0
	CBNZ	R0, hooked
	DSB	$13	// DSB LD
	RET
hooked:
	JMP	·hookedFromDevice(SB)

// mmio_flush_writes / mmio_wc_start: dsb st.
TEXT ·mmioFlushWrites(SB),NOSPLIT|NOFRAME,$0-0
	MOVD	·barrierHook(SB), R0
	CBNZ	R0, hooked
	DSB	$14	// DSB ST
	RET
hooked:
	JMP	·hookedFlush(SB)

TEXT ·toDeviceFence(SB),NOSPLIT|NOFRAME,$0-0
	DSB	$14	// DSB ST
	RET

TEXT ·fromDeviceFence(SB),NOSPLIT|NOFRAME,$0-0
	DSB	$13	// DSB LD
	RET

TEXT ·flushFence(SB),NOSPLIT|NOFRAME,$0-0
	DSB	$14	// DSB ST
	RET

// func storeRelease32(p *uint32, v uint32): store-release.
TEXT ·storeRelease32(SB),NOSPLIT|NOFRAME,$0-12
	MOVD	p+0(FP), R0
	MOVWU	v+8(FP), R1
	STLRW	R1, (R0)
	RET
