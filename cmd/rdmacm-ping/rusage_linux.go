package main

import "golang.org/x/sys/unix"

// selfUsage returns this process's context switches (voluntary and not,
// all threads) and minor page faults. getrusage is a raw syscall in
// x/sys/unix: it does not pass through the scheduler, so reading it
// neither wakes Go's sysmon nor counts a switch of its own (-cmtime-usage
// prints both per cmtime step).
//
// threadSwitches are those of the calling thread (RUSAGE_THREAD): the
// step's goroutine runs on one thread with GOMAXPROCS=1, so the rest are
// other threads' (sysmon's wake-ups, a handed-off P).
func selfUsage() (switches, threadSwitches, minorFaults int64, ok bool) {
	var ru, rt unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil || unix.Getrusage(unix.RUSAGE_THREAD, &rt) != nil {
		return 0, 0, 0, false
	}
	return int64(ru.Nvcsw) + int64(ru.Nivcsw), int64(rt.Nvcsw) + int64(rt.Nivcsw), int64(ru.Minflt), true // int32 on 386
}
