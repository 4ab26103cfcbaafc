//go:build linux

package mlx5sim

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// The write() command interface (ib_uverbs_write in uverbs_main.c) and
// INVOKE_WRITE, which runs the same handlers from an ioctl.

type wmethod struct {
	name      string
	req, resp int  // minimum core request/response sizes
	udata     bool // driver data allowed
	hasResp   bool // legacy: first u64 of the request is the response pointer
	skip      bool
	fn        func(c *call, in []byte, out outbuf) unix.Errno
}

const exFlag = abi.UverbsCmdFlagExtended

var wmethods map[uint32]*wmethod

func init() {
	wmethods = map[uint32]*wmethod{
		0:  {name: "GET_CONTEXT", req: 8, resp: 8, udata: true, hasResp: true, fn: (*call).writeGetContext},
		1:  {name: "QUERY_DEVICE", req: 8, resp: 176, hasResp: true, skip: true, fn: (*call).writeQueryDevice},
		2:  {name: "QUERY_PORT", req: 16, resp: 40, hasResp: true, skip: true, fn: (*call).writeQueryPort},
		3:  {name: "ALLOC_PD", req: 8, resp: 4, udata: true, hasResp: true, fn: (*call).writeAllocPD},
		4:  {name: "DEALLOC_PD", req: 4, fn: writeDestroy("pd")},
		5:  {name: "CREATE_AH", req: 56, resp: 4, udata: true, hasResp: true, fn: (*call).writeCreateAH},
		8:  {name: "DESTROY_AH", req: 4, fn: writeDestroy("ah")},
		9:  {name: "REG_MR", req: 40, resp: 12, udata: true, hasResp: true, fn: (*call).writeRegMR},
		13: {name: "DEREG_MR", req: 4, fn: writeDestroy("mr")},
		17: {name: "CREATE_COMP_CHANNEL", req: 8, resp: 4, hasResp: true, fn: (*call).writeCreateCompChannel},
		18: {name: "CREATE_CQ", req: 32, resp: 8, udata: true, hasResp: true, fn: (*call).writeCreateCQ},
		20: {name: "DESTROY_CQ", req: 16, resp: 8, hasResp: true, fn: (*call).writeDestroyCQ},
		23: {name: "REQ_NOTIFY_CQ", req: 8, fn: (*call).writeReqNotifyCQ},
		24: {name: "CREATE_QP", req: 56, resp: 32, udata: true, hasResp: true, fn: (*call).writeCreateQP},
		25: {name: "QUERY_QP", req: 16, resp: 128, udata: true, hasResp: true, fn: (*call).writeQueryQP},
		26: {name: "MODIFY_QP", req: 112, udata: true, fn: (*call).writeModifyQP},
		27: {name: "DESTROY_QP", req: 16, resp: 4, hasResp: true, fn: (*call).writeDestroyQP},
		32: {name: "CREATE_SRQ", req: 32, resp: 16, udata: true, hasResp: true, fn: (*call).writeCreateSRQ},
		33: {name: "MODIFY_SRQ", req: 16, udata: true, fn: (*call).writeModifySRQ},
		34: {name: "QUERY_SRQ", req: 16, resp: 16, udata: true, hasResp: true, fn: (*call).writeQuerySRQ},
		35: {name: "DESTROY_SRQ", req: 16, resp: 4, hasResp: true, fn: (*call).writeDestroySRQ},

		exFlag | 1:  {name: "EX_QUERY_DEVICE", req: 8, resp: 184, udata: true, skip: true, fn: (*call).writeExQueryDevice},
		exFlag | 18: {name: "EX_CREATE_CQ", req: 32, resp: 16, udata: true, fn: (*call).writeExCreateCQ},
		exFlag | 24: {name: "EX_CREATE_QP", req: 56, resp: 40, udata: true, fn: (*call).writeExCreateQP},
		exFlag | 26: {name: "EX_MODIFY_QP", req: 112, resp: 8, udata: true, fn: (*call).writeExModifyQP},
	}
}

// maxWrite bounds one command (in_words is 16 bits: 256 KiB).
const maxWrite = 0xffff*8 + 24

