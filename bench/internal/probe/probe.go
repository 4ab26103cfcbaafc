// Package probe holds what the Go experiments in bench/ share with their C
// twins: medians in µs, the process's memory on transparent huge pages,
// and the window marks that tbcount's QEMU plugin dumps its counts at.
package probe

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Median returns the middle of v (the upper one for an even count), as
// the C tools print it; v is not reordered.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// US is d in microseconds, the unit every table of the step tools uses.
func US(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// AnonHugeKB is the process's memory on transparent huge pages
// (AnonHugePages of /proc/self/smaps_rollup), -1 if unknown.
func AnonHugeKB() int {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// Mark replaces $QPCYCLE_MARK (a file in the 9p share that tbcount's
// plugin watches) with "PROG LABEL", by a rename so that the host sees one
// change, and waits 100 ms for the host to dump. Without the variable it
// does nothing.
func Mark(prog, label string) {
	p := os.Getenv("QPCYCLE_MARK")
	if p == "" {
		return
	}
	err := os.WriteFile(p+".tmp", []byte(prog+" "+label+"\n"), 0o644)
	if err == nil {
		err = os.Rename(p+".tmp", p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, prog+": mark:", err) // the window is lost, the run goes on
	}
	time.Sleep(100 * time.Millisecond)
}
