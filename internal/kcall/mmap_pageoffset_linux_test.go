//go:build linux && (386 || arm || mips || mipsle)

package kcall

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// mmap2's offset is in 4096-byte units and 32 bits wide on these arches.
func TestMmap2PageOffset(t *testing.T) {
	for _, c := range []struct {
		offset int64
		units  uintptr
		err    error
	}{
		{0, 0, nil},
		{4096, 1, nil},
		{1 << 32, 1 << 20, nil},
		{(1<<32 - 1) * 4096, 1<<32 - 1, nil}, // the last one that fits
		{1 << 44, 0, unix.EOVERFLOW},
		{1<<63 - 4095, 0, unix.EINVAL},
		{4097, 0, unix.EINVAL},
		{2048, 0, unix.EINVAL},
		{-4096, 0, unix.EINVAL},
	} {
		units, err := mmap2Offset(c.offset)
		if units != c.units || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
			t.Errorf("mmap2Offset(%#x) = %#x, %v; want %#x, %v", c.offset, units, err, c.units, c.err)
		}
	}
	// The checks come before the call: nothing is mapped.
	if _, err := Mmap(-1, 1<<44, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); !errors.Is(err, unix.EOVERFLOW) {
		t.Errorf("Mmap at 16 TiB = %v, want EOVERFLOW", err)
	}
}
