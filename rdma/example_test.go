//go:build !plan9

package rdma_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/go-rdma/rdmacm/rdma"
)

// A kernel errno wrapped in an *OpError, and wrapped again by a caller,
// matches both the errno and the sentinel rdma's errno table gives it;
// errors.As still reaches the errno itself.
func ExampleOpError() {
	err := fmt.Errorf("register buffer: %w",
		&rdma.OpError{Pkg: "uverbs", Op: "reg MR", Device: "rxe0", Err: syscall.EPERM})
	fmt.Println(err)
	fmt.Println(errors.Is(err, rdma.ErrPermission), errors.Is(err, syscall.EPERM))
	fmt.Println(errors.Is(err, rdma.ErrNotSupported))

	var errno syscall.Errno
	if errors.As(err, &errno) {
		fmt.Printf("errno %d maps to %q\n", int(errno), rdma.ErrnoSentinel(errno))
	}

	// Output:
	// register buffer: uverbs: reg MR on rxe0: operation not permitted
	// true true
	// false
	// errno 1 maps to "permission denied"
}

// ErrnoSentinel is the errno table itself: EOPNOTSUPP means not supported,
// and an errno without a sentinel (ENOMEM) gives nil.
func ExampleErrnoSentinel() {
	fmt.Println(rdma.ErrnoSentinel(syscall.EOPNOTSUPP) == rdma.ErrNotSupported)
	fmt.Println(rdma.ErrnoSentinel(syscall.ENOMEM))

	// Output:
	// true
	// <nil>
}
