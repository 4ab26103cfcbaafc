//go:build linux

package abi

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Typed ucma commands. Each Ucma*Call writes one command to an rdma_cm fd
// (/dev/infiniband/rdma_cm, drivers/infiniband/core/ucma.c) and returns
// the kernel's response, if the command has one, by value. The user
// pointers the ABI carries (a response, SET_OPTION's value) are filled in
// here and point at memory pinned across the write (runtime.Pinner: on
// the heap, where it neither moves nor is freed; a goroutine stack may
// move under a pointer the ABI carries as an integer), so callers need no
// unsafe. Fields the call fills in (Response, OptVal) are
// overwritten. Errors are the raw errno (unix.Errno); EINTR is the
// caller's to retry.

// UcmaCreateIDCall runs CREATE_ID; it sets c.Response.
func UcmaCreateIDCall(fd int, c *UcmaCreateID) (UcmaCreateIDResp, error) {
	return ucmaCall[UcmaCreateIDResp](fd, UcmaCmdCreateID, c, &c.Response)
}

// UcmaDestroyIDCall runs DESTROY_ID for ID id.
func UcmaDestroyIDCall(fd int, id uint32) (UcmaDestroyIDResp, error) {
	c := UcmaDestroyID{ID: id}
	return ucmaCall[UcmaDestroyIDResp](fd, UcmaCmdDestroyID, &c, &c.Response)
}

// UcmaBindCall runs BIND.
func UcmaBindCall(fd int, c *UcmaBind) error { return ucmaExec(fd, UcmaCmdBind, c, 0, nil) }

// UcmaResolveAddrCall runs RESOLVE_ADDR.
func UcmaResolveAddrCall(fd int, c *UcmaResolveAddr) error {
	return ucmaExec(fd, UcmaCmdResolveAddr, c, 0, nil)
}

// UcmaResolveRouteCall runs RESOLVE_ROUTE.
func UcmaResolveRouteCall(fd int, c *UcmaResolveRoute) error {
	return ucmaExec(fd, UcmaCmdResolveRoute, c, 0, nil)
}

// UcmaQueryAddrCall runs QUERY with RDMA_USER_CM_QUERY_ADDR for ID id.
func UcmaQueryAddrCall(fd int, id uint32) (UcmaQueryAddrResp, error) {
	c := UcmaQuery{ID: id, Option: UcmaQueryAddr}
	return ucmaCall[UcmaQueryAddrResp](fd, UcmaCmdQuery, &c, &c.Response)
}

// UcmaQueryPathCall runs QUERY with RDMA_USER_CM_QUERY_PATH for ID id,
// with room for maxPaths records, and returns the records the kernel
// reported (at most maxPaths).
func UcmaQueryPathCall(fd int, id uint32, maxPaths int) ([]UcmaPathRecData, error) {
	buf := make([]byte, SizeofUcmaQueryPathResp+maxPaths*SizeofUcmaPathRecData)
	c := UcmaQuery{Response: SlicePtr(buf), ID: id, Option: UcmaQueryPath}
	err := ucmaExec(fd, UcmaCmdQuery, &c, len(buf), &buf[0])
	if err != nil {
		return nil, err
	}
	hdr := Decode[UcmaQueryPathResp](buf)
	n := min(int(hdr.NumPaths), maxPaths)
	recs := make([]UcmaPathRecData, n)
	for i := range recs {
		recs[i] = Decode[UcmaPathRecData](buf[SizeofUcmaQueryPathResp+i*SizeofUcmaPathRecData:])
	}
	return recs, nil
}

// UcmaListenCall runs LISTEN.
func UcmaListenCall(fd int, c *UcmaListen) error { return ucmaExec(fd, UcmaCmdListen, c, 0, nil) }

// UcmaConnectCall runs CONNECT with the full struct (ECE included).
func UcmaConnectCall(fd int, c *UcmaConnect) error {
	return ucmaExec(fd, UcmaCmdConnect, c, 0, nil)
}

// UcmaAcceptCall runs ACCEPT with the full struct (ECE included).
func UcmaAcceptCall(fd int, c *UcmaAccept) error { return ucmaExec(fd, UcmaCmdAccept, c, 0, nil) }

// UcmaRejectCall runs REJECT.
func UcmaRejectCall(fd int, c *UcmaReject) error { return ucmaExec(fd, UcmaCmdReject, c, 0, nil) }

