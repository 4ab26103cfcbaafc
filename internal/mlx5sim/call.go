//go:build linux

package mlx5sim

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// call is one command being answered, whichever interface carried it.
type call struct {
	d     *Device
	mem   Mem
	c     *uctx
	iface string // ioctl, write, invoke (INVOKE_WRITE)
	ic    *icall // the ioctl, for attribute writes (nil for write())

	spare     int
	usedSpare bool

	skip bool            // tagged "~": Compare ignores it
	desc strings.Builder // canonical command
	res  strings.Builder // canonical answer

	drvIn  []byte
	drvOut outbuf
}

// outbuf is a response buffer: a core response (uverbs_response: copy,
// zero the rest) or driver udata (ib_copy_to_udata: copy what fits).
type outbuf struct {
	addr uint64
	n    int
	id   uint16 // ioctl attribute to flag VALID_OUTPUT, with ic
	ic   *icall
}

func (c *call) descf(format string, a ...any) { fmt.Fprintf(&c.desc, format, a...) }
func (c *call) resf(format string, a ...any)  { fmt.Fprintf(&c.res, format, a...) }

// resp writes a core response: min(len, room) bytes, the rest of the
// buffer zeroed (uverbs_response / uverbs_copy_to_struct_or_zero).
func (c *call) resp(o outbuf, b []byte) unix.Errno {
	if o.n == 0 {
		return 0
	}
	buf := make([]byte, o.n)
	copy(buf, b)
	if err := c.mem.Write(o.addr, buf); err != nil {
		return unix.EFAULT
	}
	if o.ic != nil {
		return o.ic.setValid(o.id)
	}
	return 0
}

// drv writes driver output (ib_copy_to_udata of what fits).
func (c *call) drv(b []byte) unix.Errno {
	o := c.drvOut
	n := min(len(b), o.n)
	if n == 0 {
		return 0
	}
	if err := c.mem.Write(o.addr, b[:n]); err != nil {
		return unix.EFAULT
	}
	return 0
}

// newFD hands out a new file: the spare fd the shim passed, or one the
// device makes in-process.
func (c *call) newFD() (int, unix.Errno) {
	if c.spare >= 0 {
		c.usedSpare = true
		return c.spare, 0
	}
	if c.d.newFD != nil {
		fd, err := c.d.newFD()
		if err != nil {
			return -1, unix.EMFILE
		}
		return fd, 0
	}
	return -1, unix.EMFILE
}

// finish records the call and returns its errno.
func (c *call) finish(e unix.Errno) unix.Errno {
	line := c.desc.String() + " -> " + errName(e)
	if e == 0 && c.res.Len() > 0 {
		line += " " + c.res.String()
	}
	line += " @" + c.iface
	if c.skip {
		line = "~ " + line
	}
	c.d.emit(line)
	return e
}

// handle lowest-free allocation, as the uverbs xarray (xa_alloc from 0).
func (u *uctx) newHandle() uint32 {
	for h := uint32(0); ; h++ {
		if _, ok := u.handles[h]; !ok {
			return h
		}
	}
}

func (c *call) get(kind string, h uint32) *object {
	o := c.c.handles[h]
	if o == nil || o.kind != kind {
		return nil
	}
	return o
}

func (c *call) add(o *object) {
	o.ctx = c.c
	o.handle = c.c.newHandle()
	c.c.handles[o.handle] = o
	c.d.objs = append(c.d.objs, o)
}

func nameOf(o *object) string {
	if o == nil {
		return "-"
	}
	return o.name
}
