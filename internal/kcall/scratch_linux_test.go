package kcall

import (
	"testing"
	"unsafe"
)

// The doorbell response word is one page for the process, mapped once,
// outside the Go heap, and writable (the kernel writes bad_wr there).
func TestSinkPtrIsOnePageOutsideTheHeap(t *testing.T) {
	p := SinkPtr()
	if p == 0 || p%8 != 0 {
		t.Fatalf("SinkPtr() = %#x on Linux, want a mapped, aligned address", p)
	}
	if q := SinkPtr(); q != p {
		t.Fatalf("SinkPtr() moved from %#x to %#x", p, q)
	}
	w := (*uint64)(unsafe.Add(unsafe.Pointer(nil), uintptr(p)))
	*w = 0x1234 // faults if not mapped writable
	if n := testing.AllocsPerRun(100, func() { _ = SinkPtr() }); n != 0 {
		t.Errorf("SinkPtr allocates %v times per call after the first", n)
	}
}

// In copies its input (scratch page, or a pinned copy) and keeps no
// reference to it, so a request built on the caller's stack stays there
// (MODIFY_QP's body was an allocation per command).
func TestIoctlInKeepsTheCallersBufferOnItsStack(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		var body [112]byte
		body[0] = 1
		c := NewIoctl(1, 2, 3)
		c.In(4, body[:])
		if got := c.s.mem[0]; got != 1 {
			t.Fatalf("scratch copy starts with %d, want 1", got)
		}
		c.finish()
	})
	if n != 0 {
		t.Errorf("NewIoctl + In + finish: %v allocations, want 0", n)
	}
}
