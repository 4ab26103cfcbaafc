//go:build linux

package mlx5sim

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/rdma"
	"golang.org/x/sys/unix"
)

// Core verbs handlers (ib_uverbs_cmd.c and the uverbs_std_types_*.c
// methods), shared by write(), INVOKE_WRITE and native ioctl methods.

const numCompVectors = 8

// ---- context ----

func (c *call) writeGetContext(in []byte, out outbuf) unix.Errno {
	c.descf("GET_CONTEXT %s", c.c.name)
	if c.c.ready {
		return c.finish(unix.EINVAL)
	}
	drvResp, e := c.mlx5AllocUcontext()
	if e != 0 {
		return c.finish(e)
	}
	fd, e := c.newFD()
	if e != 0 {
		return c.finish(e)
	}
	r := abi.UverbsGetContextResp{AsyncFD: uint32(fd), NumCompVectors: numCompVectors}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.usedSpare = false
		return c.finish(e)
	}
	if e := c.drv(drvResp); e != 0 {
		c.usedSpare = false
		return c.finish(e)
	}
	c.c.ready = true
	c.resf("async_fd=new nvec=%d", numCompVectors)
	c.descContextResp(drvResp)
	return c.finish(0)
}

func (c *call) ioctlGetContext() unix.Errno {
	c.descf("GET_CONTEXT %s", c.c.name)
	if c.c.ready {
		return c.finish(unix.EINVAL)
	}
	drvResp, e := c.mlx5AllocUcontext()
	if e != 0 {
		return c.finish(e)
	}
	var nv [4]byte
	abi.Native.PutUint32(nv[:], numCompVectors)
	if e := c.ic.out(abi.UverbsAttrGetContextNumCompVectors, nv[:]); e != 0 {
		return c.finish(e)
	}
	var cs [8]byte
	abi.Native.PutUint64(cs[:], 1) // IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS
	if e := c.ic.out(abi.UverbsAttrGetContextCoreSupport, cs[:]); e != 0 {
		return c.finish(e)
	}
	if e := c.drv(drvResp); e != 0 {
		return c.finish(e)
	}
	c.c.ready = true
	c.resf("nvec=%d", numCompVectors)
	c.descContextResp(drvResp)
	return c.finish(0)
}

func (c *call) ioctlQueryContext() unix.Errno {
	c.skip = true
	c.descf("QUERY_CONTEXT")
	return c.finish(unix.EOPNOTSUPP)
}

func (c *call) ioctlAsyncAlloc() unix.Errno {
	c.skip = true
	c.descf("ASYNC_EVENT_ALLOC")
	fd, e := c.newFD()
	if e != 0 {
		return c.finish(e)
	}
	if e := c.ic.setData(abi.UverbsAttrAsyncEventAllocFDHandle, uint64(fd)); e != 0 {
		c.usedSpare = false
		return c.finish(e)
	}
	c.resf("fd=new")
	return c.finish(0)
}

// ---- queries (recorded, not compared) ----

// portCapFlags: IB_PORT_CM_SUP | IB_UVERBS_PCF_IP_BASED_GIDS (RoCE,
// mlx5_query_port_roce + make_port_cap_flags).
const portCapFlags = 1<<16 | 1<<26

func portResp() abi.UverbsQueryPortResp {
	return abi.UverbsQueryPortResp{
		PortCapFlags: portCapFlags, MaxMsgSz: 1 << 30, GIDTblLen: uint32(len(portGIDs)), PkeyTblLen: 1,
		State: 4, MaxMTU: 5, ActiveMTU: 5, ActiveWidth: 2, ActiveSpeed: 32, PhysState: 5,
		LinkLayer: 2, // IB_LINK_LAYER_ETHERNET
		Flags:     1, // IB_UVERBS_QPF_GRH_REQUIRED
	}
}

func (c *call) writeQueryPort(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsQueryPort](in)
	c.descf("QUERY_PORT port=%d", req.PortNum)
	if req.PortNum != 1 {
		return c.finish(unix.EINVAL)
	}
	r := portResp()
	return c.finish(c.resp(out, abi.Bytes(&r)))
}

