//go:build linux

package mlx5sim

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// SRQ verbs: ib_uverbs create/modify/query/destroy SRQ (the write commands
// and UVERBS_METHOD_SRQ_CREATE/DESTROY) with mlx5_ib's srq.c for a basic
// user SRQ, and the limit (lwm) the device arms and fires.

// srqState is an SRQ's kernel and device state.
type srqState struct {
	buf, db  uint64
	srqn     uint32
	max      uint32 // WQEs: roundup_pow_of_two(max_wr + 1)
	maxGS    uint32
	shift    uint32
	lwm      uint32 // armed limit; 0: not armed
	consumed uint32 // WQEs the injected receive CQEs took
}

// createSRQ is __uverbs_create_xsrq + mlx5_ib_create_srq (create_srq_user).
func (c *call) createSRQ(pdh, maxWR, maxSGE, limit uint32) (*object, unix.Errno) {
	d := c.d
	name := d.peek("srq")
	pd := c.get("pd", pdh)
	c.descf("CREATE_SRQ %s pd=%s max_wr=%d max_sge=%d limit=%d drv{%s}", name, nameOf(pd), maxWR, maxSGE, limit, d.descCreateSRQDrv(name, c.drvIn))
	if pd == nil {
		return nil, unix.EINVAL
	}
	const maxSRQWQEs = 1 << 15 // 1 << log_max_srq_sz
	if maxWR >= maxSRQWQEs || maxSGE > 31 {
		return nil, unix.EINVAL
	}
	const drvLen = 32 // sizeof(struct mlx5_ib_create_srq)
	if len(c.drvIn) < 24 || len(c.drvIn) > drvLen && !allZero(c.drvIn[drvLen:]) {
		return nil, unix.EINVAL
	}
	var u abi.MLX5CreateSRQ
	b := make([]byte, drvLen)
	copy(b, c.drvIn)
	u = abi.Decode[abi.MLX5CreateSRQ](b)
	if u.Reserved0 != 0 || u.Reserved1 != 0 || u.Flags&^abi.MLX5SRQFlagSignature != 0 {
		return nil, unix.EINVAL
	}
	// get_srq_user_index: with cqe_version 1 the index must be there
	// and fit in 24 bits.
	if c.c.cqeVersion != 0 && (len(c.drvIn) < 28 || u.UIdx&^0xffffff != 0) {
		return nil, unix.EINVAL
	}
	if u.BufAddr == 0 || u.DBAddr == 0 {
		return nil, unix.EFAULT
	}
	s := &srqState{buf: u.BufAddr, db: u.DBAddr, srqn: d.nextSRQN, maxGS: maxSGE}
	s.max = 1
	for s.max < maxWR+1 {
		s.max <<= 1
	}
	desc := uint32(16 + maxSGE*16)
	desc = max(desc, 32)
	size := uint32(1)
	for size < desc {
		size <<= 1
	}
	for 1<<s.shift < size {
		s.shift++
	}
	d.nextSRQN++
	o := &object{kind: "srq", name: d.next("srq"), pd: pd, srq: s}
	c.add(o)
	pd.refs++
	d.addRegion(o, o.name+".buf", s.buf, int(s.max)<<s.shift)
	d.addWatched(o, o.name+".db", s.db, 4)
	return o, 0
}

// descCreateSRQDrv names struct mlx5_ib_create_srq's fields for the trace.
func (d *Device) descCreateSRQDrv(name string, b []byte) string {
	var full [32]byte
	copy(full[:], b)
	u := abi.Decode[abi.MLX5CreateSRQ](full[:])
	buf := name + ".buf"
	if u.BufAddr == 0 {
		buf = "0"
	}
	return fmt.Sprintf("buf=%s db=%s flags=%#x uidx=%d len=%d", buf, d.dbName(u.DBAddr), u.Flags, u.UIdx, len(b))
}

// srqCreated answers the driver data (struct mlx5_ib_create_srq_resp).
func (c *call) srqCreated(o *object) unix.Errno {
	var drv [8]byte
	abi.Native.PutUint32(drv[:], o.srq.srqn)
	if c.drvOut.n > 0 {
		if e := c.drv(drv[:min(c.drvOut.n, 8)]); e != 0 {
			return e
		}
	}
	c.resf("handle=%d srqn=%#x max_wr=%d max_sge=%d", o.handle, o.srq.srqn, o.srq.max-1, o.srq.maxGS)
	return 0
}

func (c *call) writeCreateSRQ(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsCreateSRQ](in)
	o, e := c.createSRQ(req.PDHandle, req.MaxWR, req.MaxSGE, req.SRQLimit)
	if e != 0 {
		return c.finish(e)
	}
	r := abi.UverbsCreateSRQResp{SRQHandle: o.handle, MaxWR: o.srq.max - 1, MaxSGE: o.srq.maxGS}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := c.srqCreated(o); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	return c.finish(0)
}

