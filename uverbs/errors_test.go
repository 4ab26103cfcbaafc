package uverbs

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

// TestErrnoMapping: an errno in a uverbs error matches the sentinel of
// rdma.ErrnoSentinel (the table cm and the engine use) and stays reachable.
func TestErrnoMapping(t *testing.T) {
	sentinels := []error{ErrNoDevice, ErrNotSupported, ErrPermission, ErrABIVersion, ErrClosed, ErrQueueFull,
		ErrInvalidArgument, rdma.ErrTimeout, rdma.ErrNoRoute, rdma.ErrRejected, rdma.ErrBusy}
	for errno := syscall.Errno(1); errno < 256; errno++ {
		want := rdma.ErrnoSentinel(errno)
		err := opErr("create QP", "rxe0", fmt.Errorf("detail: %w", errno))
		if !errors.Is(err, errno) {
			t.Errorf("%v: errno not reachable", err)
		}
		for _, s := range sentinels {
			if got := errors.Is(err, s); got != (s == want) {
				t.Errorf("%v: errors.Is(%v) = %v, table says %v", err, s, got, want)
			}
		}
	}
	if err := notSupported("query ECE", "rxe0", "no ECE"); !errors.Is(err, ErrNotSupported) || !errors.Is(err, syscall.EOPNOTSUPP) ||
		err.Error() != "uverbs: query ECE on rxe0: no ECE: "+syscall.EOPNOTSUPP.Error() {
		t.Errorf("notSupported: %v", err)
	}
}
