//go:build linux

package mlx5sim

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// The RDMA_VERBS_IOCTL interface, as the kernel's uverbs_ioctl.c parses
// it: header checks, method lookup, attribute checks; then the handler.

const (
	hdrSize  = 24
	attrSize = 16

	uhwIn  = abi.UverbsAttrUHWIn
	uhwOut = abi.UverbsAttrUHWOut

	objDevX = 0x1000 // MLX5_IB_OBJECT_DEVX
	objUAR  = 0x1008 // MLX5_IB_OBJECT_UAR
)

// icall is one decoded ioctl.
type icall struct {
	mem   Mem
	arg   uint64
	hdr   abi.IoctlHdr
	attrs []abi.IoctlAttr
	byID  map[uint16]int
}

type aspec struct {
	id  uint16
	req bool // the kernel requires it (UA_MANDATORY)
}

type imethod struct {
	name    string
	attrs   []aspec
	udata   bool // UVERBS_ATTR_UHW: UHW_IN/UHW_OUT allowed
	needCtx bool
	fn      func(c *call) unix.Errno
}

var imethods map[[2]uint16]*imethod

func init() {
	r := func(id uint16) aspec { return aspec{id, true} }
	o := func(id uint16) aspec { return aspec{id, false} }
	imethods = map[[2]uint16]*imethod{
		{0, 0}:           {name: "INVOKE_WRITE", attrs: []aspec{o(0), o(1), r(2)}, udata: true, fn: (*call).invokeWrite},
		{0, 2}:           {name: "QUERY_PORT", attrs: []aspec{r(0), r(1)}, needCtx: true, fn: (*call).ioctlQueryPort},
		{0, 3}:           {name: "GET_CONTEXT", attrs: []aspec{o(0), o(1)}, udata: true, fn: (*call).ioctlGetContext},
		{0, 4}:           {name: "QUERY_CONTEXT", attrs: []aspec{o(0), o(1)}, udata: true, needCtx: true, fn: (*call).ioctlQueryContext},
		{0, 5}:           {name: "QUERY_GID_TABLE", attrs: []aspec{r(0), o(1), r(2), r(3)}, needCtx: true, fn: (*call).ioctlQueryGIDTable},
		{0, 6}:           {name: "QUERY_GID_ENTRY", attrs: []aspec{r(0), r(1), o(2), r(3)}, needCtx: true, fn: (*call).ioctlQueryGIDEntry},
		{1, 0}:           {name: "PD_DESTROY", attrs: []aspec{r(0)}, needCtx: true, fn: ioctlDestroy("pd")},
		{6, 0}:           {name: "AH_DESTROY", attrs: []aspec{r(0)}, needCtx: true, fn: ioctlDestroy("ah")},
		{7, 1}:           {name: "MR_DESTROY", attrs: []aspec{r(0)}, needCtx: true, fn: ioctlDestroy("mr")},
		{7, 4}:           {name: "REG_DMABUF_MR", attrs: []aspec{r(0), r(1), r(2), r(3), r(4), r(5), r(6), r(7), r(8)}, needCtx: true, fn: (*call).ioctlRegDmabufMR},
		{3, 0}:           {name: "CQ_CREATE", attrs: []aspec{r(0), r(1), r(2), o(3), r(4), o(5), r(6), o(7)}, udata: true, needCtx: true, fn: (*call).ioctlCreateCQ},
		{3, 1}:           {name: "CQ_DESTROY", attrs: []aspec{r(0), r(1)}, needCtx: true, fn: (*call).ioctlDestroyCQ},
		{4, 0}:           {name: "QP_CREATE", attrs: []aspec{r(0), o(1), o(2), o(3), o(4), o(5), o(6), r(7), r(8), r(9), o(10), o(11), o(12), r(13), r(14)}, udata: true, needCtx: true, fn: (*call).ioctlCreateQP},
		{4, 1}:           {name: "QP_DESTROY", attrs: []aspec{r(0), r(1)}, needCtx: true, fn: (*call).ioctlDestroyQP},
		{5, 0}:           {name: "SRQ_CREATE", attrs: []aspec{r(0), r(1), o(2), o(3), r(4), r(5), r(6), r(7), o(8), r(9), o(10), r(11), r(12), o(13)}, udata: true, needCtx: true, fn: (*call).ioctlCreateSRQ},
		{5, 1}:           {name: "SRQ_DESTROY", attrs: []aspec{r(0), r(1)}, needCtx: true, fn: (*call).ioctlDestroySRQ},
		{16, 0}:          {name: "ASYNC_EVENT_ALLOC", attrs: []aspec{r(0)}, needCtx: true, fn: (*call).ioctlAsyncAlloc},
		{objUAR, 0x1000}: {name: "UAR_OBJ_ALLOC", attrs: []aspec{r(0x1000), r(0x1001), r(0x1002), r(0x1003), r(0x1004)}, needCtx: true, fn: (*call).ioctlUARAlloc},
		{objUAR, 0x1001}: {name: "UAR_OBJ_DESTROY", attrs: []aspec{r(0x1000)}, needCtx: true, fn: (*call).ioctlUARDestroy},
	}
}

