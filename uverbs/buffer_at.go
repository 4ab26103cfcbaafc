package uverbs

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// AllocBufferAt is AllocBuffer at a fixed virtual address: addr must be
// page-aligned and the range free (else the error wraps EEXIST). It serves
// programs whose buffers must sit at the same address in several
// processes, such as the differential tests that compare this package's
// work requests byte for byte with libibverbs'.
func AllocBufferAt(addr uint64, size int) (*Buffer, error) {
	if !unix.IsLinux {
		return nil, notOnThisOS("alloc buffer")
	}
	page := kcall.PageSize()
	if size <= 0 || addr%uint64(page) != 0 {
		return nil, fmt.Errorf("uverbs: %w: buffer of %d bytes at %#x (want a positive size at a page-aligned address)", ErrInvalidArgument, size, addr)
	}
	n := (size + page - 1) / page * page
	mem, err := kcall.MmapAnonAt(addr, n)
	if err != nil {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("mmap %d bytes at %#x", n, addr), Err: err}
	}
	_ = unix.Madvise(mem, unix.MADV_DONTFORK)
	return &Buffer{mem: mem[:size:n], at: true}, nil
}
