package uverbs

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// A registration refused because the pages could not be pinned says which
// limit to raise and how, names the device and the size, and keeps the
// errno (and, for EPERM, ErrPermission) reachable.
func TestRegMRErrorExplainsMemlock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		errno   unix.Errno
		memlock uint64
		known   bool
		want    []string // substrings of the message
		notWant []string
	}{
		{name: "ENOMEM over the limit", errno: unix.ENOMEM, memlock: 64 << 10, known: true,
			want: []string{"uverbs: register MR on rxe0: 1048576 bytes: cannot pin memory",
				"RLIMIT_MEMLOCK is 65536 bytes (ulimit -l shows 64)",
				"ulimit -l unlimited", "LimitMEMLOCK=infinity", "cannot allocate memory"}},
		{name: "EPERM with a zero limit", errno: unix.EPERM, memlock: 0, known: true,
			want: []string{"RLIMIT_MEMLOCK is 0 bytes", "ulimit -l unlimited", "operation not permitted"}},
		{name: "EAGAIN", errno: unix.EAGAIN, memlock: 8 << 20, known: true,
			want: []string{"RLIMIT_MEMLOCK is 8388608 bytes (ulimit -l shows 8192)", "raise it"}},
		// An unlimited limit is not the cause: no advice to raise it.
		{name: "ENOMEM, unlimited", errno: unix.ENOMEM, memlock: unix.RLIM_INFINITY, known: true,
			want:    []string{"cannot pin memory (RLIMIT_MEMLOCK is unlimited)"},
			notWant: []string{"raise it"}},
		// Getrlimit failed: the plain error.
		{name: "limit unknown", errno: unix.ENOMEM, known: false,
			want: []string{"uverbs: register MR on rxe0: cannot allocate memory"}, notWant: []string{"RLIMIT_MEMLOCK"}},
		// Not a pinning failure: the plain error.
		{name: "EINVAL", errno: unix.EINVAL, memlock: 64 << 10, known: true,
			want: []string{"uverbs: register MR on rxe0: invalid argument"}, notWant: []string{"RLIMIT_MEMLOCK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := regMRError("rxe0", 1<<20, tc.errno, tc.memlock, tc.known)
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("message %q has %q", msg, w)
				}
			}
			if !errors.Is(err, tc.errno) {
				t.Errorf("errors.Is(err, %v) = false: %v", tc.errno, err)
			}
			var oe *rdma.OpError
			if !errors.As(err, &oe) || oe.Device != "rxe0" || oe.Op != "register MR" {
				t.Errorf("not an *rdma.OpError for register MR on rxe0: %#v", err)
			}
			if got := errors.Is(err, ErrPermission); got != (tc.errno == unix.EPERM) {
				t.Errorf("errors.Is(err, ErrPermission) = %v for %v", got, tc.errno)
			}
		})
	}
}

// The pin errnos, wrapped or not, are recognised; others are not.
func TestIsPinErrno(t *testing.T) {
	for _, e := range []error{unix.ENOMEM, unix.EAGAIN, unix.EPERM, &rdma.OpError{Pkg: "uverbs", Op: "x", Err: unix.ENOMEM}} {
		if !isPinErrno(e) {
			t.Errorf("isPinErrno(%v) = false", e)
		}
	}
	for _, e := range []error{unix.EINVAL, unix.EFAULT, unix.EACCES, errors.New("x")} {
		if isPinErrno(e) {
			t.Errorf("isPinErrno(%v) = true", e)
		}
	}
}
