//go:build amd64 || arm64 || ppc64 || ppc64le || riscv64

package abi

// Barriers for memory a device reads or writes (work queues, doorbell
// records, UAR/BlueFlame pages), one per rdma-core util/udma_barrier.h
// macro, in Go assembly per architecture (barrier_$GOARCH.s). sync/atomic
// orders ordinary cached memory between goroutines only; it neither
// flushes write-combining buffers nor orders stores to WC/uncached MMIO
// against DMA. Each exported function is a small Go wrapper around an
// unexported assembly function: the wrapper reports the fence to the
// test hook (SetBarrierHook, one atomic load and a branch when none is
// installed) and then calls the assembly. The wrappers are written to fit
// the inliner's budget (UDMAFromDeviceBarrier and MMIOFlushWrites cost 79
// of 80: one call site, a function value chosen by the hook check), so
// the data path pays one call per barrier, not two. A call to an assembly function
// is opaque to the compiler, which therefore keeps every load and store
// on its side of it (asm volatile "memory"), also when the wrapper is
// inlined into its caller. The instruction names the hook receives are
// in barrier_$GOARCH.go.

// UDMAToDeviceBarrier is udma_to_device_barrier(): stores to memory the
// device DMA-reads (WQEs) are visible before a later doorbell store.
// amd64: compiler barrier only; arm64: DSB ST; ppc64: SYNC; riscv64:
// FENCE OW,OW.
func UDMAToDeviceBarrier() {
	if instrToDevice != "" { // constant: no hook call where no instruction is emitted
		if barrierHook.Load() != nil {
			callBarrierHook(instrToDevice)
		}
	}
	udmaToDeviceBarrier()
}

// UDMAFromDeviceBarrier is udma_from_device_barrier(): after observing a
// device write (a CQE owner bit), later loads see what the device wrote
// before it. amd64: LFENCE; arm64: DSB LD; ppc64: LWSYNC; riscv64: FENCE
// IR,IR.
func UDMAFromDeviceBarrier() {
	f := udmaFromDeviceBarrier
	if barrierHook.Load() != nil {
		f = hookedFromDevice
	}
	f()
}

// MMIOFlushWrites is mmio_flush_writes() (and mmio_wc_start(), the same
// macro): orders and flushes stores to write-combining MMIO (BlueFlame,
// UAR doorbells). amd64: SFENCE; arm64: DSB ST; ppc64: SYNC; riscv64:
// FENCE OW,OW.
func MMIOFlushWrites() {
	f := mmioFlushWrites
	if barrierHook.Load() != nil {
		f = hookedFlush
	}
	f()
}

// The assembly (barrier_$GOARCH.s).

//go:noescape
func udmaToDeviceBarrier()

//go:noescape
func udmaFromDeviceBarrier()

//go:noescape
func mmioFlushWrites()

// hookedFromDevice and hookedFlush are the barriers with a hook
// installed: the hook first, then the fence.
func hookedFromDevice() {
	callBarrierHook(instrFromDevice)
	udmaFromDeviceBarrier()
}

func hookedFlush() {
	callBarrierHook(instrFlush)
	mmioFlushWrites()
}
