package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// MR is registered memory: a library-allocated buffer (outside the Go
// heap, page-aligned; RegMsgs, RegRead, RegWrite), memory the caller
// mapped (RegMemory) or a dma-buf (RegDmabuf). Close deregisters it, then
// frees a buffer the library allocated.
type MR struct {
	mr  *uverbs.MR
	buf *uverbs.Buffer
}

// RegMsgs allocates and registers size bytes for sends and receives
// (rdma_reg_msgs: local write).
func (ep *Endpoint) RegMsgs(size int) (*MR, error) { return reg(ep.pd, size, qp.AccessLocalWrite) }

// RegRead allocates and registers size bytes the peer may RDMA READ
// (rdma_reg_read: local write, remote read).
func (ep *Endpoint) RegRead(size int) (*MR, error) {
	return reg(ep.pd, size, qp.AccessLocalWrite|qp.AccessRemoteRead)
}

// RegWrite allocates and registers size bytes the peer may RDMA WRITE
// (rdma_reg_write: local write, remote write).
func (ep *Endpoint) RegWrite(size int) (*MR, error) {
	return reg(ep.pd, size, qp.AccessLocalWrite|qp.AccessRemoteWrite)
}

func reg(pd *uverbs.PD, size int, access qp.Access) (*MR, error) {
	if size <= 0 {
		return nil, fmt.Errorf("rdmacm: register %d bytes: %w", size, ErrInvalidArgument)
	}
	buf, err := uverbs.AllocBuffer(size)
	if err != nil {
		return nil, err
	}
	mr, err := pd.RegMRRange(buf, 0, size, access)
	if err != nil {
		buf.Close()
		return nil, err
	}
	return &MR{mr: mr, buf: buf}, nil
}

// RegMsgs, RegRead and RegWrite on a Listener register memory on the
// listener's device before a connection exists: for example memory whose
// RemoteBuf goes in the REP (EndpointOptions.PrivateData). Every endpoint
// of the device may use it. A listener on every device (":7471") has no
// device to register on: they fail with ErrNoDevice; listen on the
// device's address instead, or register per connection in
// EndpointOptions.Setup.
func (l *Listener) RegMsgs(size int) (*MR, error) { return l.reg(size, qp.AccessLocalWrite) }

// RegRead: see RegMsgs.
func (l *Listener) RegRead(size int) (*MR, error) {
	return l.reg(size, qp.AccessLocalWrite|qp.AccessRemoteRead)
}

// RegWrite: see RegMsgs.
func (l *Listener) RegWrite(size int) (*MR, error) {
	return l.reg(size, qp.AccessLocalWrite|qp.AccessRemoteWrite)
}

func (l *Listener) reg(size int, access qp.Access) (*MR, error) {
	pd, err := l.devicePD()
	if err != nil {
		return nil, err
	}
	return reg(pd, size, access)
}

// devicePD is the PD of the listener's device.
func (l *Listener) devicePD() (*uverbs.PD, error) {
	if a := l.id.LocalAddr().Addr(); !a.IsValid() || a.IsUnspecified() {
		return nil, fmt.Errorf("rdmacm: listener %q is on every device and has no one device to register memory on; "+
			"listen on the device's IP address, or register per connection in EndpointOptions.Setup (ep.RegWrite): %w", l.addr, ErrNoDevice)
	}
	_, pd, err := l.id.Verbs()
	return pd, err
}

// Bytes is the registered memory; valid until Close. A dma-buf MR has
// none (nil).
func (m *MR) Bytes() []byte {
	if m.buf == nil {
		return nil
	}
	return m.buf.Bytes()[:m.mr.Length]
}

// Len is the registered length.
func (m *MR) Len() int { return int(m.mr.Length) }

// Remote describes the whole region for the peer (address, rkey, length).
func (m *MR) Remote() RemoteBuf {
	return RemoteBuf{Addr: m.mr.Addr, RKey: m.mr.RKey, Len: uint32(m.mr.Length)}
}

// Close deregisters the memory, then frees it.
func (m *MR) Close() error {
	err := m.mr.Close()
	if errors.Is(err, ErrClosed) {
		err = nil // the device context went first and took the MR along
	}
	if m.buf == nil {
		return err
	}
	return errors.Join(err, m.buf.Close())
}

func (m *MR) sge(off, n int) (uverbs.SGE, error) {
	if off < 0 || n < 0 || off > m.Len() || n > m.Len()-off {
		return uverbs.SGE{}, fmt.Errorf("rdmacm: %d bytes at %d outside the %d-byte MR: %w", n, off, m.Len(), ErrInvalidArgument)
	}
	return m.mr.SGE(off, n), nil
}

// PostRecv posts a receive into n bytes of m at off; the completion's ID
// is off. m may be nil for a zero-length receive (immediate data only).
// An endpoint on a shared receive queue (EndpointOptions.SRQ) has none of
// its own: there it fails with ErrInvalidArgument (SRQ.PostRecv).
func (ep *Endpoint) PostRecv(m *MR, off, n int) error {
	if ep.cfg.srq != nil {
		return fmt.Errorf("rdmacm: the endpoint receives from a shared receive queue: post to it (SRQ.PostRecv): %w", ErrInvalidArgument)
	}
	var sge uverbs.SGE
	switch {
	case m == nil && off == 0 && n == 0:
	case m == nil:
		return fmt.Errorf("rdmacm: a receive of %d bytes without memory: %w", n, ErrInvalidArgument)
	default:
		var err error
		if sge, err = m.sge(off, n); err != nil {
			return err
		}
	}
	ep.recvMu.Lock()
	defer ep.recvMu.Unlock()
	ep.recvWR[0] = uverbs.RecvWR{ID: uint64(off)}
	if m != nil {
		ep.recvSGE[0] = sge
		ep.recvWR[0].SGEs = ep.recvSGE[:]
	}
	if err := ep.qp.PostRecv(ep.recvWR[:]); err != nil {
		return err
	}
	ep.p.posted[recvQ].Add(1)
	return nil
}

