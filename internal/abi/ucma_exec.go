package abi

import "unsafe"

// ucmaMsg is one ucma write(): the header immediately followed by the
// command struct. Every command struct is at most 8-byte aligned, so the
// body always starts at offset 8, as the kernel expects.
type ucmaMsg[T any] struct {
	hdr  UcmaCmdHdr
	body T
}

// Conn returns the event's parameters for connected QP types.
func (r *UcmaEventResp) Conn() *UcmaConnParam {
	return (*UcmaConnParam)(unsafe.Pointer(&r.Param))
}

// UD returns the event's parameters for UD QP types.
func (r *UcmaEventResp) UD() *UcmaUDParam {
	return (*UcmaUDParam)(unsafe.Pointer(&r.Param))
}