func (c *call) ioctlQueryPort() unix.Errno {
	c.skip = true
	v, _, e := c.ic.constv(abi.UverbsAttrQueryPortPortNum)
	c.descf("QUERY_PORT port=%d", v)
	if e != 0 {
		return c.finish(e)
	}
	if v != 1 {
		return c.finish(unix.EINVAL)
	}
	r := abi.UverbsQueryPortRespEx{LegacyResp: portResp()}
	return c.finish(c.resp(c.ic.outbuf(abi.UverbsAttrQueryPortResp), abi.Bytes(&r)))
}

func deviceResp(p Profile) abi.UverbsQueryDeviceResp {
	r := abi.UverbsQueryDeviceResp{
		FwVer: fwMajor<<32 | fwMinor<<16 | fwSub, MaxMRSize: ^uint64(0), PageSizeCap: ^uint64(0xfff),
		VendorID: 0x15b3, VendorPartID: uint32(p.DevID), MaxQP: 1 << 18, MaxQPWR: 1 << 15,
		DeviceCapFlags: 0xe5721c36, MaxSGE: 30, MaxSGERd: 30, MaxCQ: 1 << 24, MaxCQE: 1<<22 - 1,
		MaxMR: 1 << 24, MaxPD: 1 << 24, MaxQPRdAtom: 16, MaxResRdAtom: 1 << 22, MaxQPInitRdAtom: 16,
		AtomicCap: 1, MaxMcastGrp: 1 << 21, MaxMcastQPAttach: 240, MaxTotalMcastQPAttach: 240 << 21,
		MaxAH: 1<<31 - 1, MaxSRQ: 1 << 23, MaxSRQWR: 1<<15 - 1, MaxSRQSGE: 31, MaxPkeys: 1,
		LocalCAAckDelay: 16, PhysPortCnt: 1,
	}
	if p.NoAtomic {
		r.AtomicCap = 0
	}
	binary.BigEndian.PutUint64(r.NodeGUID[:], NodeGUID)
	binary.BigEndian.PutUint64(r.SysImageGUID[:], SysImageGUID)
	return r
}

func (c *call) writeQueryDevice(in []byte, out outbuf) unix.Errno {
	c.descf("QUERY_DEVICE")
	r := deviceResp(c.d.p)
	return c.finish(c.resp(out, abi.Bytes(&r)))
}

func (c *call) writeExQueryDevice(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsExQueryDevice](in)
	c.descf("EX_QUERY_DEVICE comp_mask=%#x", req.CompMask)
	if req.CompMask != 0 || req.Reserved != 0 {
		return c.finish(unix.EINVAL)
	}
	var r abi.UverbsExQueryDeviceResp
	r.Base = deviceResp(c.d.p)
	r.TimestampMask = 1<<63 - 1
	r.HCACoreClock = 156250
	r.ResponseLength = uint32(min(out.n, len(abi.Bytes(&r))))
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		return c.finish(e)
	}
	// mlx5_ib_query_device_resp: only response_length (all caps zero).
	var drv [8]byte
	abi.Native.PutUint32(drv[4:], uint32(min(c.drvOut.n, 88)))
	return c.finish(c.drv(drv[:]))
}

func gidEntry(i int) abi.UverbsGIDEntry {
	t := abi.UverbsGIDTypeRoCEv2
	if portGIDTypes[i] != "RoCE v2" {
		t = abi.UverbsGIDTypeRoCEv1
	}
	return abi.UverbsGIDEntry{GID: portGIDs[i], GIDIndex: uint32(i), PortNum: 1, GIDType: t}
}

