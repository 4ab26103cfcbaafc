package barrier

import (
	"runtime"
	"sync/atomic"
)

// SpinLock is a mutual-exclusion lock for the data path's short critical
// sections, as libmlx5's mlx5_spinlock (a pthread spinlock: one locked
// instruction to take it, a plain store to release it): Lock is a
// compare-and-swap, Unlock a release store (StoreRelease32), where
// sync.Mutex's Unlock is a second locked instruction (LOCK XADD on
// amd64), which waits for every store before it to drain. A waiter
// spins, yielding its P after a few tries (runtime.Gosched): for locks
// held across no blocking call. The zero value is unlocked.
type SpinLock struct{ v uint32 }

// Lock takes l.
func (l *SpinLock) Lock() {
	if !atomic.CompareAndSwapUint32(&l.v, 0, 1) {
		l.lockSlow()
	}
}

func (l *SpinLock) lockSlow() {
	for i := 0; ; i++ {
		if atomic.LoadUint32(&l.v) == 0 && atomic.CompareAndSwapUint32(&l.v, 0, 1) {
			return
		}
		if i >= 16 {
			runtime.Gosched()
		}
	}
}

// Unlock releases l.
func (l *SpinLock) Unlock() { StoreRelease32(&l.v, 0) }
