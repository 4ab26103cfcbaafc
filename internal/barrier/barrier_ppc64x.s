//go:build ppc64 || ppc64le

#include "textflag.h"

// util/udma_barrier.h, __PPC64__. Each barrier first loads the test
// hook (barrierHook; a hook is installed before the barriers it observes
// run, by the same goroutine) and, when one is installed, tail-calls
// hooked* (barrier.go), which reports the fence and then executes it.

// udma_to_device_barrier: sync.
TEXT ·udmaToDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	MOVD	·barrierHook(SB), R3
	CMP	R3, $0
	BNE	hooked
	SYNC
	RET
hooked:
	BR	·hookedToDevice(SB)

// udma_from_device_barrier: lwsync.
TEXT ·udmaFromDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	MOVD	·barrierHook(SB), R3
	CMP	R3, $0
	BNE	hooked
	LWSYNC
	RET
hooked:
	BR	·hookedFromDevice(SB)

// mmio_flush_writes / mmio_wc_start: sync.
TEXT ·mmioFlushWrites(SB),NOSPLIT|NOFRAME,$0-0
	MOVD	·barrierHook(SB), R3
	CMP	R3, $0
	BNE	hooked
	SYNC
	RET
hooked:
	BR	·hookedFlush(SB)

TEXT ·toDeviceFence(SB),NOSPLIT|NOFRAME,$0-0
	SYNC
	RET

TEXT ·fromDeviceFence(SB),NOSPLIT|NOFRAME,$0-0
	LWSYNC
	RET

TEXT ·flushFence(SB),NOSPLIT|NOFRAME,$0-0
	SYNC
	RET

// func storeRelease32(p *uint32, v uint32): lwsync, then the store.
TEXT ·storeRelease32(SB),NOSPLIT|NOFRAME,$0-12
	MOVD	p+0(FP), R3
	MOVWZ	v+8(FP), R4
	LWSYNC
	MOVW	R4, 0(R3)
	RET
