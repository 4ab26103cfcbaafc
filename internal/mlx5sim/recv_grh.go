//go:build linux

package mlx5sim

import (
	"encoding/binary"
	"strconv"

	"golang.org/x/sys/unix"
)

// The sender's side of a receive CQE, beyond src_qp= and grh= (cqe.go):
//
//	cqe ... [sl=N] [slid=N] [path=N]
//
// sl is flags_rqpn bits 24-27, slid the CQE's slid, path its ml_path
// (dlid_path_bits). With grh=1 (an IPv6 GRH) or grh=2 (RoCE v2 over
// IPv4: 20 zero bytes, then the IPv4 header) on a UD QP without an SRQ,
// the device also writes the 40 bytes the HCA puts at the start of the
// receive buffer, from the peer ::ffff:192.0.2.2 to port 1's GID 0, as
// a real receive would leave them: the provider must not touch them.

// peerGID is the address of the scenarios' peer (the fixed AH's DGID).
var peerGID = [16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 2}

const qpTypeUD = 4 // IB_QPT_UD

// respSender sets sl, slid and path in the receive CQE b and writes the
// GRH into the receive buffer of the QP's RQ WQE counter (a receive).
func (d *Device) respSender(mem Mem, qp *object, kv map[string]string, recv bool, counter, bytes uint64, b []byte) unix.Errno {
	var v [4]uint64
	for i, k := range []string{"sl", "slid", "path", "grh"} {
		s, ok := kv[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(s, 0, 16)
		if err != nil {
			return unix.EINVAL
		}
		v[i] = n
	}
	sl, slid, path, grh := v[0], v[1], v[2], v[3]
	if sl > 15 || path > 0xff || grh > 3 {
		return unix.EINVAL
	}
	b[24] |= uint8(sl)
	binary.BigEndian.PutUint16(b[22:], uint16(slid))
	b[17] = uint8(path)
	if !recv || grh == 0 || qp.qpType != qpTypeUD || qp.srqObj != nil || qp.rqCnt == 0 {
		return 0
	}
	// The RQ starts the QP's buffer; a UD receive WQE is its data
	// segments (byte_count, lkey, addr), and the GRH goes to the first.
	var seg [16]byte
	wqe := qp.qpBuf + uint64(uint32(counter)&(qp.rqCnt-1))<<qp.rqShift
	if err := mem.Read(wqe, seg[:]); err != nil {
		return unix.EFAULT
	}
	room := binary.BigEndian.Uint32(seg[0:])
	addr := binary.BigEndian.Uint64(seg[8:])
	if room < 40 {
		return unix.EINVAL // the HCA would drop the datagram
	}
	h := grhBytes(grh, bytes)
	if err := mem.Write(addr, h[:]); err != nil {
		return unix.EFAULT
	}
	return 0
}

// grhBytes is the GRH of a datagram of n bytes (GRH included) from the
// peer: version 6, traffic class 0x28, flow label 0x12345, next header
// 0x1b (BTH), hop limit 64; or for kind 2 the IPv4 header in the last 20
// bytes (TOS 0x28, TTL 64, UDP, checksum 0, as the scenario only compares).
func grhBytes(kind, n uint64) [40]byte {
	var h [40]byte
	be := binary.BigEndian
	pay := uint16(0)
	if n >= 40 {
		pay = uint16(n - 40)
	}
	local := portGIDs[0]
	if kind == 2 {
		ip := h[20:]
		ip[0] = 0x45
		ip[1] = 0x28
		be.PutUint16(ip[2:], pay+20)
		ip[8] = 64
		ip[9] = 17 // UDP
		copy(ip[12:16], peerGID[12:])
		copy(ip[16:20], local[12:])
		return h
	}
	be.PutUint32(h[0:], 6<<28|0x28<<20|0x12345)
	be.PutUint16(h[4:], pay)
	h[6] = 0x1b
	h[7] = 64
	copy(h[8:24], peerGID[:])
	copy(h[24:40], local[:])
	return h
}
