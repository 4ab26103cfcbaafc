//go:build linux

package kcall

import (
	"runtime"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// Typed ucma commands. Each Ucma*Call writes one command to an rdma_cm fd
// (/dev/infiniband/rdma_cm, drivers/infiniband/core/ucma.c) and returns
// the kernel's response, if the command has one, by value. The user
// pointers the ABI carries (a response, SET_OPTION's value) are filled in
// here and point into a page outside the Go heap that the command is
// built in (see ucmaExec; a goroutine stack may move under a pointer the
// ABI carries as an integer, and pinning heap memory costs more), so
// callers need no unsafe. Fields the call fills in (Response, OptVal) are
// overwritten. Errors are the raw errno (unix.Errno); EINTR is the
// caller's to retry.
//
// Every Ucma*Call is go:noinline: inlined into another package, its call
// of the generic ucmaExec is seen through the shape's dictionary, and
// escape analysis there moves the caller's command to the heap, one
// allocation per command. Compiled here, with the type known,
// the command stays on the caller's stack.

// UcmaCreateIDCall runs CREATE_ID; it sets c.Response.
//
//go:noinline
func UcmaCreateIDCall(fd int, c *abi.UcmaCreateID) (abi.UcmaCreateIDResp, error) {
	return ucmaCall[abi.UcmaCreateIDResp](fd, abi.UcmaCmdCreateID, c, &c.Response)
}

// UcmaDestroyIDCall runs DESTROY_ID for ID id.
//
//go:noinline
func UcmaDestroyIDCall(fd int, id uint32) (abi.UcmaDestroyIDResp, error) {
	c := abi.UcmaDestroyID{ID: id}
	return ucmaCall[abi.UcmaDestroyIDResp](fd, abi.UcmaCmdDestroyID, &c, &c.Response)
}

// UcmaBindCall runs BIND.
//
//go:noinline
func UcmaBindCall(fd int, c *abi.UcmaBind) error {
	return ucmaExec(fd, abi.UcmaCmdBind, c, nil, nil, 0)
}

// UcmaResolveAddrCall runs RESOLVE_ADDR.
//
//go:noinline
func UcmaResolveAddrCall(fd int, c *abi.UcmaResolveAddr) error {
	return ucmaExec(fd, abi.UcmaCmdResolveAddr, c, nil, nil, 0)
}

// UcmaResolveRouteCall runs RESOLVE_ROUTE.
//
//go:noinline
func UcmaResolveRouteCall(fd int, c *abi.UcmaResolveRoute) error {
	return ucmaExec(fd, abi.UcmaCmdResolveRoute, c, nil, nil, 0)
}

// UcmaQueryAddrCall runs QUERY with RDMA_USER_CM_QUERY_ADDR for ID id.
//
//go:noinline
func UcmaQueryAddrCall(fd int, id uint32) (abi.UcmaQueryAddrResp, error) {
	c := abi.UcmaQuery{ID: id, Option: abi.UcmaQueryAddr}
	return ucmaCall[abi.UcmaQueryAddrResp](fd, abi.UcmaCmdQuery, &c, &c.Response)
}

// UcmaQueryPathCall runs QUERY with RDMA_USER_CM_QUERY_PATH for ID id,
// with room for maxPaths records, and returns the records the kernel
// reported (at most maxPaths).
//
//go:noinline
func UcmaQueryPathCall(fd int, id uint32, maxPaths int) ([]abi.UcmaPathRecData, error) {
	buf := make([]byte, abi.SizeofUcmaQueryPathResp+maxPaths*abi.SizeofUcmaPathRecData)
	c := abi.UcmaQuery{ID: id, Option: abi.UcmaQueryPath}
	err := ucmaExec(fd, abi.UcmaCmdQuery, &c, &c.Response, buf, len(buf))
	if err != nil {
		return nil, err
	}
	hdr := abi.Decode[abi.UcmaQueryPathResp](buf)
	n := min(int(hdr.NumPaths), maxPaths)
	recs := make([]abi.UcmaPathRecData, n)
	for i := range recs {
		recs[i] = abi.Decode[abi.UcmaPathRecData](buf[abi.SizeofUcmaQueryPathResp+i*abi.SizeofUcmaPathRecData:])
	}
	return recs, nil
}

// UcmaListenCall runs LISTEN.
//
//go:noinline
func UcmaListenCall(fd int, c *abi.UcmaListen) error {
	return ucmaExec(fd, abi.UcmaCmdListen, c, nil, nil, 0)
}

// UcmaConnectCall runs CONNECT with the full struct (ECE included).
//
//go:noinline
func UcmaConnectCall(fd int, c *abi.UcmaConnect) error {
	return ucmaExec(fd, abi.UcmaCmdConnect, c, nil, nil, 0)
}

// UcmaAcceptCall runs ACCEPT with the full struct (ECE included).
//
//go:noinline
func UcmaAcceptCall(fd int, c *abi.UcmaAccept) error {
	return ucmaExec(fd, abi.UcmaCmdAccept, c, nil, nil, 0)
}

// UcmaRejectCall runs REJECT.
//
//go:noinline
func UcmaRejectCall(fd int, c *abi.UcmaReject) error {
	return ucmaExec(fd, abi.UcmaCmdReject, c, nil, nil, 0)
}

// UcmaDisconnectCall runs DISCONNECT for ID id.
//
//go:noinline
func UcmaDisconnectCall(fd int, id uint32) error {
	c := abi.UcmaDisconnect{ID: id}
	return ucmaExec(fd, abi.UcmaCmdDisconnect, &c, nil, nil, 0)
}

// UcmaInitQPAttrCall runs INIT_QP_ATTR for ID id and QP state state.
//
//go:noinline
func UcmaInitQPAttrCall(fd int, id, state uint32) (abi.UcmaQPAttr, error) {
	c := abi.UcmaInitQPAttr{ID: id, QPState: state}
	return ucmaCall[abi.UcmaQPAttr](fd, abi.UcmaCmdInitQPAttr, &c, &c.Response)
}

// UcmaSetOptionCall runs SET_OPTION with a copy of val (EINVAL when val
// is empty, as the kernel answers a zero optlen).
//
//go:noinline
func UcmaSetOptionCall(fd int, id, level, name uint32, val []byte) error {
	if len(val) == 0 {
		return unix.EINVAL
	}
	c := abi.UcmaSetOption{ID: id, Level: level, OptName: name, OptLen: uint32(len(val))}
	return ucmaExec(fd, abi.UcmaCmdSetOption, &c, &c.OptVal, val, 0)
}

// UcmaNotifyCall runs NOTIFY.
//
//go:noinline
func UcmaNotifyCall(fd int, c *abi.UcmaNotify) error {
	return ucmaExec(fd, abi.UcmaCmdNotify, c, nil, nil, 0)
}

// UcmaJoinMcastCall runs JOIN_MCAST; it sets c.Response. The response
// holds the multicast ID.
//
//go:noinline
func UcmaJoinMcastCall(fd int, c *abi.UcmaJoinMcast) (abi.UcmaCreateIDResp, error) {
	return ucmaCall[abi.UcmaCreateIDResp](fd, abi.UcmaCmdJoinMcast, c, &c.Response)
}

// UcmaLeaveMcastCall runs LEAVE_MCAST for multicast ID mc.
//
//go:noinline
func UcmaLeaveMcastCall(fd int, mc uint32) (abi.UcmaDestroyIDResp, error) {
	c := abi.UcmaDestroyID{ID: mc}
	return ucmaCall[abi.UcmaDestroyIDResp](fd, abi.UcmaCmdLeaveMcast, &c, &c.Response)
}

// UcmaGetEventCall runs GET_EVENT into *resp.
//
//go:noinline
func UcmaGetEventCall(fd int, resp *abi.UcmaEventResp) error {
	var c abi.UcmaGetEvent
	return ucmaExec(fd, abi.UcmaCmdGetEvent, &c, &c.Response, unsafe.Slice((*byte)(unsafe.Pointer(resp)), abi.SizeofUcmaEventResp), abi.SizeofUcmaEventResp)
}

// ucmaCall runs a command whose kernel handler writes a response of type
// R to the user pointer at *response (a field of *body), returned by
// value.
func ucmaCall[R, T any](fd int, cmd uint32, body *T, response *uint64) (R, error) {
	var r R
	n := int(unsafe.Sizeof(r))
	err := ucmaExec(fd, cmd, body, response, unsafe.Slice((*byte)(unsafe.Pointer(&r)), n), n)
	return r, err
}

// ucmaExec writes command cmd with body to the rdma_cm fd. out is the
// response size announced in the header (0 for commands without one).
// When field (a user pointer inside body) is not nil, ext is the memory
// it names: the command is built in a scratch page outside the Go heap,
// ext copied in after the body and field set to that copy, and when out
// is not 0 the kernel's response copied back into ext. Without a scratch
// page (or for more than one holds) a heap copy of ext is pinned instead.
func ucmaExec[T any](fd int, cmd uint32, body *T, field *uint64, ext []byte, out int) error {
	var msg ucmaMsg[T]
	in := int(unsafe.Sizeof(*body))
	bodyOff := int(unsafe.Offsetof(msg.body))
	size := bodyOff + in
	extOff := (size + 7) &^ 7
	hdr := abi.UcmaCmdHdr{Cmd: cmd, In: uint16(in), Out: uint16(out)}
	s := getScratch()
	if s == nil || extOff+len(ext) > len(s.mem) {
		if s != nil {
			putScratch(s)
		}
		return ucmaExecPinned(fd, hdr, body, field, ext, out)
	}
	defer putScratch(s)
	if field != nil {
		copy(s.mem[extOff:], ext)
		*field = abi.Ptr(unsafe.Pointer(&s.mem[extOff]))
	}
	*(*abi.UcmaCmdHdr)(unsafe.Pointer(&s.mem[0])) = hdr
	*(*T)(unsafe.Pointer(&s.mem[bodyOff])) = *body
	n, err := Write(fd, s.mem[:size])
	if field != nil && out != 0 {
		copy(ext, s.mem[extOff:extOff+len(ext)])
	}
	if err != nil {
		return err
	}
	if n != size {
		return unix.EIO
	}
	return nil
}

// ucmaExecPinned is ucmaExec with the command on the stack and ext's
// copy on the heap, pinned across the write.
func ucmaExecPinned[T any](fd int, hdr abi.UcmaCmdHdr, body *T, field *uint64, ext []byte, out int) error {
	var heap []byte
	if field != nil && len(ext) > 0 {
		heap = append([]byte(nil), ext...)
		var pin runtime.Pinner
		pin.Pin(&heap[0])
		defer pin.Unpin()
		*field = abi.SlicePtr(heap)
	}
	var msg ucmaMsg[T]
	msg.hdr = hdr
	msg.body = *body
	size := int(unsafe.Offsetof(msg.body)) + int(hdr.In)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&msg)), size)
	n, err := Write(fd, buf)
	runtime.KeepAlive(&msg)
	if heap != nil && out != 0 {
		copy(ext, heap)
	}
	if err != nil {
		return err
	}
	if n != size {
		return unix.EIO
	}
	return nil
}
