package rdmacm

import "github.com/go-rdma/rdmacm/qp"

// MemOptions are the choices of RegMemory and RegDmabuf, which register
// memory the caller owns.
type MemOptions struct {
	// Access is what the memory allows. Zero means local write, as
	// RegMsgs; RegWrite's is qp.AccessLocalWrite|qp.AccessRemoteWrite,
	// RegRead's qp.AccessLocalWrite|qp.AccessRemoteRead. Remote write
	// needs local write as well.
	Access qp.Access
	// IOVA, when UseIOVA is set, is the address the device and the peer
	// know the region by (the MR's Remote().Addr, and what the posts
	// address), in place of the memory's own address
	// (ibv_reg_mr_iova2). It must have the memory's offset within a
	// page. A dma-buf MR is at IOVA, or at 0 without UseIOVA.
	IOVA    uint64
	UseIOVA bool
}