func (c *call) ioctlQueryGIDTable() unix.Errno {
	c.skip = true
	esz, _, e := c.ic.constv(abi.UverbsAttrQueryGIDTableEntrySize)
	c.descf("QUERY_GID_TABLE entry_size=%d", esz)
	if e != 0 {
		return c.finish(e)
	}
	flags, e := c.ic.flags(abi.UverbsAttrQueryGIDTableFlags)
	if e != 0 || flags != 0 {
		return c.finish(unix.EINVAL)
	}
	ob := c.ic.outbuf(abi.UverbsAttrQueryGIDTableRespEntries)
	if esz == 0 || esz > 4096 || ob.n/int(esz) < len(portGIDs) {
		return c.finish(unix.EINVAL)
	}
	buf := make([]byte, int(esz)*len(portGIDs))
	for i := range portGIDs {
		g := gidEntry(i)
		copy(buf[i*int(esz):], abi.Bytes(&g))
	}
	if e := c.ic.out(abi.UverbsAttrQueryGIDTableRespEntries, buf); e != 0 {
		return c.finish(e)
	}
	var n [8]byte
	abi.Native.PutUint64(n[:], uint64(len(portGIDs)))
	return c.finish(c.ic.out(abi.UverbsAttrQueryGIDTableRespNumEntries, n[:]))
}

func (c *call) ioctlQueryGIDEntry() unix.Errno {
	c.skip = true
	port, _, _ := c.ic.constv(0)
	idx, _, _ := c.ic.constv(1)
	c.descf("QUERY_GID_ENTRY port=%d index=%d", port, idx)
	if flags, e := c.ic.flags(2); e != 0 || flags != 0 {
		return c.finish(unix.EINVAL)
	}
	if port != 1 || idx >= uint64(len(portGIDs)) {
		return c.finish(unix.EINVAL)
	}
	g := gidEntry(int(idx))
	return c.finish(c.ic.out(3, abi.Bytes(&g)))
}

// ---- PD, MR, AH, completion channel ----

func (c *call) writeAllocPD(in []byte, out outbuf) unix.Errno {
	name := c.d.peek("pd")
	c.descf("ALLOC_PD %s drv_in=%s", name, hexs(c.drvIn))
	o := &object{kind: "pd", name: c.d.next("pd"), pdn: c.d.nextPDN}
	c.d.nextPDN++
	c.add(o)
	r := abi.UverbsAllocPDResp{PDHandle: o.handle}
	var drv [4]byte // mlx5_ib_alloc_pd_resp
	abi.Native.PutUint32(drv[:], o.pdn)
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.d.dropObject(o)
		return c.finish(e)
	}
	if e := c.drv(drv[:]); e != 0 {
		c.d.dropObject(o)
		return c.finish(e)
	}
	c.resf("handle=%d pdn=%#x", o.handle, o.pdn)
	return c.finish(0)
}

var destroyNames = map[string]string{"pd": "DEALLOC_PD", "mr": "DEREG_MR", "ah": "DESTROY_AH"}

func (c *call) destroySimple(kind string, h uint32) unix.Errno {
	o := c.get(kind, h)
	if o == nil {
		c.descf("%s handle=%d", destroyNames[kind], h)
		if c.ic != nil {
			return c.finish(unix.ENOENT)
		}
		return c.finish(unix.EINVAL)
	}
	c.descf("%s %s", destroyNames[kind], o.name)
	if o.refs > 0 {
		return c.finish(unix.EBUSY)
	}
	c.d.destroyObject(o)
	return c.finish(0)
}

func writeDestroy(kind string) func(*call, []byte, outbuf) unix.Errno {
	return func(c *call, in []byte, _ outbuf) unix.Errno {
		return c.destroySimple(kind, abi.Native.Uint32(in))
	}
}

func ioctlDestroy(kind string) func(*call) unix.Errno {
	return func(c *call) unix.Errno {
		h, _ := c.ic.data(0)
		return c.destroySimple(kind, uint32(h))
	}
}