func (c *call) ioctlCreateSRQ() unix.Errno {
	ic := c.ic
	fail := func(e unix.Errno) unix.Errno {
		if c.desc.Len() == 0 {
			c.descf("CREATE_SRQ")
		}
		return c.finish(e)
	}
	if t, _, e := ic.constv(abi.UverbsAttrCreateSRQType); e != 0 || t != abi.UverbsSRQTBasic {
		return fail(unix.EOPNOTSUPP) // XRC and tag-matching SRQs are not modelled
	}
	pdh, _ := ic.data(abi.UverbsAttrCreateSRQPDHandle)
	if _, _, e := ic.u64(abi.UverbsAttrCreateSRQUserHandle); e != 0 {
		return fail(e)
	}
	maxWR, _, e1 := ic.u32(abi.UverbsAttrCreateSRQMaxWR)
	maxSGE, _, e2 := ic.u32(abi.UverbsAttrCreateSRQMaxSGE)
	limit, _, e3 := ic.u32(abi.UverbsAttrCreateSRQLimit)
	for _, e := range []unix.Errno{e1, e2, e3} {
		if e != 0 {
			return fail(e)
		}
	}
	o, e := c.createSRQ(uint32(pdh), maxWR, maxSGE, limit)
	if e != 0 {
		return fail(e)
	}
	var mw, ms [4]byte
	abi.Native.PutUint32(mw[:], o.srq.max-1)
	abi.Native.PutUint32(ms[:], o.srq.maxGS)
	for _, e := range []unix.Errno{
		ic.out(abi.UverbsAttrCreateSRQRespMaxWR, mw[:]),
		ic.out(abi.UverbsAttrCreateSRQRespMaxSGE, ms[:]),
		ic.setData(abi.UverbsAttrCreateSRQHandle, uint64(o.handle)),
		c.srqCreated(o),
	} {
		if e != 0 {
			c.d.destroyObject(o)
			return c.finish(e)
		}
	}
	return c.finish(0)
}

// writeModifySRQ is ib_uverbs_modify_srq + mlx5_ib_modify_srq: only the
// limit (arm) is supported; a resize is refused, as mlx5_ib does.
func (c *call) writeModifySRQ(in []byte, _ outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsModifySRQ](in)
	o := c.get("srq", req.SRQHandle)
	c.descf("MODIFY_SRQ %s mask=%#x max_wr=%d limit=%d drv_in=%s", nameOf(o), req.AttrMask, req.MaxWR, req.SRQLimit, hexs(c.drvIn))
	if o == nil {
		return c.finish(unix.EINVAL)
	}
	if req.AttrMask&abi.UverbsSRQMaxWR != 0 {
		return c.finish(unix.EINVAL)
	}
	if req.AttrMask&abi.UverbsSRQLimit != 0 {
		if req.SRQLimit >= o.srq.max {
			return c.finish(unix.EINVAL)
		}
		o.srq.lwm = req.SRQLimit // mlx5_cmd_arm_srq
	}
	return c.finish(0)
}

func (c *call) writeQuerySRQ(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsQuerySRQ](in)
	o := c.get("srq", req.SRQHandle)
	c.descf("QUERY_SRQ %s", nameOf(o))
	if o == nil {
		return c.finish(unix.EINVAL)
	}
	r := abi.UverbsQuerySRQResp{MaxWR: o.srq.max - 1, MaxSGE: o.srq.maxGS, SRQLimit: o.srq.lwm}
	c.resf("max_wr=%d max_sge=%d limit=%d", r.MaxWR, r.MaxSGE, r.SRQLimit)
	return c.finish(c.resp(out, abi.Bytes(&r)))
}

func (c *call) destroySRQ(h uint32) unix.Errno {
	o := c.get("srq", h)
	if o == nil {
		c.descf("DESTROY_SRQ handle=%d", h)
		if c.iface == "ioctl" {
			return unix.ENOENT
		}
		return unix.EINVAL
	}
	c.descf("DESTROY_SRQ %s", o.name)
	if o.refs > 0 {
		return unix.EBUSY
	}
	c.d.destroyObject(o)
	return 0
}

func (c *call) writeDestroySRQ(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsDestroySRQ](in)
	if e := c.destroySRQ(req.SRQHandle); e != 0 {
		return c.finish(e)
	}
	var r abi.UverbsDestroySRQResp
	return c.finish(c.resp(out, abi.Bytes(&r)))
}

func (c *call) ioctlDestroySRQ() unix.Errno {
	h, _ := c.ic.data(abi.UverbsAttrDestroySRQHandle)
	if e := c.destroySRQ(uint32(h)); e != 0 {
		return c.finish(e)
	}
	var r abi.UverbsDestroySRQResp
	return c.finish(c.ic.out(abi.UverbsAttrDestroySRQResp, abi.Bytes(&r)))
}

// srqConsume is the device taking one WQE of qp's SRQ for a receive CQE:
// it reads the WQE count posted from the doorbell record (the 16-bit
// counter) and, when fewer than the armed limit remain, fires the limit
// event and disarms, as the HCA does. It returns the event line, or "".
func (d *Device) srqConsume(mem Mem, qp *object) string {
	if qp.srqObj == nil {
		return ""
	}
	o := qp.srqObj
	s := o.srq
	s.consumed++
	var db [4]byte
	if err := mem.Read(s.db, db[:]); err != nil {
		return fmt.Sprintf("  srq %s doorbell record unreadable", o.name)
	}
	posted := binary.BigEndian.Uint32(db[:]) & 0xffff
	left := (posted - s.consumed) & 0xffff
	if s.lwm == 0 || left >= s.lwm {
		return ""
	}
	s.lwm = 0
	return fmt.Sprintf("  event SRQ_LIMIT_REACHED %s posted=%d left=%d", o.name, posted, left)
}
