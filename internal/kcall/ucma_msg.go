package kcall

import "github.com/go-rdma/rdmacm/internal/abi"

// ucmaMsg is one ucma write(): the header immediately followed by the
// command struct. Every command struct is at most 8-byte aligned, so the
// body always starts at offset 8, as the kernel expects.
type ucmaMsg[T any] struct {
	hdr  abi.UcmaCmdHdr
	body T
}
