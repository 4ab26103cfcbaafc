package rsocket

import (
	"fmt"
	"net"
	"os"
	"slices"
	"sync"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// IOMap is a window of registered memory (off the Go heap) that the peer
// writes into with its WriteAt (riowrite) at offsets Offset() up to
// Offset()+len(Bytes()): riomap(PROT_WRITE). The peer is told of it before
// this side's next Write or WriteAt. Such writes carry no notification;
// the protocol above decides when the bytes are there (riostream polls the
// window's last byte).
type IOMap struct {
	c      *Conn
	buf    *uverbs.Buffer
	mr     *uverbs.MR
	offset int64
	index  int
	once   sync.Once
}

// IOMap registers a window of size bytes the peer may write at offsets
// [offset, offset+size), in one of the entries the peer's IOMapSize
// (RDMA_IOMAPSIZE) offers. It fails with an error matching
// rdma.ErrNotSupported when the peer offers none, and rdma.ErrBusy when
// they are all in use.
func (c *Conn) IOMap(size int, offset int64) (*IOMap, error) {
	if size <= 0 || size > 1<<30 || offset < 0 {
		return nil, c.opErr("iomap", fmt.Errorf("size %d at offset %d: %w", size, offset, rdma.ErrInvalidArgument))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	entries := int(c.k.remoteIOMap.Length)
	c.mu.Unlock()
	index := -1
	for i := range entries {
		if !c.iomapUsed[i] {
			index = i
			break
		}
	}
	switch {
	case entries == 0:
		return nil, c.opErr("iomap", fmt.Errorf("the peer takes no windows (its IOMapSize is 0): %w", rdma.ErrNotSupported))
	case index < 0:
		return nil, c.opErr("iomap", fmt.Errorf("no free window among the %d the peer offers: %w", entries, rdma.ErrBusy))
	}
	buf, err := uverbs.AllocBuffer(size)
	if err != nil {
		return nil, c.opErr("iomap", err)
	}
	mr, err := c.r.q.PD().RegMRRange(buf, 0, size, qp.AccessLocalWrite|qp.AccessRemoteWrite)
	if err != nil {
		buf.Close()
		return nil, c.opErr("iomap", err)
	}
	m := &IOMap{c: c, buf: buf, mr: mr, offset: offset, index: index}
	c.iomapUsed[index] = true
	c.iomapPending = append(c.iomapPending, m)
	c.iomaps = append(c.iomaps, m)
	return m, nil
}

// Bytes is the window's memory.
func (m *IOMap) Bytes() []byte { return m.buf.Bytes()[:m.mr.Length] }

// Offset is where the window starts in the peer's WriteAt offsets.
func (m *IOMap) Offset() int64 { return m.offset }

// Close deregisters the window and frees its entry of the peer's table
// for the next IOMap (riounmap; the peer is not told, as in rsocket.c:
// its WriteAt into a closed window fails the connection). Conn.Close
// closes the windows still open.
func (m *IOMap) Close() error {
	m.c.wmu.Lock()
	defer m.c.wmu.Unlock()
	return m.release()
}

// release is Close with c.wmu held.
func (m *IOMap) release() error {
	var err error
	m.once.Do(func() {
		m.c.iomapUsed[m.index] = false
		m.c.iomapPending = slices.DeleteFunc(m.c.iomapPending, func(p *IOMap) bool { return p == m })
		m.c.iomaps = slices.DeleteFunc(m.c.iomaps, func(p *IOMap) bool { return p == m })
		err = m.mr.Close()
		if e := m.buf.Close(); err == nil {
			err = e
		}
	})
	return err
}

// sendIOMaps tells the peer of the pending windows (rs_send_iomaps); c.wmu
// is held.
func (c *Conn) sendIOMaps() error {
	for len(c.iomapPending) > 0 {
		m := c.iomapPending[0]
		if err := c.sendSlot("iomap"); err != nil {
			return err
		}
		e := iomapEntry{Offset: uint64(m.offset), SGE: sge{Addr: m.buf.Addr(), Key: m.mr.RKey, Length: uint32(m.mr.Length)}}
		w, b, err := c.k.iomapWrite(m.index, e)
		if err != nil {
			c.mu.Unlock()
			return c.opErr("iomap", err)
		}
		c.postPlanned(w, b[:], uverbs.OpRDMAWriteWithImm)
		err = c.k.err
		c.mu.Unlock()
		if err != nil {
			return c.opErr("iomap", err)
		}
		c.iomapPending = c.iomapPending[1:]
	}
	return nil
}

// WriteAt writes p at offset off of the peer's windows (riowrite): RDMA
// WRITEs without immediate, in chunks growing from 2 KiB to 64 KiB; the
// peer is not notified. Offsets outside every window the peer gave fail
// with an error matching rdma.ErrInvalidArgument, after the bytes before
// them.
func (c *Conn) WriteAt(p []byte, off int64) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if isClosed(c.wdl.wait()) {
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	}
	if err := c.sendIOMaps(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, c.opErr("write", fmt.Errorf("offset %d: %w", off, rdma.ErrInvalidArgument))
	}
	olen := uint32(olapStartSize)
	n := 0
	for n < len(p) {
		if err := c.sendSlot("write"); err != nil {
			return n, err
		}
		at := uint64(off) + uint64(n)
		e, ok := c.k.findIOMap(at)
		if !ok {
			c.mu.Unlock()
			return n, c.opErr("write", fmt.Errorf("offset %d is in none of the peer's windows: %w", at, rdma.ErrInvalidArgument))
		}
		w := c.k.nextDirect(len(p)-n, at, e, &olen)
		c.postPlanned(w, p[n:n+int(w.n)], uverbs.OpRDMAWrite)
		err := c.k.err
		c.mu.Unlock()
		if err != nil {
			return n, c.opErr("write", err)
		}
		n += int(w.n)
	}
	return n, nil
}

// sendSlot returns with c.mu held once the core can send, or with an
// error (c.mu released): closed, failed, not writable, or past the write
// deadline.
func (c *Conn) sendSlot(op string) error {
	for {
		select {
		case <-c.closed:
			return c.opErr(op, net.ErrClosed)
		default:
		}
		c.mu.Lock()
		if !c.k.canSend() {
			c.pollLocked()
		}
		switch {
		case c.closing.Load():
			c.mu.Unlock()
			return c.opErr(op, net.ErrClosed)
		case c.k.err != nil:
			err := c.k.err
			c.mu.Unlock()
			return c.opErr(op, err)
		case !c.k.writable:
			c.mu.Unlock()
			return c.opErr(op, errConnReset)
		case c.k.canSend():
			return nil
		}
		c.mu.Unlock()
		if err := c.await(c.wwake, &c.wdl); err != nil {
			return c.opErr(op, err)
		}
	}
}

// postPlanned posts a write the core planned: chunk inline, or copied
// into the send buffer's segments; c.mu is held.
func (c *Conn) postPlanned(w write, chunk []byte, op uverbs.Opcode) {
	wr := &c.swr[0]
	*wr = uverbs.SendWR{ID: uint64(w.imm), Opcode: op, RemoteAddr: w.remoteAddr, RKey: w.rkey}
	if op == uverbs.OpRDMAWriteWithImm {
		wr.Imm = w.imm
	}
	if w.inline {
		wr.Flags, wr.InlineData = uverbs.SendInline, chunk
	} else {
		sb := c.r.sbuf.Bytes()
		k := copy(sb[w.seg[0].off:w.seg[0].off+w.seg[0].len], chunk)
		c.sges[0] = c.r.smr.SGE(int(w.seg[0].off), int(w.seg[0].len))
		if w.nseg == 2 {
			copy(sb[:w.seg[1].len], chunk[k:])
			c.sges[1] = c.r.smr.SGE(0, int(w.seg[1].len))
		}
		wr.SGEs = c.sges[:w.nseg]
	}
	c.postLocked()
}
