package abi

// The fence instructions barrier_amd64.s emits (util/udma_barrier.h,
// __x86_64__), as SetBarrierHook reports them. udma_to_device_barrier is
// a compiler barrier only: no instruction, no hook call.
const (
	instrToDevice   = ""
	instrFromDevice = "lfence"
	instrFlush      = "sfence"
)
