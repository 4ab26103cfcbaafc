// Package leakcheck makes a test binary fail when its tests leave file
// descriptors open, as cilium/ebpf's test mains do. A package opts in with
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
//
// Main lists /proc/self/fd before and after m.Run. An fd that is open
// after the tests but was not open before them, or whose number now names
// another file, is a leak: the binary prints each one with its readlink
// target and exits 1. The comparison is exact; nothing is excluded by
// name. Instead, the one lazily opened runtime resource, the netpoller
// (an epoll fd and its netpollBreak eventfd, runtime/netpoll_epoll.go), is
// forced open before the first listing, so it is part of the baseline and
// not charged to the first test that opens a pipe, socket or device. The
// other runtime fds (the cgroup CPU limit files of runtime/cgroup_linux.go)
// and the test framework's inherited fds (the fuzz worker's pipes and shared
// memory, fds 3 to 5) are opened before TestMain, and the framework's own
// files opened inside m.Run (-test.testlogfile, profiles, the pipe
// capturing an example's output) are closed again before m.Run returns.
//
// The goroutines are recorded too (their count and IDs). After m.Run,
// Main waits up to one second for the goroutines the tests started to end
// and for the fd set to match, because a goroutine that is shutting down
// may still be closing an fd. Goroutines still running then are reported
// with their stacks but do not fail the run; fds do. os/signal's loop
// goroutine is not counted: the first signal.Notify (the fuzzing
// coordinator's interrupt handler) starts it for the life of the process.
//
// Limits: an *os.File that a test forgot to close is closed by its
// finalizer if a garbage collection happens to run first, and is then not
// reported. Where /proc/self/fd cannot be read (other systems), Main only
// runs the tests.
package leakcheck

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Settle bounds the wait for goroutines and fds after the tests.
const Settle = time.Second

// Main runs m's tests, checks for leaked fds and exits with the tests'
// code, or 1 when they passed but leaked fds.
func Main(m *testing.M) {
	os.Exit(run(m.Run, os.Stderr, Settle))
}

// MainWithTeardown is Main for test binaries that hold shared fixtures
// (booted guests): teardown runs after the tests and before the fd check,
// so the fixtures' own fds are closed by then.
func MainWithTeardown(m *testing.M, teardown func()) {
	os.Exit(run(func() int {
		code := m.Run()
		teardown()
		return code
	}, os.Stderr, Settle))
}

// fdInfo identifies the open file behind an fd number.
type fdInfo struct {
	target   string // readlink(/proc/self/fd/N)
	dev, ino uint64 // stat through the link: tells a recreated path apart
}

// run runs tests between two fd listings and reports leaks to w.
func run(tests func() int, w io.Writer, settle time.Duration) int {
	warmNetpoller()
	before, err := listFDs()
	if err != nil {
		return tests() // no /proc/self/fd: nothing to compare
	}
	goroutines := runtime.NumGoroutine()
	running := goroutineIDs(allStacks())
	code := tests()

	var leaked, lingering []string
	deadline := time.Now().Add(settle)
	for {
		after, err := listFDs()
		if err != nil {
			fmt.Fprintf(w, "leakcheck: listing fds after the tests: %v\n", err)
			return failed(code)
		}
		leaked = diff(before, after)
		lingering = newGoroutines(running, allStacks())
		if len(leaked) == 0 && len(lingering) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(lingering) > 0 {
		fmt.Fprintf(w, "leakcheck: %d goroutines were running before the tests; %d started by them still run %v after them (reported only, not a failure):\n%s\n",
			goroutines, len(lingering), settle, strings.Join(lingering, "\n\n"))
	}
	if len(leaked) == 0 {
		return code
	}
	fmt.Fprintf(w, "leakcheck: the tests left %d file descriptor(s) open:\n", len(leaked))
	for _, l := range leaked {
		fmt.Fprintf(w, "\t%s\n", l)
	}
	return failed(code)
}

// failed keeps a failing code and turns success into 1.
func failed(code int) int {
	if code == 0 {
		return 1
	}
	return code
}

// warmNetpoller makes the runtime create its epoll fd and eventfd now (it
// does so on the first pollable file: a pipe is one).
func warmNetpoller() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	r.Close()
	w.Close()
}

// diff lists, sorted by fd, the fds of after that before lacks or that
// name another file than they did before.
func diff(before, after map[int]fdInfo) []string {
	var fds []int
	for fd, a := range after {
		if b, ok := before[fd]; !ok || b != a {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	out := make([]string, len(fds))
	for i, fd := range fds {
		out[i] = fmt.Sprintf("fd %d -> %s", fd, after[fd].target)
		if b, ok := before[fd]; ok {
			out[i] += fmt.Sprintf(" (was %s before the tests)", b.target)
		}
	}
	return out
}

func allStacks() []byte {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutineIDs returns the "goroutine N" headers of a runtime.Stack dump.
func goroutineIDs(stacks []byte) map[string]bool {
	ids := map[string]bool{}
	for g := range bytes.SplitSeq(stacks, []byte("\n\n")) {
		id, _, _ := strings.Cut(string(g), " [")
		ids[id] = true
	}
	return ids
}

// newGoroutines returns the stacks of the dump's goroutines that were not
// running before, except os/signal's loop: the first signal.Notify (the
// fuzzing coordinator's interrupt handler, say) starts it for the rest of
// the process.
func newGoroutines(before map[string]bool, stacks []byte) []string {
	var out []string
	for g := range bytes.SplitSeq(bytes.TrimSpace(stacks), []byte("\n\n")) {
		id, _, _ := strings.Cut(string(g), " [")
		if !before[id] && !bytes.Contains(g, []byte("os/signal.loop(")) {
			out = append(out, string(g))
		}
	}
	return out
}