// Ioctl answers ioctl(fd, req, arg). It returns the syscall result, whether
// spareFD was handed out to the caller, and the errno.
func (d *Device) Ioctl(mem Mem, fd int, req, arg uint64, spareFD int) (ret int64, usedSpare bool, errno unix.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if req != abi.RDMAVerbsIoctl {
		d.emit(fmt.Sprintf("IOCTL req=%#x -> ENOTTY", req))
		return -1, false, unix.ENOTTY
	}
	c := d.ctxFor(fd)
	var hb [hdrSize]byte
	if err := mem.Read(arg, hb[:]); err != nil {
		d.emit("~ IOCTL hdr unreadable -> EFAULT @ioctl")
		return -1, false, unix.EFAULT
	}
	ic := &icall{mem: mem, arg: arg, hdr: abi.Decode[abi.IoctlHdr](hb[:])}
	h := ic.hdr
	if d.p.WriteOnly {
		// No ioctl interface (profile iface=write): ENOTTY as from a
		// kernel without RDMA_VERBS_IOCTL, so libibverbs falls back.
		d.emit(fmt.Sprintf("~ IOCTL obj=%#x method=%#x -> ENOTTY @ioctl", h.ObjectID, h.MethodID))
		return -1, false, unix.ENOTTY
	}
	if uint64(h.Length) > d.pageSize() || int(h.Length) != hdrSize+attrSize*int(h.NumAttrs) {
		d.emit(fmt.Sprintf("IOCTL obj=%#x method=%#x bad length %d/%d attrs -> EINVAL @ioctl", h.ObjectID, h.MethodID, h.Length, h.NumAttrs))
		return -1, false, unix.EINVAL
	}
	if h.Reserved1 != 0 || h.Reserved2 != 0 {
		d.emit(fmt.Sprintf("IOCTL obj=%#x method=%#x reserved set -> EPROTONOSUPPORT @ioctl", h.ObjectID, h.MethodID))
		return -1, false, unix.EPROTONOSUPPORT
	}
	if h.DriverID != abi.RDMADriverMLX5 {
		d.emit(fmt.Sprintf("IOCTL obj=%#x method=%#x driver_id=%d -> EINVAL @ioctl", h.ObjectID, h.MethodID, h.DriverID))
		return -1, false, unix.EINVAL
	}
	raw := make([]byte, attrSize*int(h.NumAttrs))
	if err := mem.Read(arg+hdrSize, raw); err != nil {
		d.emit("~ IOCTL attrs unreadable -> EFAULT @ioctl")
		return -1, false, unix.EFAULT
	}
	ic.byID = map[uint16]int{}
	for i := 0; i < int(h.NumAttrs); i++ {
		a := abi.Decode[abi.IoctlAttr](raw[i*attrSize:])
		ic.attrs = append(ic.attrs, a)
	}
	m := imethods[[2]uint16{h.ObjectID, h.MethodID}]
	if m == nil {
		// uapi lookup failure (uverbs_ioctl.c): the object or method
		// does not exist here. DEVX is absent: no firmware uctx support.
		skip := h.ObjectID == objDevX
		line := fmt.Sprintf("IOCTL obj=%#x method=%#x attrs=%s -> EPROTONOSUPPORT @ioctl", h.ObjectID, h.MethodID, ic.attrList())
		if skip {
			line = "~ DEVX " + line
		} else {
			line = "UNKNOWN " + line
		}
		d.emit(line)
		return -1, false, unix.EPROTONOSUPPORT
	}
	cl := &call{d: d, mem: mem, c: c, iface: "ioctl", ic: ic, spare: spareFD}
	if e := ic.check(m); e != 0 {
		cl.descf("%s attrs=%s", m.name, ic.attrList())
		return -1, false, cl.finish(e)
	}
	if m.needCtx && !c.ready {
		cl.descf("%s (no context)", m.name)
		return -1, false, cl.finish(unix.EINVAL)
	}
	if m.udata {
		if b, ok, e := ic.in(uhwIn); e != 0 {
			cl.descf("%s", m.name)
			return -1, false, cl.finish(e)
		} else if ok {
			cl.drvIn = b
		}
		if i, ok := ic.byID[uhwOut]; ok {
			a := ic.attrs[i]
			cl.drvOut = outbuf{addr: a.Data, n: int(a.Len), id: uhwOut, ic: ic}
		}
	}
	e := m.fn(cl)
	if e == 0 && m.udata && m.name != "INVOKE_WRITE" {
		// The kernel assumes the driver wrote UHW_OUT (ib_uverbs_run_method).
		if _, ok := ic.byID[uhwOut]; ok {
			e = ic.setValid(uhwOut)
		}
	}
	if e != 0 {
		return -1, false, e
	}
	return 0, cl.usedSpare, 0
}

