//go:build !plan9

package rdma_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

// errnoCases is the table ErrnoSentinel documents.
var errnoCases = []struct {
	errno syscall.Errno
	want  error
}{
	{syscall.EOPNOTSUPP, rdma.ErrNotSupported},
	{syscall.ENOTSUP, rdma.ErrNotSupported},
	{syscall.EPROTONOSUPPORT, rdma.ErrNotSupported},
	{syscall.ENOSYS, rdma.ErrNotSupported},
	{syscall.EACCES, rdma.ErrPermission},
	{syscall.EPERM, rdma.ErrPermission},
	{syscall.ENODEV, rdma.ErrNoDevice},
	{syscall.ENXIO, rdma.ErrNoDevice},
	{syscall.EINVAL, rdma.ErrInvalidArgument},
	{syscall.ETIMEDOUT, rdma.ErrTimeout},
	{syscall.EHOSTUNREACH, rdma.ErrNoRoute},
	{syscall.ENETUNREACH, rdma.ErrNoRoute},
	{syscall.EADDRNOTAVAIL, rdma.ErrNoRoute},
	{syscall.ECONNREFUSED, rdma.ErrRejected},
	{syscall.EBUSY, rdma.ErrBusy},
	{syscall.EADDRINUSE, rdma.ErrBusy},
	{syscall.ENOMEM, nil},
	{syscall.ENOENT, nil},
	{syscall.EAGAIN, nil},
}

func TestErrnoSentinel(t *testing.T) {
	for _, tc := range errnoCases {
		if got := rdma.ErrnoSentinel(tc.errno); got != tc.want {
			t.Errorf("ErrnoSentinel(%v) = %v, want %v", tc.errno, got, tc.want)
		}
		err := error(&rdma.OpError{Pkg: "p", Op: "op", Err: fmt.Errorf("detail: %w", tc.errno)})
		if !errors.Is(err, tc.errno) {
			t.Errorf("%v does not match its errno", err)
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%v does not match %v", err, tc.want)
		}
	}
}

func TestOpErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    rdma.OpError
		want string
	}{
		{rdma.OpError{Pkg: "uverbs", Op: "open", Device: "rxe0", Path: "/dev/infiniband/uverbs0", Err: syscall.EACCES},
			"uverbs: open on rxe0 (/dev/infiniband/uverbs0): " + syscall.EACCES.Error()},
		{rdma.OpError{Pkg: "cm", Op: "Bind", Err: rdma.ErrClosed}, "cm: Bind: use of closed object"},
		{rdma.OpError{Pkg: "cm", Err: rdma.ErrClosed}, "cm: use of closed object"},
		{rdma.OpError{Pkg: "cm", Op: "Bind"}, "cm: Bind"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	// A sentinel wrapped directly matches through Unwrap; no errno, no
	// other sentinel.
	err := error(&rdma.OpError{Pkg: "cm", Op: "Bind", Err: rdma.ErrClosed})
	if !errors.Is(err, rdma.ErrClosed) || errors.Is(err, rdma.ErrInvalidArgument) {
		t.Errorf("%v: wrong matches", err)
	}
}
