package rdmacm

import "github.com/go-rdma/rdmacm/rdma"

// The opcodes of atomic completions (rdma's): PostCompareSwap and
// PostFetchAdd complete with these, ByteLen 8.
const (
	WCCompSwap = rdma.WCCompSwap
	WCFetchAdd = rdma.WCFetchAdd
)

// AtomicLen is the size of the operand of every atomic: 8 bytes, at an
// 8-byte aligned remote address, in the host's byte order at both ends.
const AtomicLen = 8
