package uverbs

import (
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// atomicErr is the error of an atomic WR (wrs[i] of n) that writeWQEs
// refused: err from checkAtomicWR or errAtomicCap, which carries its own
// sentinel and errno.
func (m *mlx5QP) atomicErr(i, n int, err error) error {
	return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post send WR %d of %d on QP %#x", i+1, n, m.q.num), Device: m.p.x.dev.Name, Err: err}
}
