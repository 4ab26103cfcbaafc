package barrier

import "unsafe"

// The fence instructions barrier_amd64.s emits (util/udma_barrier.h,
// __x86_64__), as SetHook reports them. udma_to_device_barrier is
// a compiler barrier only: no instruction, no hook call.
const (
	instrToDevice   = ""
	instrFromDevice = "lfence"
	instrFlush      = "sfence"
)

// doorbellWC is DoorbellWC in assembly (barrier_amd64.s); with release
// not nil, it ends with a store of 0 there (x86-TSO: a release store),
// for DoorbellWCUnlock.
//
//go:noescape
func doorbellWC(rec *uint32, val uint32, dst, src1 unsafe.Pointer, n1 uintptr, src2 unsafe.Pointer, n2 uintptr, release *uint32)

// hookFlush is called by doorbellWC before each of its sfences when a
// hook is installed.
//
//lint:ignore U1000 called from barrier_amd64.s
func hookFlush() { callBarrierHook(instrFlush) }
