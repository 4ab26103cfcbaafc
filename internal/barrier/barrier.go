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
// Go wrapper inlines) that is the fence and nothing else: the tests
// observe the executed instructions themselves (internal/mlx5sim runs
// the provider under qemu-user with a TCG plugin that reports every
// barrier instruction), so the code they trace is the code that runs. A
// call to an assembly function is opaque to the compiler, which
// therefore keeps every load and store on its side of it (asm volatile
// "memory").

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

// The assembly (barrier_$GOARCH.s).

//go:noescape
func udmaToDeviceBarrier()

//go:noescape
func udmaFromDeviceBarrier()

//go:noescape
func mmioFlushWrites()
