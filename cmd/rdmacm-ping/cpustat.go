package main

import (
	"os"
	"strconv"
	"strings"
)

// cpuTicks is the machine's CPU time from /proc/stat's "cpu" line, in
// clock ticks (USER_HZ, 100 per second on Linux): user (with nice),
// system, softirq (with irq) and idle (with iowait), and this process's
// user and system time. With -d, cmtime
// prints each step's share, to tell the client's CPU from waiting on the
// peer.
//
// It also counts this process's read and write syscalls (/proc/self/io:
// syscr, syscw; ioctl is not counted) and context switches
// (/proc/self/task/*/status, all threads), the costs that differ between CM backends.
type cpuTicks struct {
	user, system, softirq, idle, selfUser, selfSystem int64
	reads, writes, switches                           int64
}

func readCPUTicks() (cpuTicks, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return cpuTicks{}, false
	}
	var v [7]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return cpuTicks{}, false
		}
	}
	c := cpuTicks{user: v[0] + v[1], system: v[2], idle: v[3] + v[4], softirq: v[5] + v[6]}
	// This process: utime and stime, fields 14 and 15 of /proc/self/stat
	// (counted after the parenthesised command name).
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 13 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				s, _ := strconv.ParseInt(f[12], 10, 64)
				c.selfUser, c.selfSystem = u, s
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		c.reads, c.writes = procField(b, "syscr:"), procField(b, "syscw:")
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		if b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status"); err == nil {
			c.switches += procField(b, "voluntary_ctxt_switches:") + procField(b, "nonvoluntary_ctxt_switches:")
		}
	}
	return c, true
}

// procField is the number after name at the start of a line of b.
func procField(b []byte, name string) int64 {
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func (c cpuTicks) sub(d cpuTicks) cpuTicks {
	return cpuTicks{c.user - d.user, c.system - d.system, c.softirq - d.softirq, c.idle - d.idle, c.selfUser - d.selfUser, c.selfSystem - d.selfSystem,
		c.reads - d.reads, c.writes - d.writes, c.switches - d.switches}
}
