package rdmacm

import "github.com/go-rdma/rdmacm/internal/errfmt"

// wrapErr is "rdmacm: what: err" (what may be empty) with err's own
// package prefix removed; err's chain (errors.Is, errors.As, the errno)
// stays reachable. Errors this package wraps from its other packages
// (cm, uverbs) go through it.
func wrapErr(what string, err error) error { return errfmt.Wrap("rdmacm", what, err) }
