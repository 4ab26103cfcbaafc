package uverbs

import (
	"runtime"
	"sync/atomic"
	"time"
)

// schedPassPeriod is how often a blocking waiter passes through the
// scheduler: well under sysmon's 10 ms (forcePreemptNS), which sysmon
// compares at its own ticks.
const schedPassPeriod = 5 * time.Millisecond

// schedPass makes a goroutine that loops on blocking syscalls pass
// through the scheduler now and then. The runtime's sysmon takes the P
// of a thread in a syscall when the goroutine has gone 10 ms without
// being rescheduled, at every tick that finds it in a syscall, idle Ps
// or not; a syscall that returns on the fast path does not reschedule.
// Each take wakes another thread that finds nothing to do and sleeps
// again: two futex calls and sysmon's shorter sleeps per wait, where C
// makes one read (bench/syscalls/waitcost measures it on the host). One
// runtime.Gosched every schedPassPeriod resets the count.
type schedPass struct{ last atomic.Int64 } // time.Since(epoch) of the last pass, ns

// epoch anchors schedPass's monotonic readings.
var epoch = time.Now()

// due reports whether a pass is due at now (ns since epoch) and, if so,
// records it.
func (s *schedPass) due(now int64) bool {
	last := s.last.Load()
	return now-last >= int64(schedPassPeriod) && s.last.CompareAndSwap(last, now)
}

// maybeAt passes through the scheduler when a pass is due at now (ns
// since epoch).
func (s *schedPass) maybeAt(now int64) {
	if s.due(now) {
		runtime.Gosched()
	}
}
