//go:build linux

package mlx5sim

import (
	"fmt"
	"strings"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/rdma"
	"golang.org/x/sys/unix"
)

// QP verbs: ib_uverbs create/modify/query/destroy QP with mlx5_ib's
// create_user_qp (qp.c) for RC, UC and UD.

type qpArgs struct {
	pd, scq, rcq uint32
	srq          bool
	srqH         uint32 // with srq: the SRQ's handle
	caps         abi.UverbsQPCap
	sigAll       bool
	typ          uint8
	flags        uint32 // create flags other than SQ_SIG_ALL
}

var qpTypeNames = map[uint8]string{2: "rc", 3: "uc", 4: "ud"}

// mlx5_ib_create_qp flags libmlx5 may send (mlx5-abi.h).
const (
	qpFlagSignature      = 1 << 0
	qpFlagScatterCQE     = 1 << 1
	qpFlagBfregIndex     = 1 << 3
	qpFlagAllowScatter   = 1 << 8
	qpFlagUARPageIndex   = 1 << 10
	qpFlagsKnown         = qpFlagSignature | qpFlagScatterCQE | qpFlagBfregIndex | qpFlagAllowScatter | qpFlagUARPageIndex
	mlx5InvalidBfreg     = 1 << 31 // MLX5_IB_INVALID_BFREG
	mlx5CreateQPDrvMinIn = 48      // offsetof(struct mlx5_ib_create_qp, ece_options)
)

func (c *call) createQP(a qpArgs) (*object, abi.MLX5CreateQPResp, unix.Errno) {
	var resp abi.MLX5CreateQPResp
	d := c.d
	name := d.peek("qp")
	pd, scq, rcq := c.get("pd", a.pd), c.get("cq", a.scq), c.get("cq", a.rcq)
	var srq *object
	srqName := "-"
	if a.srq {
		srq = c.get("srq", a.srqH)
		srqName = nameOf(srq)
	}
	tn := qpTypeNames[a.typ]
	if tn == "" {
		tn = fmt.Sprintf("type%d", a.typ)
	}
	c.descf("CREATE_QP %s type=%s pd=%s scq=%s rcq=%s srq=%s caps=%d/%d/%d/%d/%d sigall=%d flags=%#x drv{%s}",
		name, tn, nameOf(pd), nameOf(scq), nameOf(rcq), srqName, a.caps.MaxSendWR, a.caps.MaxRecvWR, a.caps.MaxSendSGE,
		a.caps.MaxRecvSGE, a.caps.MaxInlineData, b2i(a.sigAll), a.flags, d.descCreateQPDrv(name, c.drvIn))
	if qpTypeNames[a.typ] == "" {
		return nil, resp, unix.EOPNOTSUPP
	}
	if pd == nil || scq == nil || rcq == nil {
		return nil, resp, unix.EINVAL
	}
	if a.srq && srq == nil {
		return nil, resp, unix.EINVAL
	}
	if a.flags != 0 {
		return nil, resp, unix.EOPNOTSUPP
	}
	// process_udata_size / check_ucmd_data.
	if len(c.drvIn) < mlx5CreateQPDrvMinIn {
		return nil, resp, unix.EINVAL
	}
	if len(c.drvIn) > 56 && !allZero(c.drvIn[56:]) {
		return nil, resp, unix.EINVAL
	}
	u := abi.Decode[abi.MLX5CreateQP](c.drvIn)
	if u.Flags&^qpFlagsKnown != 0 || (u.Flags&qpFlagBfregIndex != 0 && u.Flags&qpFlagUARPageIndex != 0) {
		return nil, resp, unix.EINVAL
	}
	// get_qp_user_index: with cqe_version 1 the user index is mandatory.
	if c.c.cqeVersion != 0 && u.UIdx&^0xffffff != 0 {
		return nil, resp, unix.EINVAL
	}
	if u.ECEOptions != 0 && !d.p.ECE {
		return nil, resp, unix.EOPNOTSUPP
	}
	if u.SQWQECount&(u.SQWQECount-1) != 0 || u.SQWQECount > 1<<15 || u.RQWQECount > 1<<15 || u.RQWQEShift > 31 {
		return nil, resp, unix.EINVAL
	}
	if u.LogNumConcurent != 0 || u.LogNumErrored != 0 || u.Reserved != 0 {
		return nil, resp, unix.EINVAL
	}
	size := int(u.RQWQECount)<<u.RQWQEShift + int(u.SQWQECount)<<6
	if size > 0 && u.BufAddr == 0 || u.DBAddr == 0 {
		return nil, resp, unix.EFAULT
	}
	// The bfreg (UAR register) the QP rings: qp.c create_user_qp.
	bfregn := 0
	switch {
	case u.Flags&qpFlagUARPageIndex != 0:
		if c.uarByPage(u.BfregIndex) == nil {
			return nil, resp, unix.EINVAL
		}
		resp.BfregIndex = mlx5InvalidBfreg
	case u.Flags&qpFlagBfregIndex != 0:
		return nil, resp, unix.EINVAL // legacy dynamic bfregs: not modelled
	default:
		n, e := c.c.allocBfreg()
		if e != 0 {
			return nil, resp, e
		}
		bfregn = n
		resp.BfregIndex = uint32(n/2*4 + n%2) // adjust_bfregn
	}
	if d.p.ECE {
		resp.ECEOptions = u.ECEOptions // firmware accepts the requested version
	}
	o := &object{kind: "qp", name: d.next("qp"), pd: pd, scq: scq, rcq: rcq, qpn: d.nextQPN, uidx: u.UIdx,
		qpBuf: u.BufAddr, qpDB: u.DBAddr, qpSize: size, qpType: a.typ, bfregn: bfregn,
		sqCnt: u.SQWQECount, rqCnt: u.RQWQECount, rqShift: u.RQWQEShift}
	o.qpAttr.caps = a.caps
	if srq != nil { // set_rq_size without a receive queue
		o.qpAttr.caps.MaxRecvWR, o.qpAttr.caps.MaxRecvSGE = 0, 0
		o.srqObj = srq
		srq.refs++
	}
	o.qpAttr.sigAll = a.sigAll
	o.qpAttr.ece = resp.ECEOptions
	d.nextQPN++
	c.add(o)
	pd.refs++
	scq.refs++
	rcq.refs++
	d.addRegion(o, o.name+".buf", o.qpBuf, size)
	d.addWatched(o, o.name+".db", o.qpDB, 8)
	return o, resp, 0
}