// check validates the attributes against the method (uverbs_ioctl.c
// uverbs_set_attr / bundle checks): duplicates EINVAL, unknown mandatory
// ones EPROTONOSUPPORT, missing required ones EINVAL.
func (ic *icall) check(m *imethod) unix.Errno {
	known := map[uint16]bool{}
	for _, s := range m.attrs {
		known[s.id] = true
	}
	if m.udata {
		known[uhwIn], known[uhwOut] = true, true
	}
	for i, a := range ic.attrs {
		if _, dup := ic.byID[a.AttrID]; dup {
			return unix.EINVAL
		}
		if !known[a.AttrID] {
			if a.Flags&abi.AttrFMandatory != 0 {
				return unix.EPROTONOSUPPORT
			}
			continue
		}
		if a.Flags&^(abi.AttrFMandatory|abi.AttrFValidOutput) != 0 {
			return unix.EINVAL
		}
		ic.byID[a.AttrID] = i
	}
	for _, s := range m.attrs {
		if _, ok := ic.byID[s.id]; s.req && !ok {
			return unix.EINVAL
		}
	}
	return 0
}

func (ic *icall) attrList() string {
	s := "["
	for i, a := range ic.attrs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%#x/%d", a.AttrID, a.Len)
	}
	return s + "]"
}

func (ic *icall) has(id uint16) bool { _, ok := ic.byID[id]; return ok }

// in reads a PTR_IN attribute: inline when len <= 8.
func (ic *icall) in(id uint16) ([]byte, bool, unix.Errno) {
	i, ok := ic.byID[id]
	if !ok {
		return nil, false, 0
	}
	a := ic.attrs[i]
	b := make([]byte, a.Len)
	if a.Len <= 8 {
		var w [8]byte
		abi.Native.PutUint64(w[:], a.Data)
		copy(b, w[:])
		return b, true, 0
	}
	if err := ic.mem.Read(a.Data, b); err != nil {
		return nil, true, unix.EFAULT
	}
	return b, true, 0
}

// inFixed reads a PTR_IN attribute that must be exactly n bytes.
func (ic *icall) inFixed(id uint16, n int) ([]byte, bool, unix.Errno) {
	b, ok, e := ic.in(id)
	if e != 0 || !ok {
		return b, ok, e
	}
	if len(b) != n {
		return nil, true, unix.EINVAL
	}
	return b, true, 0
}

