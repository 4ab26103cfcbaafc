package rdmacm

import "github.com/go-rdma/rdmacm/internal/errfmt"

// wrapErr is "rdmacm: what: err" with err's own package prefixes removed;
// err's chain (errors.Is, errors.As, the errno) stays reachable.
func wrapErr(what string, err error) error { return errfmt.Wrap("rdmacm", what, err) }