func (c *call) writeRegMR(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsRegMR](in)
	name := c.d.peek("mr")
	va := "=start"
	if req.HCAVa != req.Start {
		va = fmt.Sprintf("%#x", req.HCAVa)
	}
	pd := c.get("pd", req.PDHandle)
	c.descf("REG_MR %s pd=%s start=%s len=%d hca_va%s access=%#x drv_in=%s", name, nameOf(pd), name, req.Length, va, req.AccessFlags, hexs(c.drvIn))
	if req.Start&0xfff != req.HCAVa&0xfff {
		return c.finish(unix.EINVAL)
	}
	// ib_check_mr_access: remote write/atomic need local write.
	if req.AccessFlags&(abi.UverbsAccessRemoteWrite|abi.UverbsAccessRemoteAtomic) != 0 && req.AccessFlags&abi.UverbsAccessLocalWrite == 0 {
		return c.finish(unix.EINVAL)
	}
	if pd == nil {
		return c.finish(unix.EINVAL)
	}
	if req.Length == 0 || req.Start+req.Length < req.Start {
		return c.finish(unix.EINVAL)
	}
	o := &object{kind: "mr", name: c.d.next("mr"), pd: pd, start: req.Start, length: req.Length, lkey: c.d.nextMkey}
	c.d.nextMkey += 0x100 // mkey index << 8 | variant
	c.add(o)
	pd.refs++
	r := abi.UverbsRegMRResp{MRHandle: o.handle, LKey: o.lkey, RKey: o.lkey}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	c.resf("handle=%d lkey=%#x rkey=%#x", o.handle, o.lkey, o.lkey)
	return c.finish(0)
}

// roceDMAC is the destination MAC the kernel resolves for a RoCE AH
// (ib_resolve_eth_dmac): fixed per destination GID here.
func roceDMAC(g [16]byte) [6]byte {
	if g[0] == 0xfe && g[1] == 0x80 { // link-local: MAC from the EUI-64
		return [6]byte{g[8] ^ 2, g[9], g[10], g[13], g[14], g[15]}
	}
	return [6]byte{0x02, 0x00, g[12], g[13], g[14], g[15]}
}

func (c *call) writeCreateAH(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsCreateAH](in)
	a := req.Attr
	pd := c.get("pd", req.PDHandle)
	name := c.d.peek("ah")
	c.descf("CREATE_AH %s pd=%s dgid=%s flow=%d sgid=%d hop=%d tclass=%d dlid=%d sl=%d spb=%d rate=%d global=%d port=%d drv_in=%s",
		name, nameOf(pd), rdma.GID(a.GRH.DGID).String(), a.GRH.FlowLabel, a.GRH.SGIDIndex, a.GRH.HopLimit, a.GRH.TrafficClass,
		a.DLID, a.SL, a.SrcPathBits, a.StaticRate, a.IsGlobal, a.PortNum, hexs(c.drvIn))
	if pd == nil {
		return c.finish(unix.EINVAL)
	}
	// rdma_check_ah_attr: valid port; RoCE needs a GRH with a valid sgid.
	if a.PortNum != 1 || a.IsGlobal == 0 || int(a.GRH.SGIDIndex) >= len(portGIDs) {
		return c.finish(unix.EINVAL)
	}
	// mlx5_ib_create_ah: the RoCE answer needs room for dmac.
	const minResp = 10 // offsetofend(struct mlx5_ib_create_ah_resp, dmac)
	if c.drvOut.n > 0 && c.drvOut.n < minResp {
		return c.finish(unix.EINVAL)
	}
	o := &object{kind: "ah", name: c.d.next("ah"), pd: pd}
	c.add(o)
	pd.refs++
	r := abi.UverbsCreateAHResp{AHHandle: o.handle}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	mac := roceDMAC(a.GRH.DGID)
	var drv [16]byte
	abi.Native.PutUint32(drv[:], minResp)
	copy(drv[4:], mac[:])
	if c.drvOut.n > 0 {
		if e := c.drv(drv[:minResp]); e != 0 {
			c.d.destroyObject(o)
			return c.finish(e)
		}
	}
	c.resf("handle=%d dmac=%x", o.handle, mac)
	return c.finish(0)
}

func (c *call) writeCreateCompChannel(in []byte, out outbuf) unix.Errno {
	name := c.d.peek("ch")
	c.descf("CREATE_COMP_CHANNEL %s", name)
	fd, e := c.newFD()
	if e != 0 {
		return c.finish(e)
	}
	r := abi.UverbsCreateCompChannelResp{FD: uint32(fd)}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.usedSpare = false
		return c.finish(e)
	}
	o := &object{kind: "channel", name: c.d.next("ch")}
	c.d.objs = append(c.d.objs, o)
	c.d.chans[fd] = o.name
	c.resf("fd=new")
	return c.finish(0)
}