func (c *call) qpCreated(o *object, resp abi.MLX5CreateQPResp) unix.Errno {
	if e := c.drv(abi.Bytes(&resp)[:min(c.drvOut.n, 40)]); e != 0 {
		return e
	}
	cp := o.qpAttr.caps
	c.resf("handle=%d qpn=%#x caps=%d/%d/%d/%d/%d drv_out{bfreg=%#x ece=%#x}", o.handle, o.qpn,
		cp.MaxSendWR, cp.MaxRecvWR, cp.MaxSendSGE, cp.MaxRecvSGE, cp.MaxInlineData, resp.BfregIndex, resp.ECEOptions)
	return 0
}

func (c *call) writeCreateQP(in []byte, out outbuf) unix.Errno {
	q := abi.Decode[abi.UverbsCreateQP](in)
	a := qpArgs{pd: q.PDHandle, scq: q.SendCQHandle, rcq: q.RecvCQHandle, srq: q.IsSRQ != 0, srqH: q.SRQHandle, sigAll: q.SQSigAll != 0, typ: q.QPType,
		caps: abi.UverbsQPCap{MaxSendWR: q.MaxSendWR, MaxRecvWR: q.MaxRecvWR, MaxSendSGE: q.MaxSendSGE, MaxRecvSGE: q.MaxRecvSGE, MaxInlineData: q.MaxInlineData}}
	o, drv, e := c.createQP(a)
	if e != 0 {
		return c.finish(e)
	}
	cp := o.qpAttr.caps
	r := abi.UverbsCreateQPResp{QPHandle: o.handle, QPN: o.qpn, MaxSendWR: cp.MaxSendWR, MaxRecvWR: cp.MaxRecvWR,
		MaxSendSGE: cp.MaxSendSGE, MaxRecvSGE: cp.MaxRecvSGE, MaxInlineData: cp.MaxInlineData}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := c.qpCreated(o, drv); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	return c.finish(0)
}

