package abi

import (
	"runtime"
	"structs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The uverbs ioctl interface (include/uapi/rdma/rdma_user_ioctl_cmds.h): one
// ioctl number whose argument is an ib_uverbs_ioctl_hdr followed by an
// array of ib_uverbs_attr, processed by the kernel's uverbs_ioctl.c.

// RDMAVerbsIoctl is RDMA_VERBS_IOCTL, _IOWR(0x1b, 1, struct
// ib_uverbs_ioctl_hdr). _IOWR has the same value under the generic and the
// powerpc/mips ioctl encodings, so one constant serves every GOARCH.
const RDMAVerbsIoctl = 0xC0181B01

// IoctlHdr is struct ib_uverbs_ioctl_hdr (24 bytes).
type IoctlHdr struct {
	_         structs.HostLayout
	Length    uint16
	ObjectID  uint16
	MethodID  uint16
	NumAttrs  uint16
	Reserved1 uint64
	DriverID  uint32
	Reserved2 uint32
}

// IoctlAttr is struct ib_uverbs_attr (16 bytes). Data is a pointer, an
// inline value, an object handle or an fd depending on the attribute type.
type IoctlAttr struct {
	_        structs.HostLayout
	AttrID   uint16
	Len      uint16
	Flags    uint16
	AttrData uint16 `c:"attr_data"`
	Data     uint64
}

// ib_uverbs_attr flags (enum uverbs_attrs_flags).
const (
	AttrFMandatory   = 1 << 0 // UVERBS_ATTR_F_MANDATORY
	AttrFValidOutput = 1 << 1 // UVERBS_ATTR_F_VALID_OUTPUT, set by the kernel
)

// IoctlMaxAttrs bounds the attributes of one call; the largest method used
// here (QP_CREATE) takes 14.
const IoctlMaxAttrs = 20

// IoctlCall builds and runs one RDMA_VERBS_IOCTL. The header and the
// attribute array are contiguous, as the kernel reads them. Pointers handed
// to the kernel are pinned until Release. Use one call per ioctl.
type IoctlCall struct {
	hdr   IoctlHdr
	attrs [IoctlMaxAttrs]IoctlAttr
	pin   runtime.Pinner
}

// NewIoctl starts a call of method on object for a device with driverID.
func NewIoctl(object, method uint16, driverID uint32) *IoctlCall {
	c := &IoctlCall{}
	c.hdr.ObjectID = object
	c.hdr.MethodID = method
	c.hdr.DriverID = driverID
	return c
}

func (c *IoctlCall) add(id uint16, n uint16, flags uint16, data uint64) int {
	i := int(c.hdr.NumAttrs)
	if i == IoctlMaxAttrs {
		panic("abi: too many ioctl attributes") // programming error, fixed table sizes
	}
	c.attrs[i] = IoctlAttr{AttrID: id, Len: n, Flags: flags, Data: data}
	c.hdr.NumAttrs++
	return i
}

// Const adds a CONST_IN attribute (len 8, the value as a u64).
func (c *IoctlCall) Const(id uint16, v uint64) int { return c.add(id, 8, AttrFMandatory, v) }

// U32 adds a 4-byte PTR_IN attribute carried inline.
func (c *IoctlCall) U32(id uint16, v uint32) int {
	return c.add(id, 4, AttrFMandatory, InlineU32(v))
}

// U64 adds an 8-byte PTR_IN attribute carried inline.
func (c *IoctlCall) U64(id uint16, v uint64) int { return c.add(id, 8, AttrFMandatory, v) }

// In adds a PTR_IN attribute: inline when it fits in 8 bytes, else a
// pointer to b, which stays pinned until Release.
func (c *IoctlCall) In(id uint16, b []byte) int {
	if len(b) <= 8 {
		return c.add(id, uint16(len(b)), AttrFMandatory, InlineBytes(b))
	}
	c.pin.Pin(&b[0])
	return c.add(id, uint16(len(b)), AttrFMandatory, SlicePtr(b))
}

// Out adds a PTR_OUT attribute for the buffer b, pinned until Release.
func (c *IoctlCall) Out(id uint16, b []byte) int {
	if len(b) == 0 {
		return c.add(id, 0, AttrFMandatory, 0)
	}
	c.pin.Pin(&b[0])
	return c.add(id, uint16(len(b)), AttrFMandatory, SlicePtr(b))
}

// IDR adds an object-handle attribute (len 0). For a NEW handle the kernel
// writes the handle into the attribute; read it with Data.
func (c *IoctlCall) IDR(id uint16, handle uint32) int {
	return c.add(id, 0, AttrFMandatory, uint64(handle))
}

// FD adds an fd attribute (len 0). For a NEW fd the kernel writes it back.
func (c *IoctlCall) FD(id uint16, fd int32) int {
	return c.add(id, 0, AttrFMandatory, uint64(int64(fd)))
}

// Optional clears the MANDATORY flag of attribute i, so that a kernel that
// does not know it ignores it instead of failing with EPROTONOSUPPORT.
func (c *IoctlCall) Optional(i int) { c.attrs[i].Flags &^= AttrFMandatory }

// Data returns the data word of attribute i after the call.
func (c *IoctlCall) Data(i int) uint64 { return c.attrs[i].Data }

// ValidOutput reports whether the kernel wrote output attribute i.
func (c *IoctlCall) ValidOutput(i int) bool { return c.attrs[i].Flags&AttrFValidOutput != 0 }

// NumAttrs is the number of attributes added so far.
func (c *IoctlCall) NumAttrs() int { return int(c.hdr.NumAttrs) }

// Encoded returns the header and attributes as the kernel reads them.
func (c *IoctlCall) Encoded() []byte {
	c.hdr.Length = uint16(unsafe.Sizeof(c.hdr)) + c.hdr.NumAttrs*uint16(unsafe.Sizeof(IoctlAttr{}))
	return unsafe.Slice((*byte)(unsafe.Pointer(&c.hdr)), c.hdr.Length)
}

// Do runs the ioctl on fd and unpins everything. Errors are the raw errno
// (unix.Errno).
func (c *IoctlCall) Do(fd int) error {
	c.Encoded()
	if d := currentTestDevice(); d != nil {
		if handled, err := d.Ioctl(fd, RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr))); handled {
			runtime.KeepAlive(c)
			c.pin.Unpin()
			return err
		}
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	c.pin.Unpin()
	if e != 0 {
		return e
	}
	return nil
}

