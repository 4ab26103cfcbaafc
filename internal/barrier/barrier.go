//go:build amd64 || arm64 || ppc64 || ppc64le || riscv64

package barrier

// Barriers for memory a device reads or writes (work queues, doorbell
// records, UAR/BlueFlame pages), one per rdma-core util/udma_barrier.h
// macro, in Go assembly per architecture (barrier_$GOARCH.s). sync/atomic
// orders ordinary cached memory between goroutines only; it neither
// flushes write-combining buffers nor orders stores to WC/uncached MMIO
// against DMA.
//
// Each exported barrier is a direct call of one assembly function (the
// Go wrapper inlines), which looks at the test hook itself (one load and
// a branch when none is installed) and, with a hook installed, jumps to
// hooked* below: the hook first, then the same fence. A call to an
// assembly function is opaque to the compiler, which therefore keeps
// every load and store on its side of it (asm volatile "memory"). The
// instruction names the hook receives are in barrier_$GOARCH.go.

// UDMAToDevice is udma_to_device_barrier(): stores to memory the
// device DMA-reads (WQEs) are visible before a later doorbell store.
// amd64: compiler barrier only; arm64: DSB ST; ppc64: SYNC; riscv64:
// FENCE OW,OW.
func UDMAToDevice() { udmaToDeviceBarrier() }

// UDMAFromDevice is udma_from_device_barrier(): after observing a
// device write (a CQE owner bit), later loads see what the device wrote
// before it. amd64: LFENCE; arm64: DSB LD; ppc64: LWSYNC; riscv64: FENCE
// IR,IR.
func UDMAFromDevice() { udmaFromDeviceBarrier() }

// MMIOFlushWrites is mmio_flush_writes() (and mmio_wc_start(), the same
// macro): orders and flushes stores to write-combining MMIO (BlueFlame,
// UAR doorbells). amd64: SFENCE; arm64: DSB ST; ppc64: SYNC; riscv64:
// FENCE OW,OW.
func MMIOFlushWrites() { mmioFlushWrites() }

// The assembly (barrier_$GOARCH.s): the hook check, then the fence.

//go:noescape
func udmaToDeviceBarrier()

//go:noescape
func udmaFromDeviceBarrier()

//go:noescape
func mmioFlushWrites()

// The fences alone, for hooked*.

//go:noescape
func toDeviceFence()

//go:noescape
func fromDeviceFence()

//go:noescape
func flushFence()

// hooked* are where the assembly jumps with a hook installed (a tail
// call: they return to the barrier's caller): the hook, then the fence.

//lint:ignore U1000 jumped to from barrier_$GOARCH.s (not on amd64: no instruction there)
func hookedToDevice() {
	callBarrierHook(instrToDevice)
	toDeviceFence()
}

//lint:ignore U1000 jumped to from barrier_$GOARCH.s
func hookedFromDevice() {
	callBarrierHook(instrFromDevice)
	fromDeviceFence()
}

//lint:ignore U1000 jumped to from barrier_$GOARCH.s
func hookedFlush() {
	callBarrierHook(instrFlush)
	flushFence()
}