func (c *call) writeExCreateQP(in []byte, out outbuf) unix.Errno {
	c.iface = "write-ex"
	var q [64]byte
	copy(q[:], in)
	n := abi.Native
	a := qpArgs{pd: n.Uint32(q[8:]), scq: n.Uint32(q[12:]), rcq: n.Uint32(q[16:]), srq: q[46] != 0, srqH: n.Uint32(q[20:]), sigAll: q[44] != 0, typ: q[45],
		caps:  abi.UverbsQPCap{MaxSendWR: n.Uint32(q[24:]), MaxRecvWR: n.Uint32(q[28:]), MaxSendSGE: n.Uint32(q[32:]), MaxRecvSGE: n.Uint32(q[36:]), MaxInlineData: n.Uint32(q[40:])},
		flags: n.Uint32(q[52:])}
	if n.Uint32(q[48:]) != 0 { // comp_mask (ind table, create flags, source qpn)
		a.flags |= n.Uint32(q[48:]) << 16
	}
	o, drv, e := c.createQP(a)
	if e != 0 {
		return c.finish(e)
	}
	cp := o.qpAttr.caps
	r := make([]byte, 40)
	for i, v := range []uint32{o.handle, o.qpn, cp.MaxSendWR, cp.MaxRecvWR, cp.MaxSendSGE, cp.MaxRecvSGE, cp.MaxInlineData, 0, 0, uint32(min(out.n, 40))} {
		n.PutUint32(r[4*i:], v)
	}
	if e := c.resp(out, r); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	if e := c.qpCreated(o, drv); e != 0 {
		c.d.destroyObject(o)
		return c.finish(e)
	}
	return c.finish(0)
}

func (c *call) ioctlCreateQP() unix.Errno {
	ic := c.ic
	var a qpArgs
	fail := func(e unix.Errno) unix.Errno {
		if c.desc.Len() == 0 {
			c.descf("CREATE_QP")
		}
		return c.finish(e)
	}
	h := func(id uint16) uint32 {
		v, ok := ic.data(id)
		if !ok {
			return ^uint32(0)
		}
		return uint32(v)
	}
	a.pd, a.scq, a.rcq = h(abi.UverbsAttrCreateQPPDHandle), h(abi.UverbsAttrCreateQPSendCQHandle), h(abi.UverbsAttrCreateQPRecvCQHandle)
	a.srq = ic.has(abi.UverbsAttrCreateQPSRQHandle)
	a.srqH = h(abi.UverbsAttrCreateQPSRQHandle)
	if ic.has(1) || ic.has(6) || ic.has(11) { // xrcd, ind table, source qpn
		return fail(unix.EOPNOTSUPP)
	}
	t, _, e := ic.constv(abi.UverbsAttrCreateQPType)
	if e != 0 {
		return fail(e)
	}
	a.typ = uint8(t)
	if _, _, e := ic.u64(abi.UverbsAttrCreateQPUserHandle); e != 0 {
		return fail(e)
	}
	capb, _, e := ic.inFixed(abi.UverbsAttrCreateQPCap, 20)
	if e != 0 {
		return fail(e)
	}
	a.caps = abi.Decode[abi.UverbsQPCap](capb)
	flags, e := ic.flags(abi.UverbsAttrCreateQPFlags)
	if e != 0 {
		return fail(e)
	}
	a.sigAll = flags&abi.UverbsQPCreateSQSigAll != 0
	a.flags = flags &^ abi.UverbsQPCreateSQSigAll
	o, drv, e := c.createQP(a)
	if e != 0 {
		return fail(e)
	}
	cp := o.qpAttr.caps
	var qpn [4]byte
	abi.Native.PutUint32(qpn[:], o.qpn)
	for _, e := range []unix.Errno{
		ic.out(abi.UverbsAttrCreateQPRespCap, abi.Bytes(&cp)),
		ic.out(abi.UverbsAttrCreateQPRespQPNum, qpn[:]),
		ic.setData(abi.UverbsAttrCreateQPHandle, uint64(o.handle)),
		c.qpCreated(o, drv),
	} {
		if e != 0 {
			c.d.destroyObject(o)
			return c.finish(e)
		}
	}
	return c.finish(0)
}