// DoShort is Do for a command that returns without waiting on user
// space (every uverbs command): the syscall is issued raw, so the Go
// runtime does not hand the P to another thread when the kernel takes
// longer than sysmon's 20 µs. In the 1-vCPU TCG guests that handoff
// (a thread switch each way) made verbs commands 2–3× slower
// (docs/benchmarks.md).
func (c *IoctlCall) DoShort(fd int) error {
	c.Encoded()
	if d := currentTestDevice(); d != nil {
		if handled, err := d.Ioctl(fd, RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr))); handled {
			runtime.KeepAlive(c)
			c.pin.Unpin()
			return err
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	c.pin.Unpin()
	if e != 0 {
		return e
	}
	return nil
}

// WriteShort writes b to fd with a raw syscall, for command writes that
// return without waiting on user space (see DoShort). Errors are the raw
// errno.
func WriteShort(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if d := currentTestDevice(); d != nil {
		if handled, n, err := d.Write(fd, uintptr(unsafe.Pointer(&b[0])), len(b)); handled {
			runtime.KeepAlive(b)
			return n, err
		}
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}

// DoRaw is Do without the runtime's syscall bookkeeping, for calls that
// never block (the kernel returns at once): the scheduler then has no
// reason to hand the P to another thread meanwhile. The call can be run
// again; it must not reference memory that needs pinning.
func (c *IoctlCall) DoRaw(fd int) error {
	c.Encoded()
	if d := currentTestDevice(); d != nil {
		if handled, err := d.Ioctl(fd, RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr))); handled {
			runtime.KeepAlive(c)
			return err
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	if e != 0 {
		return e
	}
	return nil
}

// Pin pins memory referenced by an attribute's payload (for instance the
// response buffer pointer inside a CORE_IN struct) until Do returns.
func (c *IoctlCall) Pin(p any) { c.pin.Pin(p) }

// MmapShort maps size bytes of fd at offset with a raw syscall (see
// DoShort: a driver's mmap handler returns without waiting on user
// space). Unmap the result with MunmapShort, never unix.Munmap.
func MmapShort(fd int, offset int64, size int, prot, flags int) ([]byte, error) {
	if d := currentTestDevice(); d != nil {
		if handled, mem, err := d.Mmap(fd, offset, size, prot, flags); handled {
			return mem, err
		}
	}
	addr, _, e := unix.RawSyscall6(unix.SYS_MMAP, 0, uintptr(size), uintptr(prot), uintptr(flags), uintptr(fd), uintptr(offset))
	if e != 0 {
		return nil, e
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), size), nil
}

// MunmapShort unmaps a mapping made by MmapShort.
func MunmapShort(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if d := currentTestDevice(); d != nil {
		if handled, err := d.Munmap(b); handled {
			return err
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// ReadShort reads from a non-blocking fd with a raw syscall (EAGAIN when
// nothing is queued), for event and MAD reads driven by the netpoller.
func ReadShort(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
