package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// MR is registered memory on a library-allocated buffer (outside the Go
// heap, page-aligned). Close deregisters it, then frees the buffer.
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
// listener's device (it must listen on an address, not on every device),
// before a connection exists: for example memory whose RemoteBuf goes in
// the REP (AcceptData). Every endpoint of the device may use it.
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
	_, pd, err := l.id.Verbs()
	if err != nil {
		return nil, err
	}
	return reg(pd, size, access)
}

// Bytes is the registered memory; valid until Close.
func (m *MR) Bytes() []byte { return m.buf.Bytes()[:m.mr.Length] }

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
	return errors.Join(err, m.buf.Close())
}

func (m *MR) sge(off, n int) (uverbs.SGE, error) {
	if off < 0 || n < 0 || off > m.Len() || n > m.Len()-off {
		return uverbs.SGE{}, fmt.Errorf("rdmacm: %d bytes at %d outside the %d-byte MR: %w", n, off, m.Len(), ErrInvalidArgument)
	}
	return m.mr.SGE(off, n), nil
}

// PostRecv posts a receive into n bytes of m at off; the completion's ID
// is off.
func (ep *Endpoint) PostRecv(m *MR, off, n int) error {
	sge, err := m.sge(off, n)
	if err != nil {
		return err
	}
	return ep.qp.PostRecv([]uverbs.RecvWR{{ID: uint64(off), SGEs: []uverbs.SGE{sge}}})
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
	wr := uverbs.SendWR{ID: uint64(off), Opcode: op, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{sge},
		Imm: imm, RemoteAddr: r.Addr, RKey: r.RKey}
	if !rdma && n > 0 && n <= int(ep.cfg.inline) {
		wr.Flags |= uverbs.SendInline
	}
	return ep.qp.PostSend([]uverbs.SendWR{wr})
}

// WaitSend waits for the next send-queue completion (sends, writes,
// reads). With EndpointOptions.SendCQ the completions go to that CQ and
// WaitSend fails with ErrInvalidArgument (WaitRecv likewise with RecvCQ). After the connection is gone it returns an error matching
// ErrDisconnected once the queue is empty. A failed completion is
// returned with its WC.Err.
func (ep *Endpoint) WaitSend(ctx context.Context) (WC, error) {
	return ep.wait(ctx, sendQ)
}

// WaitRecv waits for the next receive completion. When the peer has
// disconnected it returns io.EOF once the completions that arrived before
// are consumed (flushed receives included).
func (ep *Endpoint) WaitRecv(ctx context.Context) (WC, error) {
	return ep.wait(ctx, recvQ)
}

func (ep *Endpoint) wait(ctx context.Context, k int) (WC, error) {
	select {
	case <-ep.closed:
		return WC{}, fmt.Errorf("rdmacm: %w", ErrClosed)
	default:
	}
	if ep.p.cqs[k] == nil {
		return WC{}, fmt.Errorf("rdmacm: the endpoint's completions of this queue go to a shared CQ (CQ.Next) or the caller's QP's CQ: %w", ErrInvalidArgument)
	}
	wc, err := ep.p.next(ctx, ep.gone, k)
	if errors.As(err, new(goneError)) || (err == nil && wc.Status == uverbs.WCWRFlushErr && ep.gone.Err() != nil) {
		cause := context.Cause(ep.gone)
		if errors.Is(cause, ErrClosed) {
			return WC{wc}, cause
		}
		if k == recvQ {
			return WC{wc}, io.EOF
		}
		return WC{wc}, fmt.Errorf("rdmacm: %w", ErrDisconnected)
	}
	if err != nil {
		return WC{}, err
	}
	return WC{wc}, WC{wc}.Err()
}
