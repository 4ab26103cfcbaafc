package rsocket

import (
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// core is the rsockets protocol state of one stream connection with no
// I/O: rsocket.c's stream fields of struct rsocket and the functions that
// move them (rs_write_data, rs_send_credits, rs_poll_cq, rrecv, rsend's
// chunking). The Conn feeds it completions and performs the writes it
// plans; tests drive it with two cores wired in memory.
type core struct {
	sqSize, rqSize uint16
	inline         uint32
	rbufSize       uint32 // our receive buffer; its halves are granted in turn
	sbufSize       uint32 // our send buffer ring (a control area follows it)
	rbufAddr       uint64 // where the peer writes: the receive buffer's address ...
	rbufKey        uint32 // ... and rkey

	// The peer.
	peerBig   bool   // its target SGL is big-endian (its NET flag)
	ownBig    bool   // ours is (the host's order)
	remoteSGL sge    // its target SGL: where our SGL updates go
	remoteSGE uint32 // the entry the next update goes to
	peerBuf   sge    // its receive buffer's first half (data_buf)

	// Sending (rs_can_send).
	sseqNo, sseqComp        uint16
	sqeAvail                int
	sbufAvail               uint32
	sbufHead                uint32 // rs->ssgl[0].addr - rs->sbuf
	ctrlSeqno, ctrlMaxSeqno uint32
	targetSGE               int
	tsgl                    []byte // our target SGL, native order: the peer writes it
	tiomap                  []byte // our iomap table, likewise
	remoteIOMap             sge    // the peer's iomap table; Length = entries

	// Receiving.
	rseqNo, rseqComp uint16
	rbufOffset       uint32 // the next byte to read
	rbufFreeOffset   uint32 // the half to grant next
	rbufAvail        uint32 // consumed bytes not yet granted again
	granted          uint64 // bytes the peer may still write (validation)
	rmsg             []uint32
	rmsgHead         int
	rmsgTail         int
	reposts          int // receive WRs completed, to post again

	readable, writable, connected bool
	err                           error // a protocol or transport error: the connection is dead
}

// coreConfig is one side's sizes and receive-buffer registration.
type coreConfig struct {
	sqSize, rqSize   uint16
	inline           uint32
	rbufSize         uint32
	sbufSize         uint32
	rbufAddr         uint64
	rbufKey          uint32
	targetSGLAddr    uint64
	targetSGLKey     uint32
	targetSGLEntries uint32 // sglSize
	bigEndian        bool   // this host's byte order (tests play the other)
	iomapEntries     int    // our iomap table (after the target SGL): the peer's windows
}

// connData is what this side sends (rs_format_conn_data).
func (c *coreConfig) connData() connData {
	var flags uint8 = flagIOMap
	if c.bigEndian {
		flags |= flagNet
	}
	return connData{
		Version: protoVersion, Flags: flags, Credits: c.rqSize, TargetIOMapSize: uint8(valueToScale(c.iomapEntries, 8)),
		TargetSGL: sge{Addr: c.targetSGLAddr, Key: c.targetSGLKey, Length: c.targetSGLEntries},
		DataBuf:   sge{Addr: c.rbufAddr, Key: c.rbufKey, Length: c.rbufSize >> 1},
	}
}

// newCore starts the protocol with the peer's conn data
// (rs_init_bufs + rs_save_conn_data). tsgl is our target SGL memory,
// sglSize entries.
func newCore(c coreConfig, peer connDataView, tsgl []byte) *core {
	k := &core{
		sqSize: c.sqSize, rqSize: c.rqSize, inline: c.inline,
		rbufSize: c.rbufSize, sbufSize: c.sbufSize, rbufAddr: c.rbufAddr, rbufKey: c.rbufKey,
		remoteSGL: peer.TargetSGL(), remoteSGE: 1, peerBuf: peer.DataBuf(),
		sbufAvail: c.sbufSize, ctrlMaxSeqno: qpCtrlSize, sqeAvail: int(c.sqSize) - qpCtrlSize,
		sseqComp: peer.Credits(), tsgl: tsgl[:sglSize*sgeLen], tiomap: tsgl[sglSize*sgeLen : sglSize*sgeLen+c.iomapEntries*iomapLen],
		rseqComp: c.rqSize >> 1, rbufFreeOffset: c.rbufSize >> 1, rbufAvail: c.rbufSize >> 1,
		granted: uint64(c.rbufSize >> 1), rmsg: make([]uint32, int(c.rqSize)+1),
		readable: true, writable: true, connected: true,
	}
	// SGL updates go to the peer in its byte order (rsocket.c swaps when
	// the NET flags differ, RS_OPT_SWAP_SGL).
	k.peerBig, k.ownBig = peer.Flags()&flagNet != 0, c.bigEndian
	// rs_save_conn_data: the peer's iomap table follows its target SGL.
	if peer.Flags()&flagIOMap != 0 {
		t := peer.TargetSGL()
		k.remoteIOMap = sge{Addr: t.Addr + sgeLen*uint64(t.Length), Key: t.Key, Length: uint32(scaleToValue(int(peer.TargetIOMapSize()), 8))}
	}
	// Entry 0 is the peer's data_buf. Entry 1 is the peer's to write and
	// may already hold its first SGL update (the peer sends credits as
	// soon as it is connected, maybe before we get here): the memory
	// starts zeroed and is never cleared here.
	k.putTarget(0, peer.DataBuf())
	return k
}

func (k *core) target(i int) sge {
	return getSGE(k.tsgl[i*sgeLen:], k.ownBig)
}

func (k *core) putTarget(i int, s sge) {
	putSGE(k.tsgl[i*sgeLen:], s, k.ownBig)
}

// fail ends the connection with err (the first error sticks).
func (k *core) fail(err error) {
	if k.err == nil {
		k.err = err
	}
	k.connected, k.readable, k.writable = false, false, false
}

// disconnected is rs_disconnected: no more reads beyond the queued data,
// no writes.
func (k *core) disconnected() {
	k.connected, k.readable, k.writable = false, false, false
}

// Work request IDs: a send WR's is its immediate (rs_send_wr_id), a
// receive's has bit 63 (rs_recv_wr_id).
const recvWRID = 1 << 63

// onRecv processes a receive completion of a WRITE WITH IMMEDIATE
// (rs_poll_cq's receive half). Everything the peer can put in an
// immediate is checked here.
func (k *core) onRecv(imm uint32) {
	if !k.connected && k.err != nil {
		return
	}
	k.reposts++
	data := msgData(imm)
	switch msgOp(imm) {
	case opSGL:
		k.sseqComp = uint16(data)
	case opIOMapSGL:
		// The peer wrote entry data of our iomap table (rsocket.c only
		// notes it); an index past the table is a lie.
		if int(data) >= len(k.tiomap)/iomapLen {
			k.fail(fmt.Errorf("%w: iomap index %d of %d", ErrProtocol, data, len(k.tiomap)/iomapLen))
		}
	case opWrite:
		// Never on the wire; rsocket.c ignores it.
	case opCtrl:
		switch data {
		case ctrlDisconnect:
			k.disconnected()
		case ctrlShutdown:
			if k.writable {
				k.readable = false
			} else {
				k.disconnected()
			}
		}
	case opData:
		if uint64(data) > k.granted {
			k.fail(fmt.Errorf("%w: %d bytes written, %d granted", ErrProtocol, data, k.granted))
			return
		}
		next := k.rmsgTail + 1
		if next == len(k.rmsg) {
			next = 0
		}
		if next == k.rmsgHead {
			k.fail(fmt.Errorf("%w: more than %d messages unread", ErrProtocol, k.rqSize))
			return
		}
		k.granted -= uint64(data)
		k.rmsg[k.rmsgTail] = data
		k.rmsgTail = next
	default:
		k.fail(fmt.Errorf("%w: reserved op %d in immediate %#x", ErrProtocol, msgOp(imm), imm))
	}
}

// onSend processes a send completion (rs_poll_cq's send half). ok is
// false for a failed one; a flushed one (the connection is going) is not
// an error by itself.
func (k *core) onSend(wrID uint64, ok, flushed bool, status fmt.Stringer) {
	imm := uint32(wrID)
	switch msgOp(imm) {
	case opSGL:
		k.ctrlMaxSeqno++
	case opCtrl:
		k.ctrlMaxSeqno++
		if msgData(imm) == ctrlDisconnect {
			k.disconnected()
		}
	case opIOMapSGL:
		k.sqeAvail++
		k.sbufAvail += iomapLen
	default:
		k.sqeAvail++
		k.sbufAvail += msgData(imm)
	}
	if !ok && !flushed && k.connected {
		k.fail(fmt.Errorf("rsocket: work request %#x: %v: %w", wrID, status, errConnReset))
	}
}

// canSend is rs_can_send.
func (k *core) canSend() bool {
	return k.sqeAvail > 0 && k.sbufAvail >= sndLowat && k.sseqNo != k.sseqComp &&
		k.target(k.targetSGE).Length != 0
}

// haveData is rs_have_rdata.
func (k *core) haveData() bool { return k.rmsgHead != k.rmsgTail }

// write is one RDMA WRITE WITH IMMEDIATE of data that nextWrite planned.
type write struct {
	n          uint32
	imm        uint32
	remoteAddr uint64
	rkey       uint32
	inline     bool
	seg        [2]struct{ off, len uint32 } // in the send buffer (not inline)
	nseg       int
}

// nextWrite plans the next chunk of a send of left bytes (rsend's loop
// body and rs_write_data); olen is the growing chunk size, starting at
// olapStartSize. Call it only when canSend. It checks the target entry
// the peer wrote against the buffer it announced.
func (k *core) nextWrite(left int, olen *uint32) (write, error) {
	var xfer uint32
	if uint64(*olen) < uint64(left) {
		xfer = *olen
		if *olen < maxTransfer {
			*olen <<= 1
		}
	} else {
		xfer = uint32(left)
	}
	t := k.target(k.targetSGE)
	xfer = min(xfer, k.sbufAvail, t.Length)
	base, end := k.peerBuf.Addr, k.peerBuf.Addr+2*uint64(k.peerBuf.Length)
	if t.Key != k.peerBuf.Key || t.Addr < base || t.Addr > end || uint64(t.Length) > end-t.Addr {
		err := fmt.Errorf("%w: target SGE %#x+%d key %#x outside the buffer %#x+%d key %#x",
			ErrProtocol, t.Addr, t.Length, t.Key, base, 2*uint64(k.peerBuf.Length), k.peerBuf.Key)
		k.fail(err)
		return write{}, err
	}
	w := write{n: xfer, imm: msgSet(opData, xfer), remoteAddr: t.Addr, rkey: t.Key}
	k.sseqNo++
	k.sqeAvail--
	k.sbufAvail -= xfer
	t.Addr += uint64(xfer)
	t.Length -= xfer
	k.putTarget(k.targetSGE, t)
	if t.Length == 0 {
		if k.targetSGE++; k.targetSGE == sglSize {
			k.targetSGE = 0
		}
	}
	k.place(&w)
	return w, nil
}

// place puts a planned write's bytes inline or in the send-buffer ring
// (rsend's three cases).
func (k *core) place(w *write) {
	switch left := k.sbufSize - k.sbufHead; {
	case w.n <= k.inline:
		w.inline = true
	case w.n <= left:
		w.seg[0].off, w.seg[0].len, w.nseg = k.sbufHead, w.n, 1
		if w.n < left {
			k.sbufHead += w.n
		} else {
			k.sbufHead = 0
		}
	default:
		w.seg[0].off, w.seg[0].len = k.sbufHead, left
		w.seg[1].off, w.seg[1].len = 0, w.n-left
		w.nseg = 2
		k.sbufHead = w.n - left
	}
}

// findIOMap is rs_find_iomap: the peer's window covering off.
func (k *core) findIOMap(off uint64) (iomapEntry, bool) {
	for i := 0; i+iomapLen <= len(k.tiomap); i += iomapLen {
		e := getIOMap(k.tiomap[i:], k.ownBig)
		if e.SGE.Length != 0 && off >= e.Offset && off-e.Offset < uint64(e.SGE.Length) {
			return e, true
		}
	}
	return iomapEntry{}, false
}

// iomapWrite plans rs_write_iomap: our window e goes into entry index of
// the peer's table, in the peer's byte order. Call it only when canSend.
func (k *core) iomapWrite(index int, e iomapEntry) (write, [iomapLen]byte, error) {
	var b [iomapLen]byte
	if index >= int(k.remoteIOMap.Length) {
		return write{}, b, fmt.Errorf("rsocket: iomap entry %d of the peer's %d: %w", index, k.remoteIOMap.Length, rdma.ErrInvalidArgument)
	}
	putIOMap(b[:], e, k.peerBig)
	w := write{n: iomapLen, imm: msgSet(opIOMapSGL, uint32(index)), remoteAddr: k.remoteIOMap.Addr + uint64(index)*iomapLen, rkey: k.remoteIOMap.Key}
	k.sseqNo++
	k.sqeAvail--
	k.sbufAvail -= iomapLen
	k.place(&w)
	return w, b, nil
}

// nextDirect plans one chunk of riowrite: an RDMA WRITE without
// immediate of at most left bytes at off into the peer's window e
// (rs_write_direct). Call it only when canSend.
func (k *core) nextDirect(left int, off uint64, e iomapEntry, olen *uint32) write {
	var xfer uint32
	if uint64(*olen) < uint64(left) {
		xfer = *olen
		if *olen < maxTransfer {
			*olen <<= 1
		}
	} else {
		xfer = uint32(left)
	}
	xfer = uint32(min(uint64(xfer), uint64(k.sbufAvail), e.Offset+uint64(e.SGE.Length)-off))
	w := write{n: xfer, imm: msgSet(opWrite, xfer), remoteAddr: e.SGE.Addr + off - e.Offset, rkey: e.SGE.Key}
	k.sqeAvail--
	k.sbufAvail -= xfer
	k.place(&w)
	return w
}

// credit is one credit update (rs_send_credits): a WRITE WITH IMMEDIATE
// of op SGL, carrying a new target SGE when withSGE.
type credit struct {
	imm        uint32
	withSGE    bool
	sge        [sgeLen]byte // in the peer's byte order
	remoteAddr uint64
	rkey       uint32
	ctrlSlot   uint32 // which of the qpCtrlSize control buffers to use
}

// giveCredits is rs_give_credits.
func (k *core) giveCredits() bool {
	return (k.rbufAvail >= k.rbufSize>>1 || int16(k.rseqNo-k.rseqComp) >= 0) &&
		k.ctrlSeqno != k.ctrlMaxSeqno && k.connected
}

// sendCredits plans a credit update; call it only when giveCredits.
func (k *core) sendCredits() credit {
	c := credit{ctrlSlot: k.ctrlSeqno & (qpCtrlSize - 1)}
	k.ctrlSeqno++
	k.rseqComp = k.rseqNo + k.rqSize>>1
	c.imm = msgSet(opSGL, uint32(k.rseqNo)+uint32(k.rqSize))
	if k.rbufAvail >= k.rbufSize>>1 {
		half := k.rbufSize >> 1
		c.withSGE = true
		putSGE(c.sge[:], sge{Addr: k.rbufAddr + uint64(k.rbufFreeOffset), Key: k.rbufKey, Length: half}, k.peerBig)
		c.remoteAddr = k.remoteSGL.Addr + uint64(k.remoteSGE)*sgeLen
		c.rkey = k.remoteSGL.Key
		k.rbufAvail -= half
		k.granted += uint64(half)
		if k.rbufFreeOffset += half; k.rbufFreeOffset >= k.rbufSize {
			k.rbufFreeOffset = 0
		}
		if k.remoteSGE++; k.remoteSGE == k.remoteSGL.Length {
			k.remoteSGE = 0
		}
	}
	return c
}

// ctrlAvail is rs_ctrl_avail.
func (k *core) ctrlAvail() bool { return k.ctrlSeqno != k.ctrlMaxSeqno }

// ctrl plans a control message (rshutdown, the keepalive); call it only
// when ctrlAvail.
func (k *core) ctrl(kind uint32) uint32 {
	k.ctrlSeqno++
	return msgSet(opCtrl, kind)
}

// allSendsDone is rs_conn_all_sends_done.
func (k *core) allSendsDone() bool {
	return int(k.ctrlMaxSeqno)-int(k.ctrlSeqno)+k.sqeAvail == int(k.sqSize) || !k.connected
}

// consume copies queued data from rbuf (the receive buffer) into b
// (rrecv's loop) and returns the bytes copied.
func (k *core) consume(b []byte, rbuf []byte) int {
	n := 0
	for n < len(b) && k.haveData() {
		left := uint32(len(b) - n)
		var size uint32
		if left < k.rmsg[k.rmsgHead] {
			size = left
			k.rmsg[k.rmsgHead] -= left
		} else {
			k.rseqNo++
			size = k.rmsg[k.rmsgHead]
			if k.rmsgHead++; k.rmsgHead == len(k.rmsg) {
				k.rmsgHead = 0
			}
		}
		if end := k.rbufSize - k.rbufOffset; size > end {
			copy(b[n:], rbuf[k.rbufOffset:k.rbufSize])
			k.rbufOffset = 0
			n += int(end)
			size -= end
			k.rbufAvail += end
		}
		copy(b[n:], rbuf[k.rbufOffset:k.rbufOffset+size])
		k.rbufOffset += size
		n += int(size)
		k.rbufAvail += size
	}
	return n
}