// Write answers write(fd, buf, count).
func (d *Device) Write(mem Mem, fd int, buf, count uint64, spareFD int) (ret int64, usedSpare bool, errno unix.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.ctxFor(fd)
	cl := &call{d: d, mem: mem, c: c, iface: "write", spare: spareFD}
	if count < 8 || count > maxWrite {
		cl.descf("WRITE count=%d", count)
		return -1, false, cl.finish(unix.EINVAL)
	}
	b := make([]byte, count)
	if err := mem.Read(buf, b); err != nil {
		cl.descf("WRITE count=%d", count)
		return -1, false, cl.finish(unix.EFAULT)
	}
	hdr := abi.Decode[abi.UverbsCmdHdr](b)
	m := wmethods[hdr.Command]
	if hdr.Command&^(exFlag|0xff) != 0 || m == nil {
		cl.descf("UNKNOWN WRITE cmd=%#x in_words=%d out_words=%d count=%d", hdr.Command, hdr.InWords, hdr.OutWords, count)
		return -1, false, cl.finish(unix.EOPNOTSUPP)
	}
	cl.skip = m.skip
	var in []byte
	var out outbuf
	if hdr.Command&exFlag == 0 {
		if int(hdr.InWords)*4 != int(count) {
			cl.descf("%s in_words=%d count=%d", m.name, hdr.InWords, count)
			return -1, false, cl.finish(unix.EINVAL)
		}
		if int(count) < m.req+8 || int(hdr.OutWords)*4 < m.resp {
			cl.descf("%s in_words=%d out_words=%d", m.name, hdr.InWords, hdr.OutWords)
			return -1, false, cl.finish(unix.ENOSPC)
		}
		body := b[8:]
		in = body[:m.req]
		if m.udata {
			cl.drvIn = body[m.req:]
		}
		if m.hasResp {
			resp := abi.Native.Uint64(body)
			out = outbuf{addr: resp, n: m.resp}
			if m.udata {
				cl.drvOut = outbuf{addr: resp + uint64(m.resp), n: int(hdr.OutWords)*4 - m.resp}
			}
		}
	} else {
		if count < 24 {
			cl.descf("%s count=%d", m.name, count)
			return -1, false, cl.finish(unix.EINVAL)
		}
		ex := abi.Decode[abi.UverbsExCmdHdr](b[8:])
		bad := ex.CmdHdrReserved != 0 ||
			(ex.Response != 0 && hdr.OutWords == 0 && ex.ProviderOutWords == 0) ||
			(ex.Response == 0 && (hdr.OutWords != 0 || ex.ProviderOutWords != 0)) ||
			(int(hdr.InWords)+int(ex.ProviderInWords))*8 != int(count)-24
		if bad {
			cl.descf("%s in_words=%d out_words=%d count=%d", m.name, hdr.InWords, hdr.OutWords, count)
			return -1, false, cl.finish(unix.EINVAL)
		}
		if int(hdr.InWords)*8 < m.req || int(hdr.OutWords)*8 < m.resp {
			cl.descf("%s in_words=%d out_words=%d", m.name, hdr.InWords, hdr.OutWords)
			return -1, false, cl.finish(unix.ENOSPC)
		}
		body := b[24:]
		in = body[:int(hdr.InWords)*8]
		cl.drvIn = body[int(hdr.InWords)*8:]
		out = outbuf{addr: ex.Response, n: int(hdr.OutWords) * 8}
		cl.drvOut = outbuf{addr: ex.Response + uint64(out.n), n: int(ex.ProviderOutWords) * 8}
	}
	if hdr.Command != 0 && !c.ready {
		cl.descf("%s (no context)", m.name)
		return -1, false, cl.finish(unix.EINVAL)
	}
	if e := m.fn(cl, in, out); e != 0 {
		return -1, false, e
	}
	return int64(count), cl.usedSpare, 0
}

// invokeWrite is UVERBS_METHOD_INVOKE_WRITE: a write() handler run from an
// ioctl, its buffers in CORE_IN/CORE_OUT/UHW_IN/UHW_OUT
// (uverbs_std_types_device.c). Too small core buffers give ENOSPC, which
// is how libibverbs probes for it (has_ioctl_write).
func (c *call) invokeWrite() unix.Errno {
	c.iface = "invoke"
	v, _, e := c.ic.constv(abi.UverbsAttrWriteCmd)
	if e != 0 {
		c.descf("INVOKE_WRITE")
		return c.finish(e)
	}
	m := wmethods[uint32(v)]
	if m == nil {
		c.descf("UNKNOWN INVOKE_WRITE cmd=%#x", v)
		return c.finish(unix.EOPNOTSUPP)
	}
	c.skip = m.skip
	in, _, e := c.ic.in(abi.UverbsAttrCoreIn)
	if e != 0 {
		c.descf("%s", m.name)
		return c.finish(e)
	}
	out := c.ic.outbuf(abi.UverbsAttrCoreOut)
	if len(in) < m.req || out.n < m.resp {
		// The probe (QUERY_DEVICE without buffers) lands here.
		c.skip = true
		c.descf("%s core_in=%d core_out=%d", m.name, len(in), out.n)
		return c.finish(unix.ENOSPC)
	}
	if !c.c.ready && uint32(v) != 0 {
		c.descf("%s (no context)", m.name)
		return c.finish(unix.EINVAL)
	}
	if !m.udata {
		c.drvIn, c.drvOut = nil, outbuf{}
	}
	e = m.fn(c, in, out)
	if e == 0 && m.udata && c.ic.has(uhwOut) {
		e = c.ic.setValid(uhwOut)
	}
	return e
}

func hexs(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return fmt.Sprintf("%x", b)
}
