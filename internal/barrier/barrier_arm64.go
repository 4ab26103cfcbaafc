package barrier

// The barrier instructions barrier_arm64.s emits (util/udma_barrier.h,
// __aarch64__), as SetHook reports them.
const (
	instrToDevice   = "dsb st"
	instrFromDevice = "dsb ld"
	instrFlush      = "dsb st"
)
