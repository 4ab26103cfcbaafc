// Package barrier holds the memory barriers and doorbell writes of the
// verbs data paths: one function per rdma-core util/udma_barrier.h macro
// (UDMAToDevice, UDMAFromDevice, MMIOFlushWrites), the mlx5 doorbell and
// BlueFlame sequence (DoorbellWC, DoorbellWCUnlock), the send queue's
// spin lock (SpinLock) and its release store (StoreRelease32). No test
// hook: internal/mlx5sim observes the barrier instructions these execute
// (a QEMU plugin), so what is traced is what runs.
//
// They are Go assembly per architecture (barrier_$GOARCH.s) because Go
// has no fence that orders CPU stores against a device's DMA reads or
// flushes write-combining buffers: sync/atomic orders cached memory
// between goroutines only. An assembly call is also opaque to the
// compiler, so no load or store moves across it (C's asm volatile
// "memory"). Architectures without assembly use an atomic
// read-modify-write, a full barrier there (barrier_other.go).
//
// unsafe: DoorbellWC copies a work queue entry to an mmap'd BlueFlame
// register by address; nothing here touches the Go heap by address.
package barrier
