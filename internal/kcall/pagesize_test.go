package kcall

import (
	"os"
	"testing"
)

type pageDevice struct {
	TestDevice
	n int
}

func (d pageDevice) PageSize() int { return d.n }

func TestPageSize(t *testing.T) {
	if got := PageSize(); got != os.Getpagesize() {
		t.Fatalf("PageSize() = %d without a test device, want the host's %d", got, os.Getpagesize())
	}
	for _, n := range []int{16384, 65536} {
		restore := SetTestDevice(pageDevice{n: n})
		got := PageSize()
		restore()
		if got != n {
			t.Errorf("PageSize() = %d under a %d-byte test device", got, n)
		}
	}
	restore := SetTestDevice(pageDevice{})
	defer restore()
	if got := PageSize(); got != os.Getpagesize() {
		t.Errorf("PageSize() = %d under a device that says none, want the host's %d", got, os.Getpagesize())
	}
}
