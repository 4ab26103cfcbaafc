package rdmacm

import (
	"fmt"
	"math"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// RegMemory registers mem, memory the caller mapped itself: a memfd or
// file mapping, a MAP_HUGETLB or MAP_SHARED region (uverbs.UserBuffer).
// mem must start on a page boundary, and must not be Go-heap memory
// (make, new), which the garbage collector may move or free while the
// NIC uses it: both are refused with ErrInvalidArgument. The caller keeps
// the mapping until the MR's Close, which deregisters it and leaves it
// mapped. Bytes is mem; Remote and the posts address the region by
// opts.IOVA when set.
func (ep *Endpoint) RegMemory(mem []byte, opts MemOptions) (*MR, error) {
	return regMemory(ep.pd, mem, opts)
}

// RegDmabuf registers length bytes from offset of the dma-buf fd (a GPU
// buffer, for one) at opts.IOVA (ibv_reg_dmabuf_mr). The MR has no Bytes
// (nil): the CPU does not address it here, but posts and the peer's RDMA
// do. The caller keeps fd open while the MR lives. Devices without
// dma-buf MRs (rxe) fail with ErrNotSupported.
func (ep *Endpoint) RegDmabuf(fd int, offset, length uint64, opts MemOptions) (*MR, error) {
	return regDmabuf(ep.pd, fd, offset, length, opts)
}

// RegMemory on a Listener registers on the listener's device; see
// Endpoint.RegMemory and Listener.RegMsgs.
func (l *Listener) RegMemory(mem []byte, opts MemOptions) (*MR, error) {
	pd, err := l.devicePD()
	if err != nil {
		return nil, err
	}
	return regMemory(pd, mem, opts)
}

// RegDmabuf on a Listener: see Endpoint.RegDmabuf and Listener.RegMsgs.
func (l *Listener) RegDmabuf(fd int, offset, length uint64, opts MemOptions) (*MR, error) {
	pd, err := l.devicePD()
	if err != nil {
		return nil, err
	}
	return regDmabuf(pd, fd, offset, length, opts)
}

func (o MemOptions) access() qp.Access {
	if o.Access == 0 {
		return qp.AccessLocalWrite
	}
	return o.Access
}

func regMemory(pd *uverbs.PD, mem []byte, opts MemOptions) (*MR, error) {
	if uint64(len(mem)) > math.MaxUint32 {
		// RemoteBuf.Len and an SGE's length are 32-bit.
		return nil, fmt.Errorf("rdmacm: register %d bytes: more than 4 GiB - 1 in one MR: %w", len(mem), ErrInvalidArgument)
	}
	buf, err := uverbs.UserBuffer(mem)
	if err != nil {
		return nil, err
	}
	var mr *uverbs.MR
	if opts.UseIOVA {
		mr, err = pd.RegMRIOVA(buf, 0, len(mem), opts.IOVA, opts.access())
	} else {
		mr, err = pd.RegMR(buf, opts.access())
	}
	if err != nil {
		buf.Close()
		return nil, err
	}
	return &MR{mr: mr, buf: buf}, nil
}

func regDmabuf(pd *uverbs.PD, fd int, offset, length uint64, opts MemOptions) (*MR, error) {
	if length > math.MaxUint32 {
		return nil, fmt.Errorf("rdmacm: register %d bytes: more than 4 GiB - 1 in one MR: %w", length, ErrInvalidArgument)
	}
	mr, err := pd.RegDmabufMR(fd, offset, length, opts.IOVA, opts.access())
	if err != nil {
		return nil, err
	}
	return &MR{mr: mr}, nil
}
