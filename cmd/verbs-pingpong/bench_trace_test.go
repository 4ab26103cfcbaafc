package main

import (
	"fmt"
	"testing"
)

// A trace as guest a's ftrace writes it: setup writes of other lengths,
// three doorbells (two iterations), runtime calls between them with user
// stacks, teardown after the last.
const sampleTrace = `# tracer: nop
#
# entries-in-buffer/entries-written: 12/12   #P:1
  verbs-pingpong-2199    [000] .....    38.600000: sys_write(fd: 5, buf: c000012000, count: 34)
  verbs-pingpong-2199    [000] .....    38.600001: sys_openat(dfd: ffffff9c, filename: 85b3e0, flags: 0, mode: 0)
  verbs-pingpong-2199    [000] .....    38.604856: sys_write(fd: 3, buf: c000010000, count: 20)
  verbs-pingpong-2199    [000] .....    38.604857: <user stack trace>
 =>  <0000000000000010>
 =>  <0000000000000020>
  verbs-pingpong-2200    [000] .....    38.605000: sys_futex(uaddr: 8809c8, op: 81, val: 1, utime: 0, uaddr2: 0, val3: 0)
  verbs-pingpong-2200    [000] .....    38.605001: <user stack trace>
 =>  <0000000000000030>
 =>  <0000000000000040>
 =>  <0000000000000050>
 =>  <0000000000000060>
 =>  <0000000000000070>
 =>  <0000000000000080>
  verbs-pingpong-2200    [000] .....    38.605100: sys_nanosleep(rqtp: c000045f00, rmtp: 0)
  verbs-pingpong-2199    [000] .....    38.606000: sys_write(fd: 3, buf: c000010000, count: 20)
  verbs-pingpong-2200    [000] .....    38.606100: sys_futex(uaddr: 8809c8, op: 80, val: 0, utime: 0, uaddr2: 0, val3: 0)
  verbs-pingpong-2199    [000] .....    38.607000: sys_write(fd: 3, buf: c000010000, count: 20)
  verbs-pingpong-2199    [000] .....    38.607100: sys_close(fd: 3)
  verbs-pingpong-2199    [000] .....    38.607200: sys_write(fd: 5, buf: c000012000, count: 5)
`

func TestCountTraceBetweenDoorbells(t *testing.T) {
	sym := func(pc uint64) string { return fmt.Sprintf("f%x", pc) }
	calls, byStack, n := countTrace(sampleTrace, true, sym)
	if n != 3 {
		t.Fatalf("%d doorbells, want 3", n)
	}
	// Two iterations: writes 2, futex 2, nanosleep 1; not the openat,
	// close or the other writes outside the window.
	want := map[string]float64{"write": 1, "futex": 1, "nanosleep": 0.5}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	// A stack keeps its first five frames.
	if got := byStack["futex: f30 < f40 < f50 < f60 < f70"]; got != 0.5 {
		t.Errorf("futex stack: %v per iteration in %v", got, byStack)
	}
	if got := byStack["write: f10 < f20"]; got != 0.5 {
		t.Errorf("doorbell stack: %v per iteration in %v", got, byStack)
	}
	if _, _, n := countTrace("", false, sym); n != 0 {
		t.Errorf("empty trace: %d doorbells", n)
	}
}

func TestFormatCallsRanges(t *testing.T) {
	got := formatCalls([]map[string]float64{
		{"write": 1, "futex": 4.3, "nanosleep": 0.001},
		{"write": 1, "futex": 4.61, "read": 0.5},
	})
	want := "total 5.30–6.11 | futex 4.30–4.61 write 1.00 read 0.00–0.50"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if s := formatCalls(nil); s != "no runs" {
		t.Errorf("no runs: %q", s)
	}
}