func (c *call) destroyQP(h uint32) unix.Errno {
	o := c.get("qp", h)
	if o == nil {
		c.descf("DESTROY_QP handle=%d", h)
		if c.iface == "ioctl" {
			return unix.ENOENT
		}
		return unix.EINVAL
	}
	c.descf("DESTROY_QP %s", o.name)
	c.d.destroyObject(o)
	return 0
}

func (c *call) writeDestroyQP(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsDestroyQP](in)
	if e := c.destroyQP(req.QPHandle); e != 0 {
		return c.finish(e)
	}
	var r abi.UverbsDestroyQPResp
	return c.finish(c.resp(out, abi.Bytes(&r)))
}

func (c *call) ioctlDestroyQP() unix.Errno {
	h, _ := c.ic.data(abi.UverbsAttrDestroyQPHandle)
	if e := c.destroyQP(uint32(h)); e != 0 {
		return c.finish(e)
	}
	var r abi.UverbsDestroyQPResp
	return c.finish(c.ic.out(abi.UverbsAttrDestroyQPResp, abi.Bytes(&r)))
}

// ---- modify / query ----

// IB QP attribute mask bits (enum ib_qp_attr_mask).
const (
	maskState       = 1 << 0
	maskCurState    = 1 << 1
	maskAccess      = 1 << 3
	maskPkey        = 1 << 4
	maskPort        = 1 << 5
	maskQkey        = 1 << 6
	maskAV          = 1 << 7
	maskPathMTU     = 1 << 8
	maskTimeout     = 1 << 9
	maskRetry       = 1 << 10
	maskRNRRetry    = 1 << 11
	maskRQPSN       = 1 << 12
	maskMaxRdAtomic = 1 << 13
	maskAltPath     = 1 << 14
	maskMinRNR      = 1 << 15
	maskSQPSN       = 1 << 16
	maskMaxDestRd   = 1 << 17
	maskPathMig     = 1 << 18
	maskCap         = 1 << 19
	maskDestQPN     = 1 << 20
	maskRateLimit   = 1 << 25
)

var stateNames = []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

func stateName(s uint8) string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state%d", s)
}

// qpAttr is the QP state the kernel keeps for QUERY_QP.
type qpAttr struct {
	m      abi.UverbsModifyQP
	caps   abi.UverbsQPCap
	sigAll bool
	ece    uint32
}

// transitionOK is a reduced ib_modify_qp_is_ok for RC/UC/UD.
func transitionOK(cur, next uint8) bool {
	switch next {
	case 0, 6: // RESET, ERR from anywhere
		return true
	}
	switch cur {
	case 0:
		return next == 1
	case 1:
		return next == 1 || next == 2
	case 2:
		return next == 3
	case 3:
		return next == 3 || next == 4
	case 4:
		return next == 3 || next == 4
	case 5:
		return next == 3
	}
	return false
}

