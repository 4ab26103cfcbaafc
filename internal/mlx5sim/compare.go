//go:build linux

package mlx5sim

import (
	"fmt"
	"regexp"
	"strings"
)

// Trace format: one event per line.
//
//	GET_CONTEXT ctx0 drv{...} -> ok nvec=8 drv_out{...} @ioctl   a command, its answer, the interface
//	~ QUERY_PORT port=1 -> ok @ioctl                            "~": legitimately differs, not compared
//	MMAP off=0x0 cmd=0 idx=0 len=4096 prot=0x2 uar0 -> ok      an mmap of the uverbs fd
//	MUNMAP uar0 len=4096
//	snap L5: qp q1 rc c1 c1 sq=4 ...                            a snapshot: changed 64-byte chunks,
//	  cq0.buf+0x0000: 0000000000000000 ...                      then the hash of unchanged regions
//	  unchanged 3 regions hash=...
//	bind q1=qp0                                                 scenario name of a trace object
//	exec cqe c1 op=req qp=q1 counter=0                          a device-side line, then what it wrote
//	rec wc wr_id=1 status=0 ...                                 a line recorded by an interpreter
//	fence sfence                                                a barrier instruction about to execute,
//	  qp0.db+0x0000: 0000000000000001                          then the doorbell records and UAR pages
//	                                                            that changed since the last fence or snap
//
// Compare drops "~" lines and the "@iface" field.

var ifaceField = regexp.MustCompile(` @[a-z-]+$`)

// Normalize returns the lines Compare compares: "~" lines dropped and,
// unless keepIface, the trailing " @iface" removed.
func Normalize(trace []string, keepIface bool) []string {
	var out []string
	for _, l := range trace {
		if strings.HasPrefix(l, "~ ") {
			continue
		}
		if !keepIface {
			l = ifaceField.ReplaceAllString(l, "")
		}
		out = append(out, l)
	}
	return out
}

// DropFences returns trace without its fence events (a "fence" line and
// the indented lines after it), which changes nothing else: snapshots do
// not depend on fences. Fences are recorded only under qemu-user with
// c/fenceplugin.c.
func DropFences(trace []string) []string {
	var out []string
	in := false
	for _, l := range trace {
		if strings.HasPrefix(l, "fence ") {
			in = true
			continue
		}
		if in && strings.HasPrefix(l, "  ") {
			continue
		}
		in = false
		out = append(out, l)
	}
	return out
}

// Compare compares the C and the Go trace (ignoring "~" lines and the
// interface used) and returns a readable report of the first difference,
// or nil when they match.
func Compare(c, g []string) error {
	return compare(Normalize(c, false), Normalize(g, false))
}

// CompareIface is Compare that also requires the same interface per
// command.
func CompareIface(c, g []string) error {
	return compare(Normalize(c, true), Normalize(g, true))
}

func compare(a, b []string) error {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return nil
	}
	var s strings.Builder
	fmt.Fprintf(&s, "traces differ at line %d (C %d lines, Go %d lines):\n", i+1, len(a), len(b))
	for k := max(0, i-3); k < i; k++ {
		fmt.Fprintf(&s, "  %s\n", a[k])
	}
	const window = 400
	ea, eb := min(len(a), i+window), min(len(b), i+window)
	shown := 0
	for _, d := range lineDiff(a[i:ea], b[i:eb]) {
		if shown >= 40 {
			s.WriteString("  ...\n")
			break
		}
		s.WriteString(d + "\n")
		shown++
	}
	return fmt.Errorf("%s", strings.TrimRight(s.String(), "\n"))
}

// lineDiff is a small LCS diff: " " common, "-" only in C, "+" only in Go.
func lineDiff(a, b []string) []string {
	n, m := len(a), len(b)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case j < m && (i == n || l[i][j+1] >= l[i+1][j]):
			out = append(out, "+ "+b[j]+"   (Go)")
			j++
		default:
			out = append(out, "- "+a[i]+"   (C)")
			i++
		}
	}
	return out
}