// ---- CQ ----

type cqArgs struct {
	cqe, vector uint32
	channel     int32
	flags       uint32
	uhandle     uint64 // what a completion event carries (cqevent.go)
}

func (c *call) channelName(fd int32) string {
	if fd < 0 {
		return "-"
	}
	if n, ok := c.d.chans[int(fd)]; ok {
		return n
	}
	return "?"
}

// createCQ is ib_uverbs create_cq + mlx5_ib_create_cq (cq.c
// create_cq_user) for a user CQ.
func (c *call) createCQ(a cqArgs) (*object, unix.Errno) {
	name := c.d.peek("cq")
	ch := c.channelName(a.channel)
	c.descf("CREATE_CQ %s cqe=%d vector=%d channel=%s flags=%#x drv{%s}", name, a.cqe, a.vector, ch, a.flags, c.d.descCreateCQDrv(name, c.drvIn))
	if a.vector >= numCompVectors || ch == "?" {
		return nil, unix.EINVAL
	}
	if a.flags != 0 {
		return nil, unix.EOPNOTSUPP
	}
	if a.cqe < 1 || a.cqe > 1<<22 {
		return nil, unix.EINVAL
	}
	if len(c.drvIn) < 22 { // offsetof(struct mlx5_ib_create_cq, flags)
		return nil, unix.EINVAL
	}
	u := decodeCreateCQ(c.drvIn)
	if u.Flags&^0x7 != 0 || (u.CQESize != 64 && u.CQESize != 128) || u.Reserved0 != 0 || u.Reserved1 != 0 || u.CQECompEn != 0 {
		return nil, unix.EINVAL
	}
	if len(c.drvIn) > 32 && !allZero(c.drvIn[32:]) {
		return nil, unix.EINVAL
	}
	if u.Flags&2 != 0 { // MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX
		if c.uarByPage(uint32(u.UARPageIndex)) == nil {
			return nil, unix.EINVAL
		}
	} else if c.c.dynUAR {
		return nil, unix.EINVAL // no UAR to ring: create_cq_user
	}
	ncqe := 1
	for ncqe < int(a.cqe)+1 {
		ncqe <<= 1
	}
	if u.BufAddr == 0 || u.DBAddr == 0 {
		return nil, unix.EFAULT
	}
	o := &object{kind: "cq", name: c.d.next("cq"), cqBuf: u.BufAddr, cqDB: u.DBAddr, ncqe: ncqe, cqeSize: int(u.CQESize), cqn: c.d.nextCQN, channel: ch,
		cqEv: cqEvents{fd: int(a.channel), uhandle: a.uhandle}}
	c.d.nextCQN++
	c.add(o)
	c.d.addRegion(o, o.name+".buf", o.cqBuf, ncqe*o.cqeSize)
	c.d.addWatched(o, o.name+".db", o.cqDB, 8)
	return o, 0
}

func (c *call) cqCreated(o *object) unix.Errno {
	var drv [8]byte // mlx5_ib_create_cq_resp: the kernel copies cqn only
	abi.Native.PutUint32(drv[:], o.cqn)
	if c.drvOut.n > 0 {
		if e := c.drv(drv[:4]); e != 0 {
			return e
		}
	}
	c.resf("handle=%d cqe=%d cqn=%#x", o.handle, o.ncqe-1, o.cqn)
	return 0
}

func (c *call) writeCreateCQ(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsCreateCQ](in)
	o, e := c.createCQ(cqArgs{cqe: req.CQE, vector: req.CompVector, channel: req.CompChannel, uhandle: req.UserHandle})
	if e != 0 {
		return c.finish(e)
	}
	r := abi.UverbsCreateCQResp{CQHandle: o.handle, CQE: uint32(o.ncqe - 1)}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := c.cqCreated(o); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	return c.finish(0)
}

