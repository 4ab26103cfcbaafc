//go:build ppc64 || ppc64le

package abi

// The barrier instructions barrier_ppc64x.s emits (util/udma_barrier.h,
// __PPC64__), as SetBarrierHook reports them.
const (
	instrToDevice   = "sync"
	instrFromDevice = "lwsync"
	instrFlush      = "sync"
)
