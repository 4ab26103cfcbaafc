//go:build !amd64 && !arm64 && !ppc64 && !ppc64le && !riscv64

package barrier

import "sync/atomic"

// Fallback for the architectures without a barrier_$GOARCH.s (386, s390x,
// loong64, mips*, wasm...): a sequentially consistent atomic
// read-modify-write, which the Go runtime implements with a full
// hardware barrier on each of them (386: LOCK XADD, the same locked
// instruction udma_barrier.h uses there; s390x: serialising
// interlocked-access; loong64: DBAR around AMADD; mips: SYNC around LL/SC).
// It is at least as strong as every udma_barrier.h macro for CPU-visible
// ordering. It is not s390x's PCI write barrier (s390_pciwb), and s390x
// reaches MMIO through system calls in rdma-core anyway: the mlx5 data
// path is only claimed on amd64, arm64, ppc64le and riscv64.
//
// The atomic add is a compiler intrinsic; the compiler does not move
// loads and stores across it either.

var barrierWord atomic.Uint32

// UDMAToDevice is udma_to_device_barrier() (see barrier.go).
func UDMAToDevice() { barrierWord.Add(1) }

// UDMAFromDevice is udma_from_device_barrier() (see barrier.go).
func UDMAFromDevice() { barrierWord.Add(1) }

// MMIOFlushWrites is mmio_flush_writes() (see barrier.go).
func MMIOFlushWrites() { barrierWord.Add(1) }
