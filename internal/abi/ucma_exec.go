package abi

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ucmaMsg is one ucma write(): the header immediately followed by the
// command struct. Every command struct is at most 8-byte aligned, so the
// body always starts at offset 8, as the kernel expects.
type ucmaMsg[T any] struct {
	hdr  UcmaCmdHdr
	body T
}

// UcmaExec writes command cmd with body to the rdma_cm fd. out is the
// response size announced in the header (0 for commands without one); a
// response is written by the kernel to the pointer inside body, which the
// caller must keep alive (the pointed-to object is passed in keep).
// Errors are the raw errno (unix.Errno).
func UcmaExec[T any](fd int, cmd uint32, body *T, out int, keep unsafe.Pointer) error {
	return UcmaExecIn(fd, cmd, body, int(unsafe.Sizeof(*body)), out, keep)
}

// UcmaExecIn is UcmaExec with an explicit payload length in, for the
// commands whose kernel handler honours a shorter struct (CONNECT and
// ACCEPT without ECE).
func UcmaExecIn[T any](fd int, cmd uint32, body *T, in, out int, keep unsafe.Pointer) error {
	var msg ucmaMsg[T]
	msg.hdr = UcmaCmdHdr{Cmd: cmd, In: uint16(in), Out: uint16(out)}
	msg.body = *body
	size := int(unsafe.Offsetof(msg.body)) + in
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&msg)), size)
	// Raw: ucma commands queue work and return (GET_EVENT is issued on a
	// non-blocking fd), see WriteShort.
	n, err := WriteShort(fd, buf)
	runtime.KeepAlive(keep)
	runtime.KeepAlive(&msg)
	if err != nil {
		return err
	}
	if n != size {
		return unix.EIO
	}
	return nil
}

// UcmaPtr turns a pointer to a response object into the u64 the ABI
// carries. The object must stay alive across the call (UcmaExec's keep).
func UcmaPtr(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }

// Conn returns the event's parameters for connected QP types.
func (r *UcmaEventResp) Conn() *UcmaConnParam {
	return (*UcmaConnParam)(unsafe.Pointer(&r.Param))
}

// UD returns the event's parameters for UD QP types.
func (r *UcmaEventResp) UD() *UcmaUDParam {
	return (*UcmaUDParam)(unsafe.Pointer(&r.Param))
}
