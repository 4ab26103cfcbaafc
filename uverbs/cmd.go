package uverbs

import (
	"errors"
	"runtime"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// Interface selects how commands reach the kernel.
type Interface int

const (
	// InterfaceAuto uses the ioctl interface (native methods, and write
	// commands wrapped in UVERBS_METHOD_INVOKE_WRITE) and falls back to
	// write() per operation where the kernel lacks a method, as rdma-core
	// does (ENOTTY: no ioctl at all; EPROTONOSUPPORT/EOPNOTSUPP: this
	// method missing).
	InterfaceAuto Interface = iota
	// InterfaceWrite uses only write() commands (no driver id needed); the
	// GID table then comes from sysfs.
	InterfaceWrite
)

func (i Interface) String() string {
	if i == InterfaceWrite {
		return "write"
	}
	return "ioctl"
}

// cmd is one write-style command: the core request and response, and the
// driver (provider) input and output.
type cmd struct {
	num uint32 // write command number, without the extended flag
	ex  bool   // extended command (ib_uverbs_ex_cmd_hdr)
	// in is the core request. For non-extended commands with a response
	// it starts with the 8-byte response pointer, filled in here.
	in      []byte
	respPtr bool
	out     []byte // core response (exactly the kernel's size)
	drvIn   []byte
	drvOut  []byte
}

// noMethod reports the errnos that mean "the kernel lacks this ioctl
// method" (rdma-core cmd_fallback.c): ENOTTY (no ioctl interface),
// EPROTONOSUPPORT and EOPNOTSUPP (no such method). ENOSYS is added for
// qemu-user, which answers it for ioctls it does not translate.
func noMethod(err error) bool {
	return err != nil && (errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EPROTONOSUPPORT) ||
		errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS))
}

// exec runs c through INVOKE_WRITE when available, else write().
func (x *Context) exec(c *cmd) error {
	if x.invokeWrite {
		err := x.invoke(c)
		if err == nil || !errors.Is(err, unix.EPROTONOSUPPORT) {
			return err
		}
		// This kernel has INVOKE_WRITE but not for this command.
	}
	return x.write(c)
}

// execIn is exec for a command with a core input only (MODIFY_QP). It
// builds the ioctl itself: through invoke, which also hands outputs to
// the call, in would escape to the heap (an allocation per command).
func (x *Context) execIn(num uint32, in []byte) error {
	if x.invokeWrite {
		call := kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodInvokeWrite, x.driverID)
		call.Const(abi.UverbsAttrWriteCmd, uint64(num))
		call.In(abi.UverbsAttrCoreIn, in)
		err := x.do(call)
		if err == nil || !errors.Is(err, unix.EPROTONOSUPPORT) {
			return err
		}
	}
	return x.write(&cmd{num: num, in: in})
}

// invoke runs c as an UVERBS_METHOD_INVOKE_WRITE ioctl.
func (x *Context) invoke(c *cmd) error {
	num := uint64(c.num)
	if c.ex {
		num |= uint64(abi.UverbsCmdFlagExtended)
	}
	call := kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodInvokeWrite, x.driverID)
	call.Const(abi.UverbsAttrWriteCmd, num)
	if len(c.in) > 0 {
		call.In(abi.UverbsAttrCoreIn, c.in)
	}
	if len(c.out) > 0 {
		call.Out(abi.UverbsAttrCoreOut, c.out)
	}
	if len(c.drvIn) > 0 {
		call.In(abi.UverbsAttrUHWIn, c.drvIn)
	}
	if len(c.drvOut) > 0 {
		call.Out(abi.UverbsAttrUHWOut, c.drvOut)
	}
	return x.do(call)
}

// write runs c as a write() on the uverbs fd.
func (x *Context) write(c *cmd) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	resp := make([]byte, len(c.out)+len(c.drvOut))
	var respPtr uint64
	if len(resp) > 0 {
		pin.Pin(&resp[0])
		respPtr = abi.SlicePtr(resp)
	}
	var buf []byte
	if c.ex {
		hdr := abi.UverbsCmdHdr{
			Command:  abi.UverbsCmdFlagExtended | c.num,
			InWords:  uint16(len(c.in) / 8),
			OutWords: uint16(len(c.out) / 8),
		}
		exHdr := abi.UverbsExCmdHdr{
			Response:         respPtr,
			ProviderInWords:  uint16(len(c.drvIn) / 8),
			ProviderOutWords: uint16(len(c.drvOut) / 8),
		}
		buf = append(buf, abi.Bytes(&hdr)...)
		buf = append(buf, abi.Bytes(&exHdr)...)
		buf = append(buf, c.in...)
	} else {
		hdr := abi.UverbsCmdHdr{
			Command:  c.num,
			InWords:  uint16((8 + len(c.in) + len(c.drvIn)) / 4),
			OutWords: uint16(len(resp) / 4),
		}
		buf = append(buf, abi.Bytes(&hdr)...)
		start := len(buf)
		buf = append(buf, c.in...)
		if c.respPtr {
			abi.Native.PutUint64(buf[start:], respPtr)
		}
	}
	buf = append(buf, c.drvIn...)
	x.stats.writes.Add(1)
	n, err := kcall.Write(x.fd, buf)
	runtime.KeepAlive(resp)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return unix.EIO
	}
	copy(c.out, resp)
	copy(c.drvOut, resp[len(c.out):])
	return nil
}

// do runs an ioctl call on the context's fd.
func (x *Context) do(call *kcall.IoctlCall) error {
	x.stats.ioctls.Add(1)
	return call.Do(x.fd)
}

// cmdStats counts the syscalls that carried commands (not doorbells), so
// tests can prove which interface was used.
type cmdStats struct {
	ioctls, writes atomic.Uint64
}