func (c *call) writeExCreateCQ(in []byte, out outbuf) unix.Errno {
	c.iface = "write-ex"
	var r struct {
		Handle, CQE, CompMask, RespLen uint32
	}
	user := in[8:]
	a := cqArgs{cqe: abi.Native.Uint32(user), vector: abi.Native.Uint32(user[4:]), channel: int32(abi.Native.Uint32(user[8:])), flags: abi.Native.Uint32(user[16:]), uhandle: abi.Native.Uint64(in)}
	if abi.Native.Uint32(user[12:]) != 0 { // comp_mask
		c.descf("CREATE_CQ comp_mask set")
		return c.finish(unix.EINVAL)
	}
	o, e := c.createCQ(a)
	if e != 0 {
		return c.finish(e)
	}
	r.Handle, r.CQE, r.RespLen = o.handle, uint32(o.ncqe-1), uint32(min(out.n, 16))
	b := make([]byte, 16)
	abi.Native.PutUint32(b, r.Handle)
	abi.Native.PutUint32(b[4:], r.CQE)
	abi.Native.PutUint32(b[12:], r.RespLen)
	if e := c.resp(out, b); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := c.cqCreated(o); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	return c.finish(0)
}

func (c *call) ioctlCreateCQ() unix.Errno {
	ic := c.ic
	var a cqArgs
	var e unix.Errno
	if a.cqe, _, e = ic.u32(abi.UverbsAttrCreateCQCQE); e != 0 {
		c.descf("CREATE_CQ")
		return c.finish(e)
	}
	if a.uhandle, _, e = ic.u64(abi.UverbsAttrCreateCQUserHandle); e != 0 {
		c.descf("CREATE_CQ")
		return c.finish(e)
	}
	if a.vector, _, e = ic.u32(abi.UverbsAttrCreateCQCompVector); e != 0 {
		c.descf("CREATE_CQ")
		return c.finish(e)
	}
	if a.flags, e = ic.flags(abi.UverbsAttrCreateCQFlags); e != 0 {
		c.descf("CREATE_CQ")
		return c.finish(e)
	}
	a.channel = -1
	if v, ok := ic.data(abi.UverbsAttrCreateCQCompChannel); ok {
		a.channel = int32(v)
	}
	o, e := c.createCQ(a)
	if e != 0 {
		return c.finish(e)
	}
	var n [4]byte
	abi.Native.PutUint32(n[:], uint32(o.ncqe-1))
	if e := ic.out(abi.UverbsAttrCreateCQRespCQE, n[:]); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := ic.setData(abi.UverbsAttrCreateCQHandle, uint64(o.handle)); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := c.cqCreated(o); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	return c.finish(0)
}

func (c *call) destroyCQ(h uint32) (*object, unix.Errno) {
	o := c.get("cq", h)
	if o == nil {
		c.descf("DESTROY_CQ handle=%d", h)
		if c.ic != nil && c.iface == "ioctl" {
			return nil, unix.ENOENT
		}
		return nil, unix.EINVAL
	}
	c.descf("DESTROY_CQ %s", o.name)
	if o.refs > 0 {
		return nil, unix.EBUSY
	}
	c.d.destroyObject(o)
	return o, 0
}

func (c *call) writeDestroyCQ(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsDestroyCQ](in)
	o, e := c.destroyCQ(req.CQHandle)
	if e != 0 {
		return c.finish(e)
	}
	r := abi.UverbsDestroyCQResp{CompEventsReported: o.cqEv.reported}
	return c.finish(c.resp(out, abi.Bytes(&r)))
}

func (c *call) ioctlDestroyCQ() unix.Errno {
	h, _ := c.ic.data(abi.UverbsAttrDestroyCQHandle)
	o, e := c.destroyCQ(uint32(h))
	if e != 0 {
		return c.finish(e)
	}
	r := abi.UverbsDestroyCQResp{CompEventsReported: o.cqEv.reported}
	return c.finish(c.ic.out(abi.UverbsAttrDestroyCQResp, abi.Bytes(&r)))
}

func (c *call) writeReqNotifyCQ(in []byte, _ outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsReqNotifyCQ](in)
	o := c.get("cq", req.CQHandle)
	c.descf("REQ_NOTIFY_CQ %s solicited=%d", nameOf(o), req.SolicitedOnly)
	if o == nil {
		return c.finish(unix.EINVAL)
	}
	return c.finish(0)
}
