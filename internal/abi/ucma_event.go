package abi

import "unsafe"

// Conn returns the event's parameters for connected QP types.
func (r *UcmaEventResp) Conn() *UcmaConnParam {
	return (*UcmaConnParam)(unsafe.Pointer(&r.Param))
}

// UD returns the event's parameters for UD QP types.
func (r *UcmaEventResp) UD() *UcmaUDParam {
	return (*UcmaUDParam)(unsafe.Pointer(&r.Param))
}