func (ic *icall) u32(id uint16) (uint32, bool, unix.Errno) {
	b, ok, e := ic.inFixed(id, 4)
	if e != 0 || !ok {
		return 0, ok, e
	}
	return abi.Native.Uint32(b), true, 0
}

func (ic *icall) u64(id uint16) (uint64, bool, unix.Errno) {
	b, ok, e := ic.inFixed(id, 8)
	if e != 0 || !ok {
		return 0, ok, e
	}
	return abi.Native.Uint64(b), true, 0
}

// flags reads a FLAGS_IN attribute: a u32 or a u64 (uverbs_get_flags64);
// bits above 32 are EINVAL for the 32-bit flag sets used here.
func (ic *icall) flags(id uint16) (uint32, unix.Errno) {
	b, ok, e := ic.in(id)
	if e != 0 || !ok {
		return 0, e
	}
	switch len(b) {
	case 4:
		return abi.Native.Uint32(b), 0
	case 8:
		v := abi.Native.Uint64(b)
		if v>>32 != 0 {
			return 0, unix.EINVAL
		}
		return uint32(v), 0
	}
	return 0, unix.EINVAL
}

// constv reads a CONST_IN attribute (the value in data, len <= 8).
func (ic *icall) constv(id uint16) (uint64, bool, unix.Errno) {
	i, ok := ic.byID[id]
	if !ok {
		return 0, false, 0
	}
	a := ic.attrs[i]
	if a.Len > 8 {
		return 0, true, unix.EINVAL
	}
	return a.Data, true, 0
}

func (ic *icall) data(id uint16) (uint64, bool) {
	i, ok := ic.byID[id]
	if !ok {
		return 0, false
	}
	return ic.attrs[i].Data, true
}

// out writes a PTR_OUT attribute (uverbs_copy_to: what fits) and flags it.
func (ic *icall) out(id uint16, b []byte) unix.Errno {
	i, ok := ic.byID[id]
	if !ok {
		return 0
	}
	a := ic.attrs[i]
	n := min(int(a.Len), len(b))
	if n > 0 {
		if err := ic.mem.Write(a.Data, b[:n]); err != nil {
			return unix.EFAULT
		}
	}
	return ic.setValid(id)
}

func (ic *icall) outbuf(id uint16) outbuf {
	i, ok := ic.byID[id]
	if !ok {
		return outbuf{}
	}
	a := ic.attrs[i]
	return outbuf{addr: a.Data, n: int(a.Len), id: id, ic: ic}
}

// setValid sets UVERBS_ATTR_F_VALID_OUTPUT in the user's attribute.
func (ic *icall) setValid(id uint16) unix.Errno {
	i, ok := ic.byID[id]
	if !ok {
		return 0
	}
	ic.attrs[i].Flags |= abi.AttrFValidOutput
	var b [2]byte
	abi.Native.PutUint16(b[:], ic.attrs[i].Flags)
	if err := ic.mem.Write(ic.arg+hdrSize+uint64(i)*attrSize+4, b[:]); err != nil {
		return unix.EFAULT
	}
	return 0
}

// setData writes a NEW handle or fd back into the attribute's data.
func (ic *icall) setData(id uint16, v uint64) unix.Errno {
	i, ok := ic.byID[id]
	if !ok {
		return 0
	}
	ic.attrs[i].Data = v
	var b [8]byte
	abi.Native.PutUint64(b[:], v)
	if err := ic.mem.Write(ic.arg+hdrSize+uint64(i)*attrSize+8, b[:]); err != nil {
		return unix.EFAULT
	}
	return 0
}

func (d *Device) ctxFor(fd int) *uctx {
	c := d.ctxs[fd]
	if c == nil {
		c = &uctx{fd: fd, name: d.next("ctx"), handles: map[uint32]*object{}, mmapEntries: map[int]*object{}, maps: map[uint64]*mapping{}}
		d.ctxs[fd] = c
	}
	return c
}
