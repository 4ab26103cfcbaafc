package kcall

import (
	"runtime"
	"syscall"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// IoctlMaxAttrs bounds the attributes of one call; the largest method used
// here (QP_CREATE) takes 14.
const IoctlMaxAttrs = 20

// IoctlCall builds and runs one RDMA_VERBS_IOCTL. The header and the
// attribute array are contiguous, as the kernel reads them. The buffers
// of PTR_IN and PTR_OUT attributes are copied into a scratch page outside
// the Go heap (the outputs copied back when the call returns), or, without
// one, pinned until it returns. Use one call per ioctl, unless every
// attribute is inline (up to 8 bytes, no Pin): then it can run again.
type IoctlCall struct {
	hdr   abi.IoctlHdr
	attrs [IoctlMaxAttrs]abi.IoctlAttr
	pin   runtime.Pinner
	// pinned says pin holds something: Unpin costs about 50 instructions
	// even when it holds nothing.
	pinned bool
	s      *scratch
	used   int
	outs   [IoctlMaxAttrs]ioctlOut
	nOuts  int
}

// ioctlOut is a PTR_OUT buffer b whose kernel copy is at off in the
// scratch page.
type ioctlOut struct {
	b   []byte
	off int
}

// room reserves n bytes (8-byte aligned) of the call's scratch page and
// returns their offset; ok is false without a page or room.
func (c *IoctlCall) room(n int) (off int, ok bool) {
	if c.s == nil {
		if c.s = getScratch(); c.s == nil {
			return 0, false
		}
	}
	off = (c.used + 7) &^ 7
	if off+n > len(c.s.mem) {
		return 0, false
	}
	c.used = off + n
	return off, true
}

// finish copies the outputs back from the scratch page, returns the page
// and unpins what was pinned.
func (c *IoctlCall) finish() {
	for _, o := range c.outs[:min(c.nOuts, IoctlMaxAttrs)] {
		copy(o.b, c.s.mem[o.off:])
	}
	c.nOuts = 0
	if c.s != nil {
		putScratch(c.s)
		c.s, c.used = nil, 0
	}
	if c.pinned {
		c.pin.Unpin()
		c.pinned = false
	}
}

// NewIoctl starts a call of method on object for a device with driverID.
func NewIoctl(object, method uint16, driverID uint32) *IoctlCall {
	c := &IoctlCall{}
	c.hdr.ObjectID = object
	c.hdr.MethodID = method
	c.hdr.DriverID = driverID
	return c
}

// add appends an attribute. It has no branch (a builder is inlined into
// each command, and every branch there is a code block of
// its own in TCG): past IoctlMaxAttrs it keeps counting and overwrites
// the last slot, and the call then refuses to run (tooManyAttrs), a
// programming error with fixed table sizes.
func (c *IoctlCall) add(id uint16, n uint16, flags uint16, data uint64) int {
	i := min(int(c.hdr.NumAttrs), IoctlMaxAttrs-1)
	c.attrs[i] = abi.IoctlAttr{AttrID: id, Len: n, Flags: flags, Data: data}
	c.hdr.NumAttrs++
	return i
}

// tooManyAttrs reports a call built with more than IoctlMaxAttrs
// attributes; Do refuses it.
func (c *IoctlCall) tooManyAttrs() bool { return c.hdr.NumAttrs > IoctlMaxAttrs }

// errTooManyAttrs is the refusal: EINVAL, as the kernel answers an
// attribute array it cannot take.
var errTooManyAttrs error = syscall.EINVAL

// Const adds a CONST_IN attribute (len 8, the value as a u64).
func (c *IoctlCall) Const(id uint16, v uint64) int { return c.add(id, 8, abi.AttrFMandatory, v) }

// U32 adds a 4-byte PTR_IN attribute carried inline.
func (c *IoctlCall) U32(id uint16, v uint32) int {
	return c.add(id, 4, abi.AttrFMandatory, abi.InlineU32(v))
}

// U64 adds an 8-byte PTR_IN attribute carried inline.
func (c *IoctlCall) U64(id uint16, v uint64) int { return c.add(id, 8, abi.AttrFMandatory, v) }

// In adds a PTR_IN attribute: inline when it fits in 8 bytes, else a
// copy of b (taken now) in the scratch page, or, without one, a pinned
// heap copy. In never keeps b, so a caller's request struct can stay on
// its stack (MODIFY_QP's 112-byte body was one allocation per
// call while b was pinned in place).
func (c *IoctlCall) In(id uint16, b []byte) int {
	if len(b) <= 8 {
		return c.add(id, uint16(len(b)), abi.AttrFMandatory, abi.InlineBytes(b))
	}
	if off, ok := c.room(len(b)); ok {
		copy(c.s.mem[off:], b)
		return c.add(id, uint16(len(b)), abi.AttrFMandatory, abi.Ptr(unsafe.Pointer(&c.s.mem[off])))
	}
	cp := append([]byte(nil), b...)
	c.pin.Pin(&cp[0])
	c.pinned = true
	return c.add(id, uint16(len(cp)), abi.AttrFMandatory, abi.SlicePtr(cp))
}

// Out adds a PTR_OUT attribute for the buffer b: the kernel writes a
// copy in the scratch page, copied into b when the call returns (b's
// bytes the kernel leaves alone stay as they were), or b itself pinned.
func (c *IoctlCall) Out(id uint16, b []byte) int {
	if len(b) == 0 {
		return c.add(id, 0, abi.AttrFMandatory, 0)
	}
	if off, ok := c.room(len(b)); ok {
		copy(c.s.mem[off:], b)
		c.outs[min(c.nOuts, IoctlMaxAttrs-1)] = ioctlOut{b: b, off: off} // no branch, as add
		c.nOuts++
		return c.add(id, uint16(len(b)), abi.AttrFMandatory, abi.Ptr(unsafe.Pointer(&c.s.mem[off])))
	}
	c.pin.Pin(&b[0])
	c.pinned = true
	return c.add(id, uint16(len(b)), abi.AttrFMandatory, abi.SlicePtr(b))
}

// IDR adds an object-handle attribute (len 0). For a NEW handle the kernel
// writes the handle into the attribute; read it with Data.
func (c *IoctlCall) IDR(id uint16, handle uint32) int {
	return c.add(id, 0, abi.AttrFMandatory, uint64(handle))
}

// FD adds an fd attribute (len 0). For a NEW fd the kernel writes it back.
func (c *IoctlCall) FD(id uint16, fd int32) int {
	return c.add(id, 0, abi.AttrFMandatory, uint64(int64(fd)))
}

// Optional clears the MANDATORY flag of attribute i, so that a kernel that
// does not know it ignores it instead of failing with EPROTONOSUPPORT.
func (c *IoctlCall) Optional(i int) { c.attrs[i].Flags &^= abi.AttrFMandatory }

// Data returns the data word of attribute i after the call.
func (c *IoctlCall) Data(i int) uint64 { return c.attrs[i].Data }

// ValidOutput reports whether the kernel wrote output attribute i.
func (c *IoctlCall) ValidOutput(i int) bool { return c.attrs[i].Flags&abi.AttrFValidOutput != 0 }

// NumAttrs is the number of attributes added so far.
func (c *IoctlCall) NumAttrs() int { return int(c.hdr.NumAttrs) }

// Encoded returns the header and attributes as the kernel reads them.
func (c *IoctlCall) Encoded() []byte {
	n := min(c.hdr.NumAttrs, IoctlMaxAttrs) // never past the array (tooManyAttrs)
	c.hdr.Length = uint16(unsafe.Sizeof(c.hdr)) + n*uint16(unsafe.Sizeof(abi.IoctlAttr{}))
	return unsafe.Slice((*byte)(unsafe.Pointer(&c.hdr)), c.hdr.Length)
}

// Pin pins memory referenced by an attribute's payload (for instance the
// response buffer pointer inside a CORE_IN struct) until Do returns.
func (c *IoctlCall) Pin(p any) {
	c.pin.Pin(p)
	c.pinned = true
}
