package errfmt_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/internal/errfmt"
	"github.com/go-rdma/rdmacm/rdma"
)

func TestWrap(t *testing.T) {
	if errfmt.Wrap("cm", "connect", nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	inner := fmt.Errorf("uverbs: create QP on rxe0: %w", syscall.ENOMEM)
	err := errfmt.Wrap("cm", "create QP", inner)
	if want := "cm: create QP: create QP on rxe0: " + syscall.ENOMEM.Error(); err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if !errors.Is(err, syscall.ENOMEM) || !errors.Is(err, inner) {
		t.Errorf("%v: cause or errno not reachable", err)
	}
	if err := errfmt.Wrap("cm", "", syscall.EACCES); err.Error() != "cm: "+syscall.EACCES.Error() || !errors.Is(err, rdma.ErrPermission) {
		t.Errorf("%v: want the errno's text and ErrPermission", err)
	}
}

func TestErrorf(t *testing.T) {
	inner := fmt.Errorf("qp: RC INIT→RTR: missing %w", syscall.EINVAL)
	err := errfmt.Errorf("engine: accept ID %#x: %w: %w", 7, rdma.ErrInvalidArgument, inner)
	if want := "engine: accept ID 0x7: invalid argument: RC INIT→RTR: missing " + syscall.EINVAL.Error(); err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if !errors.Is(err, rdma.ErrInvalidArgument) || !errors.Is(err, syscall.EINVAL) || !errors.Is(err, inner) {
		t.Errorf("%v: a wrapped error is not reachable", err)
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno != syscall.EINVAL {
		t.Errorf("%v: errors.As finds %v", err, errno)
	}
}
