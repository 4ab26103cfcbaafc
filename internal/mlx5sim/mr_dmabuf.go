//go:build linux

package mlx5sim

import (
	"fmt"
	"os"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// Memory registration beyond REG_MR: REG_DMABUF_MR (the MR object's
// ioctl method) and REREG_MR (a write command), with the checks of the
// kernel's uverbs_std_types_mr.c and uverbs_cmd.c. The simulated device
// has no memory behind an MR, so any open fd stands for a dma-buf; the
// trace names it by what /proc/PID/fd/N links to, the same in both
// interpreters for a memfd of the same name.

// mrAccessMask is the access the kernel's REG_DMABUF_MR takes
// (uverbs_get_flags32): local write, remote read, write and atomic,
// relaxed ordering.
const mrAccessMask = abi.UverbsAccessLocalWrite | abi.UverbsAccessRemoteWrite | abi.UverbsAccessRemoteRead |
	abi.UverbsAccessRemoteAtomic | 1<<20

// fdName names fd of the calling process.
func (c *call) fdName(fd int32) string {
	pid := os.Getpid()
	if p, ok := c.mem.(ProcMem); ok {
		pid = p.Pid
	}
	t, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	if err != nil {
		return "bad"
	}
	return fmt.Sprintf("%q", t)
}

func (c *call) ioctlRegDmabufMR() unix.Errno {
	ic := c.ic
	name := c.d.peek("mr")
	pdh, _ := ic.data(abi.UverbsAttrRegDmabufMRPDHandle)
	pd := c.get("pd", uint32(pdh))
	offset, _, e1 := ic.u64(abi.UverbsAttrRegDmabufMROffset)
	length, _, e2 := ic.u64(abi.UverbsAttrRegDmabufMRLength)
	iova, _, e3 := ic.u64(abi.UverbsAttrRegDmabufMRIOVA)
	fd, _, e4 := ic.u32(abi.UverbsAttrRegDmabufMRFD)
	access, e5 := ic.flags(abi.UverbsAttrRegDmabufMRAccessFlags)
	c.descf("REG_DMABUF_MR %s pd=%s fd=%s offset=%#x len=%d iova=%#x access=%#x attrs=%s",
		name, nameOf(pd), c.fdName(int32(fd)), offset, length, iova, access, ic.attrList())
	for _, e := range []unix.Errno{e1, e2, e3, e4, e5} {
		if e != 0 {
			return c.finish(e)
		}
	}
	switch {
	case offset&0xfff != iova&0xfff, access&^mrAccessMask != 0, pd == nil:
		return c.finish(unix.EINVAL)
	case access&(abi.UverbsAccessRemoteWrite|abi.UverbsAccessRemoteAtomic) != 0 && access&abi.UverbsAccessLocalWrite == 0:
		return c.finish(unix.EINVAL) // ib_check_mr_access
	case length == 0 || offset+length < offset || iova+length < iova:
		return c.finish(unix.EINVAL)
	case c.fdName(int32(fd)) == "bad":
		return c.finish(unix.EBADF) // dma_buf_get
	}
	o := &object{kind: "mr", name: c.d.next("mr"), pd: pd, start: iova, length: length, lkey: c.d.nextMkey}
	c.d.nextMkey += 0x100
	c.add(o)
	pd.refs++
	if e := ic.setData(abi.UverbsAttrRegDmabufMRHandle, uint64(o.handle)); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	var key [4]byte
	abi.Native.PutUint32(key[:], o.lkey)
	if e := ic.out(abi.UverbsAttrRegDmabufMRRespLKey, key[:]); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := ic.out(abi.UverbsAttrRegDmabufMRRespRKey, key[:]); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	c.resf("handle=%d lkey=%#x rkey=%#x", o.handle, o.lkey, o.lkey)
	return c.finish(0)
}

func (c *call) writeReregMR(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsReregMR](in)
	mr := c.get("mr", req.MRHandle)
	var pd *object
	if req.Flags&abi.UverbsReregMRPD != 0 {
		pd = c.get("pd", req.PDHandle)
	}
	va := "=start"
	if req.HCAVa != req.Start {
		va = fmt.Sprintf("%#x", req.HCAVa)
	}
	c.descf("REREG_MR %s flags=%#x start=%s len=%d hca_va%s pd=%s access=%#x drv_in=%s",
		nameOf(mr), req.Flags, c.d.ptrName(req.Start), req.Length, va, nameOf(pd), req.AccessFlags, hexs(c.drvIn))
	const supported = abi.UverbsReregMRTrans | abi.UverbsReregMRPD | abi.UverbsReregMRAccess
	switch {
	case req.Flags == 0 || req.Flags&^supported != 0:
		return c.finish(unix.EINVAL)
	case req.Flags&abi.UverbsReregMRTrans != 0 && (req.Start == 0 || req.HCAVa == 0 || req.Length == 0 || req.Start&0xfff != req.HCAVa&0xfff):
		return c.finish(unix.EINVAL)
	case mr == nil:
		return c.finish(unix.EINVAL)
	case req.Flags&abi.UverbsReregMRAccess != 0 && req.AccessFlags&(abi.UverbsAccessRemoteWrite|abi.UverbsAccessRemoteAtomic) != 0 &&
		req.AccessFlags&abi.UverbsAccessLocalWrite == 0:
		return c.finish(unix.EINVAL)
	case req.Flags&abi.UverbsReregMRPD != 0 && pd == nil:
		return c.finish(unix.EINVAL)
	}
	if pd != nil {
		unref(mr.pd)
		mr.pd = pd
		pd.refs++
	}
	if req.Flags&abi.UverbsReregMRTrans != 0 {
		// New pages: mlx5_ib_rereg_user_mr makes a new mkey unless UMR can
		// reuse the old one; this device always makes one.
		mr.start, mr.length = req.HCAVa, req.Length
		mr.lkey = c.d.nextMkey
		c.d.nextMkey += 0x100
	}
	r := abi.UverbsReregMRResp{LKey: mr.lkey, RKey: mr.lkey}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		return c.finish(e)
	}
	c.resf("lkey=%#x rkey=%#x", mr.lkey, mr.lkey)
	return c.finish(0)
}
