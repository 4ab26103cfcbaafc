package barrier

import "sync/atomic"

// barrierHookBox holds the hook installed by SetHook.
type barrierHookBox struct{ f func(instr string) }

var barrierHook atomic.Pointer[barrierHookBox]

// SetHook makes every barrier function (UDMAToDevice,
// UDMAFromDevice, MMIOFlushWrites) call f just before its barrier
// executes, with the mnemonic of the fence instruction the barrier emits
// on this GOARCH: "lfence" and "sfence" on amd64 (udma_to_device_barrier
// emits no instruction there, only a compiler barrier, and calls
// nothing), "dsb st"/"dsb ld" on arm64, "sync"/"lwsync" on ppc64,
// "fence ow,ow"/"fence ir,ir" on riscv64, and on the architectures of
// barrier_other.go the atomic read-modify-write the fallback uses ("lock
// xadd" on 386, "laa" on s390x, "amadd_db.w" on loong64, "sync" on mips,
// "atomic add" elsewhere). f runs on the goroutine that called the
// barrier; a nil f removes the hook. It stays installed until restore is
// called, which puts back the previous hook.
//
// Only tests call it (internal/mlx5sim records the position of every
// barrier relative to the device-visible stores); with no hook
// installed, a barrier costs one load and a branch more, in its
// assembly. DoorbellWC calls it before each of its fences too.
func SetHook(f func(instr string)) (restore func()) {
	var b *barrierHookBox
	if f != nil {
		b = &barrierHookBox{f}
	}
	old := barrierHook.Swap(b)
	return func() { barrierHook.Store(old) }
}

// callBarrierHook calls the installed hook, if any, with instr (from
// hooked* in barrier.go and hookFlush, which the assembly reaches only
// with a hook installed).
//
//go:noinline
func callBarrierHook(instr string) {
	if h := barrierHook.Load(); h != nil {
		h.f(instr)
	}
}
