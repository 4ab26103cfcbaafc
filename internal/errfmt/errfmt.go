// Package errfmt builds the errors a layer of this module returns when it
// wraps a lower layer's error: one sentence with one package prefix.
//
// Wrap("cm", "create QP", err) with err reading "uverbs: modify QP 0x11 on
// rxe0: invalid argument" reads "cm: create QP: modify QP 0x11 on rxe0:
// invalid argument". The result is an *rdma.OpError: err stays reachable
// (errors.Is, errors.As), and an errno under it also matches its rdma
// sentinel (rdma.ErrnoSentinel). Errorf does the same for a message with
// its own format.
package errfmt

import (
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// Wrap returns err as an error of package pkg (empty for a clause inside
// another error) doing op (lowercase words, e.g. "resolve address
// 192.0.2.2"; may be empty), or nil if err is nil.
func Wrap(pkg, op string, err error) error {
	if err == nil {
		return nil
	}
	return &rdma.OpError{Pkg: pkg, Op: op, Err: err}
}

// Errorf is fmt.Errorf where every error argument prints without its
// package prefix; %w still wraps it.
func Errorf(format string, args ...any) error {
	copied := false
	for i, a := range args {
		if err, ok := a.(error); ok && err != nil {
			if !copied { // the caller's slice stays as it was
				args, copied = append([]any(nil), args...), true
			}
			args[i] = clause{err}
		}
	}
	return fmt.Errorf(format, args...)
}

// clause is an error printed without its package prefix.
type clause struct{ err error }

func (c clause) Error() string { return (&rdma.OpError{Err: c.err}).Error() }
func (c clause) Unwrap() error { return c.err }
