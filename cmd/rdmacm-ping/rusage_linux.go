package main

import "golang.org/x/sys/unix"

// selfUsage returns this process's context switches (voluntary and not,
// all threads) and minor page faults. getrusage is a raw syscall in
// x/sys/unix: it does not pass through the scheduler, so reading it
// neither wakes Go's sysmon nor counts a switch of its own (issue 17:
// -cmtime-usage prints both per cmtime step).
func selfUsage() (switches, minorFaults int64, ok bool) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0, 0, false
	}
	return int64(ru.Nvcsw) + int64(ru.Nivcsw), int64(ru.Minflt), true // int32 on 386
}