func descModify(m abi.UverbsModifyQP) string {
	var s strings.Builder
	mask := m.AttrMask
	fmt.Fprintf(&s, "mask=%#x", mask)
	f := func(bit uint32, format string, a ...any) {
		if mask&bit != 0 {
			fmt.Fprintf(&s, " "+format, a...)
		}
	}
	f(maskState, "state=%s", stateName(m.QPState))
	f(maskCurState, "cur=%s", stateName(m.CurQPState))
	f(maskAccess, "access=%#x", m.QPAccessFlags)
	f(maskPkey, "pkey=%d", m.PkeyIndex)
	f(maskPort, "port=%d", m.PortNum)
	f(maskQkey, "qkey=%#x", m.Qkey)
	if mask&maskAV != 0 {
		a := m.Dest
		fmt.Fprintf(&s, " av{dgid=%s flow=%d sgid=%d hop=%d tclass=%d sl=%d dlid=%d spb=%d rate=%d global=%d port=%d}",
			rdma.GID(a.DGID).String(), a.FlowLabel, a.SGIDIndex, a.HopLimit, a.TrafficClass, a.SL, a.DLID, a.SrcPathBits, a.StaticRate, a.IsGlobal, a.PortNum)
	}
	f(maskPathMTU, "mtu=%d", m.PathMTU)
	f(maskTimeout, "timeout=%d", m.Timeout)
	f(maskRetry, "retry=%d", m.RetryCnt)
	f(maskRNRRetry, "rnr_retry=%d", m.RNRRetry)
	f(maskRQPSN, "rq_psn=%d", m.RQPSN)
	f(maskMaxRdAtomic, "max_rd_atomic=%d", m.MaxRdAtomic)
	f(maskMinRNR, "min_rnr=%d", m.MinRNRTimer)
	f(maskSQPSN, "sq_psn=%d", m.SQPSN)
	f(maskMaxDestRd, "max_dest_rd_atomic=%d", m.MaxDestRdAtomic)
	f(maskPathMig, "path_mig=%d", m.PathMigState)
	f(maskDestQPN, "dest_qpn=%#x", m.DestQPNum)
	return s.String()
}

// modifyQP applies a modify; it returns the ECE options to report.
func (c *call) modifyQP(m abi.UverbsModifyQP, ex bool) (*object, uint32, unix.Errno) {
	o := c.get("qp", m.QPHandle)
	name := "MODIFY_QP"
	c.descf("%s %s %s drv_in=%s", name, nameOf(o), descModify(m), hexs(c.drvIn))
	if o == nil {
		return nil, 0, unix.EINVAL
	}
	ece := uint32(0)
	if len(c.drvIn) > 0 {
		// mlx5_ib_modify_qp: struct mlx5_ib_modify_qp.
		if len(c.drvIn) < 16 {
			return o, 0, unix.EINVAL
		}
		if len(c.drvIn) > 16 && !allZero(c.drvIn[16:]) {
			return o, 0, unix.EOPNOTSUPP
		}
		u := abi.Decode[abi.MLX5ModifyQP](c.drvIn)
		if u.CompMask != 0 || u.BurstReserved != 0 {
			return o, 0, unix.EOPNOTSUPP
		}
		if u.ECEOptions != 0 && !c.d.p.ECE {
			return o, 0, unix.EOPNOTSUPP
		}
		ece = u.ECEOptions
	}
	mask := m.AttrMask
	if mask&^(1<<21-1|maskRateLimit) != 0 || mask&(maskAltPath|maskCap) != 0 {
		return o, 0, unix.EINVAL
	}
	cur := o.qpState
	if mask&maskCurState != 0 {
		cur = m.CurQPState
	}
	next := cur
	if mask&maskState != 0 {
		next = m.QPState
	}
	if next > 6 || !transitionOK(cur, next) {
		return o, 0, unix.EINVAL
	}
	if mask&maskPort != 0 && m.PortNum != 1 {
		return o, 0, unix.EINVAL
	}
	if mask&maskAV != 0 && (m.Dest.IsGlobal == 0 || int(m.Dest.SGIDIndex) >= len(portGIDs)) {
		return o, 0, unix.EINVAL // RoCE needs a GRH
	}
	if mask&maskPathMTU != 0 && (m.PathMTU < 1 || m.PathMTU > 5) {
		return o, 0, unix.EINVAL
	}
	// Keep the masked fields for QUERY_QP.
	k := &o.qpAttr.m
	set := func(bit uint32, apply func()) {
		if mask&bit != 0 {
			apply()
		}
	}
	set(maskAccess, func() { k.QPAccessFlags = m.QPAccessFlags })
	set(maskPkey, func() { k.PkeyIndex = m.PkeyIndex })
	set(maskPort, func() { k.PortNum = m.PortNum })
	set(maskQkey, func() { k.Qkey = m.Qkey })
	set(maskAV, func() { k.Dest = m.Dest })
	set(maskPathMTU, func() { k.PathMTU = m.PathMTU })
	set(maskTimeout, func() { k.Timeout = m.Timeout })
	set(maskRetry, func() { k.RetryCnt = m.RetryCnt })
	set(maskRNRRetry, func() { k.RNRRetry = m.RNRRetry })
	set(maskRQPSN, func() { k.RQPSN = m.RQPSN })
	set(maskMaxRdAtomic, func() { k.MaxRdAtomic = m.MaxRdAtomic })
	set(maskMinRNR, func() { k.MinRNRTimer = m.MinRNRTimer })
	set(maskSQPSN, func() { k.SQPSN = m.SQPSN })
	set(maskMaxDestRd, func() { k.MaxDestRdAtomic = m.MaxDestRdAtomic })
	set(maskDestQPN, func() { k.DestQPNum = m.DestQPNum })
	o.qpState = next
	if next == 0 {
		o.qpAttr.m = abi.UverbsModifyQP{}
	}
	if ece != 0 {
		o.qpAttr.ece = ece // firmware takes the options the peer agreed on
	}
	return o, o.qpAttr.ece, 0
}

