// Package errfmt builds the errors a layer of this module returns when it
// wraps a lower layer's error: one sentence with one package prefix.
//
// Wrap("cm", "create QP", err) with err reading "uverbs: modify QP 0x11 on
// rxe0: invalid argument" reads "cm: create QP: modify QP 0x11 on rxe0:
// invalid argument". The result is an *rdma.OpError: err stays reachable
// (errors.Is, errors.As), and an errno under it also matches its rdma
// sentinel (rdma.ErrnoSentinel).
package errfmt

import "github.com/go-rdma/rdmacm/rdma"

// Wrap returns err as an error of package pkg (empty for a clause inside
// another error) doing op (lowercase words, e.g. "resolve address
// 192.0.2.2"; may be empty), or nil if err is nil.
func Wrap(pkg, op string, err error) error {
	if err == nil {
		return nil
	}
	return &rdma.OpError{Pkg: pkg, Op: op, Err: err}
}
