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
		{rdma.OpError{Pkg: "uverbs", Device: "rxe0", Err: syscall.EIO}, "uverbs: on rxe0: " + syscall.EIO.Error()},
		// Without Pkg: a clause of another error.
		{rdma.OpError{Op: "user", Err: errors.New("cm: open: x")}, "user: open: x"},
		{rdma.OpError{Err: errors.New("uverbs: x")}, "x"},
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

// TestOpErrorOnePrefix: a wrapped error of this module loses its package
// prefix, so the message reads as one sentence; the cause, its errno and
// the errno's sentinel stay reachable.
func TestOpErrorOnePrefix(t *testing.T) {
	inner := &rdma.OpError{Pkg: "uverbs", Op: "modify QP 0x11 to INIT (STATE|PORT)", Device: "rxe0", Err: syscall.EINVAL}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&rdma.OpError{Pkg: "cm", Op: "create QP", Err: inner},
			"cm: create QP: modify QP 0x11 to INIT (STATE|PORT) on rxe0: " + syscall.EINVAL.Error()},
		{&rdma.OpError{Pkg: "rdmacm", Op: "dial 192.0.2.2:7471", Err: &rdma.OpError{Pkg: "cm", Op: "create QP", Err: inner}},
			"rdmacm: dial 192.0.2.2:7471: create QP: modify QP 0x11 to INIT (STATE|PORT) on rxe0: " + syscall.EINVAL.Error()},
		{&rdma.OpError{Pkg: "cm", Op: "connect", Err: fmt.Errorf("engine: connect ID 0x1: %w", syscall.EINVAL)},
			"cm: connect: connect ID 0x1: " + syscall.EINVAL.Error()},
		{&rdma.OpError{Pkg: "cm", Err: fmt.Errorf("cm: uverbs: %w", syscall.EINVAL)}, "cm: " + syscall.EINVAL.Error()},
		// Only a leading package name is a prefix.
		{&rdma.OpError{Pkg: "cm", Op: "open", Err: errors.New("cmd: not a prefix")}, "cm: open: cmd: not a prefix"},
		{&rdma.OpError{Pkg: "cm", Op: "open", Err: errors.New("path: /dev/cm: x")}, "cm: open: path: /dev/cm: x"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	err := error(&rdma.OpError{Pkg: "cm", Op: "create QP", Err: inner})
	var oe *rdma.OpError
	if !errors.Is(err, syscall.EINVAL) || !errors.Is(err, rdma.ErrInvalidArgument) || !errors.As(err, &oe) {
		t.Errorf("%v: EINVAL, ErrInvalidArgument or the *OpError not reachable", err)
	}
	if errors.As(err.(interface{ Unwrap() error }).Unwrap(), &oe); oe != inner {
		t.Errorf("the cause is %v, want the uverbs error", oe)
	}
}

// TestOpErrorExplicitSentinel: a cause that names its sentinel keeps it
// alone; its errno stays reachable but adds no second sentinel.
func TestOpErrorExplicitSentinel(t *testing.T) {
	err := error(&rdma.OpError{Pkg: "cm", Op: "resolve address 192.0.2.9", Err: fmt.Errorf("%w: %w", rdma.ErrNoRoute, syscall.ENODEV)})
	if !errors.Is(err, rdma.ErrNoRoute) || !errors.Is(err, syscall.ENODEV) || errors.Is(err, rdma.ErrNoDevice) {
		t.Errorf("%v: want ErrNoRoute and ENODEV, not ErrNoDevice", err)
	}
	err = &rdma.OpError{Pkg: "cm", Op: "bind", Err: syscall.ENODEV}
	if !errors.Is(err, rdma.ErrNoDevice) {
		t.Errorf("%v: a bare ENODEV is ErrNoDevice", err)
	}
}