// UcmaDisconnectCall runs DISCONNECT for ID id.
func UcmaDisconnectCall(fd int, id uint32) error {
	c := UcmaDisconnect{ID: id}
	return ucmaExec(fd, UcmaCmdDisconnect, &c, 0, nil)
}

// UcmaInitQPAttrCall runs INIT_QP_ATTR for ID id and QP state state.
func UcmaInitQPAttrCall(fd int, id, state uint32) (UcmaQPAttr, error) {
	c := UcmaInitQPAttr{ID: id, QPState: state}
	return ucmaCall[UcmaQPAttr](fd, UcmaCmdInitQPAttr, &c, &c.Response)
}

// UcmaSetOptionCall runs SET_OPTION with a copy of val (EINVAL when val
// is empty, as the kernel answers a zero optlen).
func UcmaSetOptionCall(fd int, id, level, name uint32, val []byte) error {
	if len(val) == 0 {
		return unix.EINVAL
	}
	buf := append([]byte(nil), val...) // pinned by ucmaExec
	c := UcmaSetOption{OptVal: SlicePtr(buf), ID: id, Level: level, OptName: name, OptLen: uint32(len(buf))}
	return ucmaExec(fd, UcmaCmdSetOption, &c, 0, &buf[0])
}

// UcmaNotifyCall runs NOTIFY.
func UcmaNotifyCall(fd int, c *UcmaNotify) error { return ucmaExec(fd, UcmaCmdNotify, c, 0, nil) }

// UcmaJoinMcastCall runs JOIN_MCAST; it sets c.Response. The response
// holds the multicast ID.
func UcmaJoinMcastCall(fd int, c *UcmaJoinMcast) (UcmaCreateIDResp, error) {
	return ucmaCall[UcmaCreateIDResp](fd, UcmaCmdJoinMcast, c, &c.Response)
}

// UcmaLeaveMcastCall runs LEAVE_MCAST for multicast ID mc.
func UcmaLeaveMcastCall(fd int, mc uint32) (UcmaDestroyIDResp, error) {
	c := UcmaDestroyID{ID: mc}
	return ucmaCall[UcmaDestroyIDResp](fd, UcmaCmdLeaveMcast, &c, &c.Response)
}

// UcmaGetEventCall runs GET_EVENT into *resp, which the caller may reuse
// from one event to the next (it escapes to the heap: it is pinned).
func UcmaGetEventCall(fd int, resp *UcmaEventResp) error {
	c := UcmaGetEvent{Response: Ptr(unsafe.Pointer(resp))}
	return ucmaExec(fd, UcmaCmdGetEvent, &c, SizeofUcmaEventResp, resp)
}

// ucmaCall runs a command whose kernel handler writes a response of type
// R to the user pointer at *response (a field of *body): a fresh R on the
// heap, returned by value.
func ucmaCall[R, T any](fd int, cmd uint32, body *T, response *uint64) (R, error) {
	r := new(R)
	*response = Ptr(unsafe.Pointer(r))
	err := ucmaExec(fd, cmd, body, int(unsafe.Sizeof(*r)), r)
	return *r, err
}

// ucmaExec writes command cmd with body to the rdma_cm fd. out is the
// response size announced in the header (0 for commands without one); a
// response is written by the kernel to the user pointer inside body;
// target, the memory that pointer (or an option value's) names, is pinned
// until the write returns (nil: no pointer).
func ucmaExec[T any](fd int, cmd uint32, body *T, out int, target any) error {
	if target != nil {
		var pin runtime.Pinner
		pin.Pin(target)
		defer pin.Unpin()
	}
	in := int(unsafe.Sizeof(*body))
	var msg ucmaMsg[T]
	msg.hdr = UcmaCmdHdr{Cmd: cmd, In: uint16(in), Out: uint16(out)}
	msg.body = *body
	size := int(unsafe.Offsetof(msg.body)) + in
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&msg)), size)
	// Raw: ucma commands queue work and return (GET_EVENT is issued on a
	// non-blocking fd), see WriteShort.
	n, err := WriteShort(fd, buf)
	runtime.KeepAlive(&msg)
	if err != nil {
		return err
	}
	if n != size {
		return unix.EIO
	}
	return nil
}
