package engine

import (
	"testing"
	"unsafe"
)

// TestConnLayout keeps conn at 256 bytes, the allocator size class that
// puts each conn on whole cache lines, with the fields a TimeWait exit,
// Destroy and release read in its first line.
func TestConnLayout(t *testing.T) {
	var c conn
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is tuned for 64-bit pointers")
	}
	if n := unsafe.Sizeof(c); n != 256 {
		t.Errorf("conn is %d bytes, want 256 (whole cache lines)", n)
	}
	firstLine := map[string]uintptr{
		"localID": unsafe.Offsetof(c.localID) + unsafe.Sizeof(c.localID),
		"parent":  unsafe.Offsetof(c.parent) + unsafe.Sizeof(c.parent),
		"heapIdx": unsafe.Offsetof(c.heapIdx) + unsafe.Sizeof(c.heapIdx),
		"state":   unsafe.Offsetof(c.state) + unsafe.Sizeof(c.state),
		"flags":   unsafe.Offsetof(c.qpState) + unsafe.Sizeof(c.qpState),
		"msg":     unsafe.Offsetof(c.msg) + unsafe.Sizeof(c.msg),
		"listen":  unsafe.Offsetof(c.listen) + unsafe.Sizeof(c.listen),
		"context": unsafe.Offsetof(c.context) + unsafe.Sizeof(c.context),
	}
	for name, end := range firstLine {
		if end > 64 {
			t.Errorf("conn.%s ends at byte %d, past the first cache line", name, end)
		}
	}
}
