//go:build barriermutant

#include "textflag.h"

// The mutants of barrier_amd64.s (build tag barriermutant, for
// internal/mlx5sim's TestFenceMutantsCaught): the same code, where a
// mutant selected by MLX5_FENCE_MUTANT (barrier_mutant.go) skips one
// fence instruction.

// util/udma_barrier.h, __x86_64__.

// udma_to_device_barrier: asm volatile("" ::: "memory"); the call itself
// is the compiler barrier (x86 keeps stores to WB memory in order). No
// instruction.
TEXT ·udmaToDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	RET

// udma_from_device_barrier: lfence.
TEXT ·udmaFromDeviceBarrier(SB),NOSPLIT|NOFRAME,$0-0
	CMPB	·mutantNoLFENCE(SB), $0
	JNE	skip
	LFENCE
skip:
	RET

// mmio_flush_writes / mmio_wc_start: sfence.
TEXT ·mmioFlushWrites(SB),NOSPLIT|NOFRAME,$0-0
	SFENCE
	RET

// COPY64 copies 64 bytes from SI to DI in eight 8-byte moves and
// advances both.
#define COPY64 \
	MOVQ	0(SI), AX; MOVQ	AX, 0(DI); \
	MOVQ	8(SI), AX; MOVQ	AX, 8(DI); \
	MOVQ	16(SI), AX; MOVQ	AX, 16(DI); \
	MOVQ	24(SI), AX; MOVQ	AX, 24(DI); \
	MOVQ	32(SI), AX; MOVQ	AX, 32(DI); \
	MOVQ	40(SI), AX; MOVQ	AX, 40(DI); \
	MOVQ	48(SI), AX; MOVQ	AX, 48(DI); \
	MOVQ	56(SI), AX; MOVQ	AX, 56(DI); \
	ADDQ	$64, SI; ADDQ	$64, DI

// func doorbellWC(rec *uint32, val uint32, dst, src1 unsafe.Pointer, n1 uintptr, src2 unsafe.Pointer, n2 uintptr, release *uint32)
//
// providers/mlx5/qp.c post_send_db from udma_to_device_barrier to
// mmio_flush_writes, for a doorbell that needs no lock: the record
// store, sfence (mmio_wc_start), n1 bytes from src1 then n2 from src2
// to dst in 8-byte stores, eight per 64 bytes (mmio_memcpy_x64's x86-64
// loop; n1 is 8, mmio_write64_be, with n2 = 0, or a multiple of 64 and
// n2 one too, possibly 0), sfence (mmio_flush_writes). Last, with
// release not nil, a store of 0 there: under x86-TSO a plain store is a
// release store (the caller's SpinLock unlocked, DoorbellWCUnlock).
TEXT ·doorbellWC(SB),NOSPLIT|NOFRAME,$0-64
	// udma_to_device_barrier: this call.
	MOVQ	rec+0(FP), AX
	MOVL	val+8(FP), BX
	MOVL	BX, (AX)
	// mmio_wc_start.
	SFENCE
	MOVQ	dst+16(FP), DI
	MOVQ	src1+24(FP), SI
	MOVQ	n1+32(FP), CX
	CMPQ	CX, $8
	JNE	copy1
	// mmio_write64_be of the ctrl segment's first 8 bytes.
	MOVQ	(SI), AX
	MOVQ	AX, (DI)
	JMP	flush
copy1:
	COPY64
	SUBQ	$64, CX
	JNE	copy1
	MOVQ	src2+40(FP), SI
	MOVQ	n2+48(FP), CX
	TESTQ	CX, CX
	JEQ	flush
copy2:
	COPY64
	SUBQ	$64, CX
	JNE	copy2
flush:
	// mmio_flush_writes.
	CMPB	·mutantNoFinalSFENCE(SB), $0
	JNE	nofence
	SFENCE
nofence:
	MOVQ	release+56(FP), AX
	TESTQ	AX, AX
	JEQ	done
	MOVL	$0, (AX)
done:
	RET
