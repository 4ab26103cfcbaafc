//go:build linux

package mlx5sim

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// An event is one eventfd write of the CQ's handle, read back whole; a
// second before the first is read would be added to it, and is refused.
func TestWriteEventFD(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ev := []byte{1, 2, 3, 4, 5, 6, 7, 0}
	if err := writeEventFD(SelfMem(), fd, ev); err != nil {
		t.Fatal(err)
	}
	if err := writeEventFD(LocalMem{}, fd, ev); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("second event before the first was read: %v", err)
	}
	var b [8]byte
	if n, err := unix.Read(fd, b[:]); n != 8 || err != nil || string(b[:]) != string(ev) {
		t.Fatalf("read %d %v % x", n, err, b)
	}
	if err := writeEventFD(newFakeMem(), fd, ev); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("a Mem with no process: %v", err)
	}
}
