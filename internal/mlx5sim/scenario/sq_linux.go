package scenario

import (
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// The send-side verbs and options of the scenario language (README
// section 4):
//
//	state QP reset|rts|sqd|err     # ibv_modify_qp with IBV_QP_STATE alone
//	ah NAME [sl=N] [tclass=N] [hop=N] [flow=X] [sgid=N] [rate=N] [global=0|1]
//	send ... inline inline_data=1  # Go: SendWR.InlineData, a Go-heap copy of the
//	                               # SGEs' bytes (C posts the SGEs, the same bytes)

var stateWords = map[string]qp.State{"reset": qp.Reset, "rts": qp.RTS, "sqd": qp.SQD, "err": qp.Err}

// state moves a QP with the state alone in the mask: to RESET or ERR from
// anywhere, RTS to SQD and back, the moves where libmlx5 keeps or drops
// the right to post.
func (r *Runner) state(l Line) error {
	q, err := r.qpArg(l, 0)
	if err != nil {
		return err
	}
	to, err := l.arg(1)
	if err != nil {
		return bad("%v", err)
	}
	s, ok := stateWords[to]
	if !ok {
		return bad("line %d: state %q", l.Num, to)
	}
	return q.Modify(&qp.Attr{State: s}, qp.MaskState)
}

// ahAttr is the address vector of an ah line: the README's fixed one
// with flow label 0x12345 (libmlx5 draws a random UDP source port for a
// RoCE v2 AV without one, mlx5_ah_set_udp_sport), then the line's
// overrides.
func ahAttr(l Line) (qp.AH, error) {
	a := peerAH()
	a.GRH.FlowLabel = 0x12345
	var v [7]uint64
	for i, k := range []string{"sl", "tclass", "hop", "flow", "sgid", "rate", "global"} {
		def := uint64(0)
		switch k {
		case "tclass":
			def = uint64(a.GRH.TrafficClass)
		case "hop":
			def = uint64(a.GRH.HopLimit)
		case "flow":
			def = uint64(a.GRH.FlowLabel)
		case "global":
			def = 1
		}
		n, err := l.u64(k, def)
		if err != nil {
			return a, bad("%v", err)
		}
		if (k == "flow" && n > 0xffffffff) || (k != "flow" && n > 0xff) {
			return a, bad("line %d: %s=%d out of range", l.Num, k, n)
		}
		v[i] = n
	}
	a.SL, a.GRH.TrafficClass, a.GRH.HopLimit = uint8(v[0]), uint8(v[1]), uint8(v[2])
	a.GRH.FlowLabel, a.GRH.SGIDIndex, a.StaticRate, a.IsGlobal = uint32(v[3]), uint8(v[4]), uint8(v[5]), v[6] != 0
	return a, nil
}

// inlineData gives each WR of a send line with inline_data=1 the bytes
// of its SGEs as InlineData, the provider's path for inline bytes that
// are not in registered memory.
func (r *Runner) inlineData(l Line, wrs []uverbs.SendWR) error {
	v, ok := l.KV["inline_data"]
	if !ok || v == "0" {
		return nil
	}
	if v != "1" {
		return bad("line %d: inline_data=%q", l.Num, v)
	}
	specs, err := l.SGEs()
	if err != nil {
		return bad("%v", err)
	}
	var data []byte
	for _, s := range specs {
		m := r.mrs[s.MR]
		if m == nil || m.buf == nil || s.Off+s.Len > uint64(m.buf.Len()) {
			return bad("line %d: inline_data needs SGEs inside an MR with memory", l.Num)
		}
		data = append(data, m.buf.Bytes()[s.Off:s.Off+s.Len]...)
	}
	if data == nil {
		data = []byte{}
	}
	for i := range wrs {
		wrs[i].InlineData, wrs[i].SGEs = data, nil
	}
	return nil
}
