package unix_test

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

func TestErrNotSupported(t *testing.T) {
	if got, want := unix.ErrNotSupported.Error(), "not supported on "+runtime.GOOS; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	err := fmt.Errorf("open: %w", unix.ErrNotSupported)
	for _, target := range []error{rdma.ErrNotSupported, unix.EOPNOTSUPP, syscall.ENOTSUP, syscall.EOPNOTSUPP} {
		if !errors.Is(err, target) {
			t.Errorf("%v does not match %v", err, target)
		}
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, rdma.ErrInvalidArgument) {
		t.Errorf("%v matches EINVAL", err)
	}
	wrapped := &rdma.OpError{Pkg: "uverbs", Op: "open", Err: unix.ErrNotSupported}
	if !errors.Is(wrapped, rdma.ErrNotSupported) || wrapped.Error() != "uverbs: open: not supported on "+runtime.GOOS {
		t.Errorf("wrapped: %v", wrapped)
	}
}

// Off Linux every call fails with ErrNotSupported; on Linux they are
// x/sys/unix's.
func TestCalls(t *testing.T) {
	_, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if unix.IsLinux {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != unix.ErrNotSupported {
		t.Errorf("Open: %v, want ErrNotSupported", err)
	}
	if _, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != unix.ErrNotSupported {
		t.Errorf("Mmap: %v, want ErrNotSupported", err)
	}
}

func TestPure(t *testing.T) {
	if got := unix.ByteSliceToString([]byte("6.12.0\x00junk")); got != "6.12.0" {
		t.Errorf("ByteSliceToString = %q", got)
	}
	if dev := uint64(0xe7c0); unix.Major(dev) != 231 || unix.Minor(dev) != 192 { // uverbs0
		t.Errorf("Major/Minor(%#x) = %d, %d, want 231, 192", dev, unix.Major(dev), unix.Minor(dev))
	}
}