func (c *call) writeModifyQP(in []byte, _ outbuf) unix.Errno {
	m := abi.Decode[abi.UverbsModifyQP](in)
	if _, _, e := c.modifyQP(m, false); e != 0 {
		return c.finish(e)
	}
	return c.finish(0)
}

func (c *call) writeExModifyQP(in []byte, out outbuf) unix.Errno {
	c.iface = "write-ex"
	m := abi.Decode[abi.UverbsModifyQP](in)
	if len(in) >= 120 && abi.Native.Uint32(in[112:]) != 0 {
		c.descf("MODIFY_QP rate_limit set")
		return c.finish(unix.EOPNOTSUPP)
	}
	_, ece, e := c.modifyQP(m, true)
	if e != 0 {
		return c.finish(e)
	}
	r := abi.UverbsExModifyQPResp{ResponseLength: uint32(min(out.n, 8))}
	if e := c.resp(out, abi.Bytes(&r)); e != 0 {
		return c.finish(e)
	}
	if c.drvOut.n >= 12 { // offsetofend(struct mlx5_ib_modify_qp_resp, ece_options)
		dr := abi.MLX5ModifyQPResp{ResponseLength: 12, ECEOptions: ece}
		if e := c.drv(abi.Bytes(&dr)[:12]); e != 0 {
			return c.finish(e)
		}
		c.resf("drv_out{ece=%#x}", ece)
	}
	return c.finish(0)
}

func (c *call) writeQueryQP(in []byte, out outbuf) unix.Errno {
	req := abi.Decode[abi.UverbsQueryQP](in)
	o := c.get("qp", req.QPHandle)
	c.descf("QUERY_QP %s mask=%#x", nameOf(o), req.AttrMask)
	if o == nil {
		return c.finish(unix.EINVAL)
	}
	k := o.qpAttr.m
	cp := o.qpAttr.caps
	r := abi.UverbsQueryQPResp{
		Dest: k.Dest, MaxSendWR: cp.MaxSendWR, MaxRecvWR: cp.MaxRecvWR, MaxSendSGE: cp.MaxSendSGE, MaxRecvSGE: cp.MaxRecvSGE,
		MaxInlineData: cp.MaxInlineData, Qkey: k.Qkey, RQPSN: k.RQPSN, SQPSN: k.SQPSN, DestQPNum: k.DestQPNum,
		QPAccessFlags: k.QPAccessFlags, PkeyIndex: k.PkeyIndex, QPState: o.qpState, CurQPState: o.qpState,
		PathMTU: k.PathMTU, MaxRdAtomic: k.MaxRdAtomic, MaxDestRdAtomic: k.MaxDestRdAtomic, MinRNRTimer: k.MinRNRTimer,
		PortNum: k.PortNum, Timeout: k.Timeout, RetryCnt: k.RetryCnt, RNRRetry: k.RNRRetry, SQSigAll: uint8(b2i(o.qpAttr.sigAll)),
	}
	c.resf("state=%s", stateName(o.qpState))
	return c.finish(c.resp(out, abi.Bytes(&r)))
}
