package barrier

// The fence instructions barrier_riscv64.s emits (util/udma_barrier.h,
// __riscv), as SetHook reports them.
const (
	instrToDevice   = "fence ow,ow"
	instrFromDevice = "fence ir,ir"
	instrFlush      = "fence ow,ow"
)
