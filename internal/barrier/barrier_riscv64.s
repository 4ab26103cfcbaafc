#include "textflag.h"

// util/udma_barrier.h, __riscv. The Go assembler's FENCE is fence rw,rw;
// the narrower fences are encoded by hand (fm=0, pred, succ, opcode 0x0f;
// I=8 O=4 R=2 W=1).

// udma_to_device_barrier: fence ow,ow.
TEXT ·udmaToDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	WORD	$0x0550000f
	RET

// udma_from_device_barrier: fence ir,ir.
TEXT ·udmaFromDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	WORD	$0x0aa0000f
	RET

// mmio_flush_writes / mmio_wc_start: fence ow,ow.
TEXT ·mmioFlushWrites(SB),NOSPLIT|NOFRAME,$0-0
	WORD	$0x0550000f
	RET

// func storeRelease32(p *uint32, v uint32): fence rw,w (pred RW=3,
// succ W=1), then the store.
TEXT ·storeRelease32(SB),NOSPLIT|NOFRAME,$0-12
	MOV	p+0(FP), X5
	MOVWU	v+8(FP), X6
	WORD	$0x0310000f
	MOVW	X6, 0(X5)
	RET
