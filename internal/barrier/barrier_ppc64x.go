//go:build ppc64 || ppc64le

package barrier

// The barrier instructions barrier_ppc64x.s emits (util/udma_barrier.h,
// __PPC64__), as SetHook reports them.
const (
	instrToDevice   = "sync"
	instrFromDevice = "lwsync"
	instrFlush      = "sync"
)