// PostSend sends n bytes of m at off (inline when n <= MaxInline).
func (ep *Endpoint) PostSend(m *MR, off, n int) error {
	return ep.post(m, off, n, uverbs.OpSend, 0, RemoteBuf{}, false)
}

// PostSendImm sends n bytes of m at off with immediate data imm.
func (ep *Endpoint) PostSendImm(m *MR, off, n int, imm uint32) error {
	return ep.post(m, off, n, uverbs.OpSendWithImm, imm, RemoteBuf{}, false)
}

// PostWrite writes n bytes of m at off to the start of dst (RDMA WRITE).
func (ep *Endpoint) PostWrite(m *MR, off, n int, dst RemoteBuf) error {
	return ep.post(m, off, n, uverbs.OpRDMAWrite, 0, dst, true)
}

// PostWriteImm is PostWrite with immediate data, which completes a
// receive at the peer (its WC has the Imm and WCWithImm).
func (ep *Endpoint) PostWriteImm(m *MR, off, n int, dst RemoteBuf, imm uint32) error {
	return ep.post(m, off, n, uverbs.OpRDMAWriteWithImm, imm, dst, true)
}

// PostRead reads n bytes from the start of src into m at off (RDMA READ).
func (ep *Endpoint) PostRead(m *MR, off, n int, src RemoteBuf) error {
	return ep.post(m, off, n, uverbs.OpRDMARead, 0, src, true)
}

func (ep *Endpoint) post(m *MR, off, n int, op uverbs.Opcode, imm uint32, r RemoteBuf, rdma bool) error {
	sge, err := m.sge(off, n)
	if err != nil {
		return err
	}
	if rdma && uint64(n) > uint64(r.Len) {
		return fmt.Errorf("rdmacm: %d bytes to a %d-byte remote buffer: %w", n, r.Len, ErrInvalidArgument)
	}
	ep.sendMu.Lock()
	defer ep.sendMu.Unlock()
	ep.sendSGE[0] = sge
	wr := &ep.sendWR[0]
	*wr = uverbs.SendWR{ID: uint64(off), Opcode: op, Flags: uverbs.SendSignaled, SGEs: ep.sendSGE[:],
		Imm: imm, RemoteAddr: r.Addr, RKey: r.RKey}
	if !rdma && n > 0 && n <= int(ep.cfg.inline) {
		wr.Flags |= uverbs.SendInline
	}
	if err := ep.qp.PostSend(ep.sendWR[:]); err != nil {
		return err
	}
	ep.p.posted[sendQ].Add(1)
	return nil
}

// WaitSend waits for the next send-queue completion (sends, writes,
// reads). Its error is non-nil exactly when the completion failed, and is
// then the WC's Err (a *WCError; errors.Is matches both ways), or when no
// completion came: ctx ended, Close (ErrClosed), or the connection is
// gone. With EndpointOptions.SendCQ, or the caller's QP, the completions
// go elsewhere and WaitSend fails with ErrInvalidArgument (WaitRecv
// likewise with RecvCQ).
//
// At the end of the connection (the peer's disconnect, Disconnect, a
// fatal CM event) the QP moves to ERR, which flushes the work requests
// still posted. A wait returns the completions that came before, in
// order; the flushed ones are not returned one by one: once only they
// remain, WaitSend returns an error matching ErrDisconnected and WaitRecv
// returns io.EOF (see WaitRecv), and so do all later calls.
func (ep *Endpoint) WaitSend(ctx context.Context) (WC, error) {
	return ep.wait(ctx, sendQ)
}

// WaitRecv waits for the next receive completion; see WaitSend. After
// the peer's disconnect or Disconnect it returns the messages that arrived
// before, then io.EOF (bare, as io.Reader's, so err == io.EOF holds);
// after a fatal CM event (Err says which), that error; after Close,
// ErrClosed.
func (ep *Endpoint) WaitRecv(ctx context.Context) (WC, error) {
	return ep.wait(ctx, recvQ)
}

func (ep *Endpoint) wait(ctx context.Context, k int) (WC, error) {
	if ep.isClosed.Load() {
		return WC{}, fmt.Errorf("rdmacm: %w", ErrClosed)
	}
	if ep.p.cqs[k] == nil {
		return WC{}, fmt.Errorf("rdmacm: the endpoint's completions of this queue go to a shared CQ (CQ.Next) or the caller's QP's CQ: %w", ErrInvalidArgument)
	}
	for {
		w, err := ep.p.next(ctx, ep.gone, k)
		if err == nil {
			if w.Status == WCWRFlushErr && ep.gone.Err() != nil {
				continue // flushed by the end of the connection: not returned
			}
			wc := wcOf(w)
			return wc, wc.Err()
		}
		if errors.As(err, new(goneError)) {
			cause := context.Cause(ep.gone)
			switch {
			case errors.Is(cause, ErrClosed):
				return WC{}, cause
			case k == recvQ && cause == io.EOF:
				return WC{}, io.EOF
			case cause == io.EOF:
				return WC{}, fmt.Errorf("rdmacm: the connection is gone: %w", ErrDisconnected)
			}
			return WC{}, cause // a fatal CM event, which names itself
		}
		return WC{}, err
	}
}
