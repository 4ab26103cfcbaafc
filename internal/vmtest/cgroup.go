package vmtest

import (
	"fmt"
	"regexp"
	"strconv"
)

// CgroupRoot is where MountCgroup mounts cgroup v2 in a guest.
const CgroupRoot = "/tmp/bench-cg"

// MountCgroup is a guest script that mounts cgroup v2 at CgroupRoot
// unless it is mounted there.
const MountCgroup = "{ grep -q ' " + CgroupRoot + " cgroup2 ' /proc/mounts || { mkdir -p " + CgroupRoot +
	" && mount -t cgroup2 none " + CgroupRoot + "; }; }"

// InCgroup is a guest script that runs cmd alone in a new cgroup named
// name (under CgroupRoot) and then prints the cgroup's CPU time as
// "cpu_usec N": usage_usec counts every thread, and the kernel's work in
// their syscalls, to the microsecond, where the guests' /proc counts in
// 10 ms ticks. Its exit status is cmd's.
func InCgroup(name, cmd string) string {
	d := CgroupRoot + "/" + name
	return fmt.Sprintf(`mkdir %[1]s && sh -c 'echo $$ > %[1]s/cgroup.procs && exec %[2]s'; rc=$?; `+
		`echo "cpu_usec $(sed -n 's/^usage_usec //p' %[1]s/cpu.stat)"; rmdir %[1]s; exit $rc`, d, cmd)
}

var cpuLine = regexp.MustCompile(`(?m)^cpu_usec (\d+)$`)

// CPUUsec reads InCgroup's line from out.
func CPUUsec(out string) (float64, bool) {
	m := cpuLine.FindStringSubmatch(out)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}
