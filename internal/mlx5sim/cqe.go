//go:build linux

package mlx5sim

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CQE opcodes (mlx5dv.h MLX5_CQE_*).
var cqeOps = map[string]uint8{
	"req": 0, "resp_wr_imm": 1, "resp_send": 2, "resp_send_imm": 3, "req_err": 13, "resp_err": 14,
}

const (
	inlineScatter32 = 0x4 // MLX5_INLINE_SCATTER_32
	inlineScatter64 = 0x8 // MLX5_INLINE_SCATTER_64
	mlx5OpcodeSend  = 0x0a
)

// Exec runs a device-side scenario line: notify CQ (a completion event,
// cqevent.go), or
//
//	cqe CQ op=req|resp_send|resp_send_imm|resp_wr_imm|req_err|resp_err qp=QP counter=N
//	    [bytes=N] [imm=X] [syndrome=X] [vendor=X] [sop=X] [scatter=32|64] [data=HEX] [src_qp=X] [grh=1|2]
//	    [sl=N] [slid=N] [path=N]      (recv_grh.go)
//
// which writes a 64-byte CQE (struct mlx5_cqe64, or mlx5_err_cqe) at the
// CQ's next producer index with the owner bit (index / ncqe) & 1, as the
// HCA does. CQ and QP are scenario names (learnt from snapshot labels) or
// trace names (cq0, qp1).
func (d *Device) Exec(mem Mem, line string) unix.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.emit("exec " + line)
	e := d.exec(mem, line)
	if e != 0 {
		d.emit("  -> " + errName(e))
	}
	return e
}

func (d *Device) exec(mem Mem, line string) unix.Errno {
	f := strings.Fields(line)
	if len(f) == 2 && f[0] == "notify" {
		return d.notify(mem, f[1])
	}
	if len(f) < 2 || f[0] != "cqe" {
		return unix.EINVAL
	}
	cq := d.lookup("cq", f[1])
	if cq == nil {
		return unix.ENOENT
	}
	kv := map[string]string{}
	for _, w := range f[2:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return unix.EINVAL
		}
		kv[k] = v
	}
	num := func(k string, def uint64) (uint64, bool) {
		v, ok := kv[k]
		if !ok {
			return def, true
		}
		n, err := strconv.ParseUint(v, 0, 64)
		return n, err == nil
	}
	op, ok := cqeOps[kv["op"]]
	if !ok {
		return unix.EINVAL
	}
	qp := d.lookup("qp", kv["qp"])
	if qp == nil {
		return unix.ENOENT
	}
	counter, ok1 := num("counter", 0)
	bytes, ok2 := num("bytes", 0)
	imm, ok3 := num("imm", 0)
	synd, ok4 := num("syndrome", 0)
	vendor, ok5 := num("vendor", 0)
	defSop := uint64(0)
	if op == 0 || op == 13 {
		defSop = mlx5OpcodeSend
	}
	sop, ok6 := num("sop", defSop)
	scatter, ok7 := num("scatter", 0)
	srcQP, ok8 := num("src_qp", 0)
	grh, ok9 := num("grh", 0)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 && ok9) || (scatter != 0 && scatter != 32 && scatter != 64) {
		return unix.EINVAL
	}
	data, err := hex.DecodeString(kv["data"])
	if err != nil || len(data) > int(max(scatter, 0)) {
		return unix.EINVAL
	}
	slot := int(cq.prod) & (cq.ncqe - 1)
	owner := uint8(cq.prod/uint32(cq.ncqe)) & 1
	base := cq.cqBuf + uint64(slot*cq.cqeSize)
	cqe64 := base
	if cq.cqeSize == 128 {
		cqe64 = base + 64
	}
	var b [64]byte
	be := binary.BigEndian
	qpn := qp.qpn & 0xffffff
	be.PutUint32(b[32:], qp.uidx&0xffffff) // srqn_uidx: user index (cqe_version 1)
	be.PutUint16(b[60:], uint16(counter))  // wqe_counter
	opOwn := op<<4 | owner
	switch op {
	case 13, 14: // struct mlx5_err_cqe
		b[54] = uint8(vendor)
		b[55] = uint8(synd)
		be.PutUint32(b[56:], uint32(sop)<<24|qpn)
	default:
		be.PutUint32(b[36:], uint32(imm)) // imm_inval_pkey (big-endian imm)
		be.PutUint32(b[44:], uint32(bytes))
		be.PutUint32(b[56:], uint32(sop)<<24|qpn)
		be.PutUint32(b[24:], uint32(grh&3)<<28|uint32(srcQP)&0xffffff) // flags_rqpn
		if e := d.respSender(mem, qp, kv, op != 0, counter, bytes, b[:]); e != 0 {
			return e
		}
	}
	// Scatter-to-CQE: the data sits in the CQE (32) or in the first half
	// of a 128-byte CQE, before the cqe64 (64); libmlx5 copies it to the
	// receive buffer (cq.c handle_responder).
	switch scatter {
	case 32:
		opOwn |= inlineScatter32
		copy(b[:32], data)
	case 64:
		// mlx5_ib configures 64-byte scatter (MLX5_RES_SCAT_DATA64_CQE)
		// only for 128-byte CQEs (qp.c configure_responder_scat_cqe);
		// with 64-byte CQEs the HCA scatters at most 32 bytes.
		if cq.cqeSize != 128 {
			return unix.EINVAL
		}
		opOwn |= inlineScatter64
		pad := make([]byte, 64)
		copy(pad, data)
		if err := mem.Write(cqe64-64, pad); err != nil {
			return unix.EFAULT
		}
	}
	b[63] = opOwn
	// The hardware writes the CQE body first and op_own last.
	if err := mem.Write(cqe64, b[:63]); err != nil {
		return unix.EFAULT
	}
	if err := mem.Write(cqe64+63, b[63:]); err != nil {
		return unix.EFAULT
	}
	d.emit(fmt.Sprintf("  cqe %s[%d] index=%d owner=%d op=%d qp=%s qpn=%#x uidx=%d", cq.name, slot, cq.prod, owner, op, qp.name, qpn, qp.uidx))
	cq.prod++
	if op != 0 && op != 13 { // a receive: from the QP's SRQ, if it has one
		if ev := d.srqConsume(mem, qp); ev != "" {
			d.emit(ev)
		}
	}
	return 0
}
