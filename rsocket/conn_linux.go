package rsocket

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-rdma/rdmacm/rdma"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/errfmt"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Conn is an rsockets stream connection; it implements net.Conn. Reads
// and writes may run at the same time; concurrent Reads (and concurrent
// Writes) are serialized.
type Conn struct {
	ep *rdmacm.Endpoint
	r  *resources

	mu    sync.Mutex // k, posting, polling, armed, waiting, waitDL, kicked, rposted
	k     *core
	armed bool
	// waiting: a Read or Write is blocked reading the completion channel
	// (the other waits for its wake); waitDL is its deadline. Only a
	// completion on the armed CQ ends that read: kickLocked makes one.
	waiting bool
	waitDL  *deadline
	kicked  bool // kickLocked posted a WRITE for the wait in progress
	// Without ThreadWait the wait is in the netpoller and takes wctx,
	// which kickLocked cancels (and replaces) instead.
	wctx    context.Context
	wcancel context.CancelFunc
	// rposted counts the receives posted and not yet seen completed: the
	// QP's move to ERR wakes a wait by flushing them.
	rposted  int
	woke     []*uverbs.CQ
	pollTime time.Duration
	wcs      [32]uverbs.WC
	swr      [1]uverbs.SendWR
	sges     [2]uverbs.SGE
	// creditSGE holds an inline SGL update while it is posted (the
	// provider copies inline data at post time), so the credit does not
	// escape to the heap.
	creditSGE [sgeLen]byte
	rmu       sync.Mutex
	wmu       sync.Mutex
	rwake     chan struct{}
	wwake     chan struct{}
	rdl       deadline
	wdl       deadline
	closed    chan struct{}
	// closing is set when Close starts: blocked calls then return
	// net.ErrClosed, not the end of stream Close's shutdown causes.
	closing atomic.Bool
	once    sync.Once
	done    sync.WaitGroup
	ka      *time.Timer
	kaTime  time.Duration

	local, remote net.Addr
	peerData      connDataView // the peer's rs_conn_data

	// The iomap (under wmu): windows not yet sent, all windows, the
	// peer's table entries in use.
	iomapPending []*IOMap
	iomaps       []*IOMap
	iomapUsed    []bool
}

// resources are a connection's verbs objects, made on the device's PD
// before the REQ or REP leaves (their addresses go in the private data).
type resources struct {
	cfg        config
	ch         *uverbs.CompChannel
	cq         *uverbs.CQ
	q          *uverbs.QP
	sbuf, rbuf *uverbs.Buffer
	tbuf       *uverbs.Buffer
	smr, rmr   *uverbs.MR
	tmr        *uverbs.MR
	cc         coreConfig
	data       [connDataLen]byte // ours
	rwrs       []uverbs.RecvWR   // rqSize zero-length receives
}

// setup is what the endpoint needs: the QP, our conn data, and the
// receives to post once the QP is in INIT (rs_create_ep posts them before
// the connection exchange, so the peer's first message finds one). abort
// runs if the connection fails after.
func (r *resources) setup(abort func()) rdmacm.ConnSetup {
	return rdmacm.ConnSetup{QP: r.q, PrivateData: r.data[:], Abort: abort,
		AtInit: func(*rdmacm.Endpoint) error { return r.q.PostRecv(r.rwrs) }}
}

// newResources is rs_create_ep: one CQ on one completion channel for both
// queues, an RC QP signalling every send with 2 send SGEs and 1 receive
// SGE, the send buffer (with room for qpCtrlSize SGL updates after it),
// the target SGL and the receive buffer.
func newResources(pd *uverbs.PD, cfg config) (r *resources, err error) {
	r = &resources{cfg: cfg}
	defer func() {
		if err != nil {
			r.close()
			r = nil
		}
	}()
	x := pd.Context()
	// A blocking channel: a wait is one read(2), as rsocket.c's
	// ibv_get_cq_event, where the netpoller's costs an empty read, an
	// epoll_pwait and thread handoffs.
	mk := x.CreateCompChannelBlocking
	if cfg.netpoll {
		mk = x.CreateCompChannel
	}
	if r.ch, err = mk(); err != nil {
		return nil, err
	}
	if r.cq, err = x.CreateCQ(int(cfg.sqSize)+int(cfg.rqSize), r.ch, 0); err != nil {
		return nil, err
	}
	if r.q, err = pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: r.cq, RecvCQ: r.cq, SignalAll: true, Cap: qp.Cap{
		MaxSendWR: uint32(cfg.sqSize), MaxRecvWR: uint32(cfg.rqSize), MaxSendSGE: 2, MaxRecvSGE: 1, MaxInlineData: cfg.inline,
	}}); err != nil {
		return nil, err
	}
	// The QP may give more inline room than asked (rsocket.c keeps it).
	inline := min(r.q.Cap().MaxInlineData, maxImmData)
	if r.sbuf, err = uverbs.AllocBuffer(int(cfg.sbufSize) + sgeLen*qpCtrlSize); err != nil {
		return nil, err
	}
	if r.smr, err = pd.RegMR(r.sbuf, qp.AccessLocalWrite); err != nil {
		return nil, err
	}
	if r.tbuf, err = uverbs.AllocBuffer(sglSize*sgeLen + cfg.iomapEntries*iomapLen); err != nil {
		return nil, err
	}
	if r.tmr, err = pd.RegMR(r.tbuf, qp.AccessLocalWrite|qp.AccessRemoteWrite); err != nil {
		return nil, err
	}
	if r.rbuf, err = uverbs.AllocBuffer(int(cfg.rbufSize)); err != nil {
		return nil, err
	}
	if r.rmr, err = pd.RegMR(r.rbuf, qp.AccessLocalWrite|qp.AccessRemoteWrite); err != nil {
		return nil, err
	}
	r.cc = coreConfig{
		sqSize: cfg.sqSize, rqSize: cfg.rqSize, inline: inline, rbufSize: cfg.rbufSize, sbufSize: cfg.sbufSize,
		rbufAddr: r.rbuf.Addr(), rbufKey: r.rmr.RKey,
		targetSGLAddr: r.tbuf.Addr(), targetSGLKey: r.tmr.RKey, targetSGLEntries: sglSize, bigEndian: hostBigEndian, iomapEntries: cfg.iomapEntries,
	}
	cd := r.cc.connData()
	cd.marshal(&r.data)
	// The receives are zero-length: data arrives by RDMA WRITE, the
	// receive only carries the immediate (rs_post_recv).
	r.rwrs = make([]uverbs.RecvWR, cfg.rqSize)
	for i := range r.rwrs {
		r.rwrs[i].ID = recvWRID
	}
	return r, nil
}

// close releases what newResources made: the QP before its CQ, the CQ
// before its channel, the MRs before their buffers.
func (r *resources) close() {
	if r.q != nil {
		r.q.Close()
	}
	if r.cq != nil {
		r.cq.Close()
	}
	if r.ch != nil {
		r.ch.Close()
	}
	for _, m := range []*uverbs.MR{r.smr, r.tmr, r.rmr} {
		if m != nil {
			m.Close()
		}
	}
	for _, b := range []*uverbs.Buffer{r.sbuf, r.tbuf, r.rbuf} {
		if b != nil {
			b.Close()
		}
	}
}

func (c config) endpointOptions() *rdmacm.EndpointOptions {
	// rsocket.c's rdma_conn_param: retry 7, RNR retry 7 (the defaults).
	return &rdmacm.EndpointOptions{Backend: c.backend, RetryCount: 7, RNRRetryCount: 7}
}

func dial(ctx context.Context, address string, opts *Options) (*Conn, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	var r *resources // of the address tried last
	eo := cfg.endpointOptions()
	eo.Setup = func(ep *rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
		var err error
		if r, err = newResources(ep.PD(), cfg); err != nil {
			return rdmacm.ConnSetup{}, err
		}
		made := r
		return r.setup(func() { made.close(); r = nil }), nil
	}
	ep, err := rdmacm.Dial(ctx, address, eo)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "rdma", Err: err}
	}
	// rs_do_connect: a REP whose version is not 1 fails the connect.
	peer, err := parseConnData(ep.PrivateData())
	if err != nil {
		r.close() // before the endpoint, which may close the device
		ep.Close()
		return nil, &net.OpError{Op: "dial", Net: "rdma", Err: err}
	}
	return newConn(ep, r, peer)
}

func newConn(ep *rdmacm.Endpoint, r *resources, peer connDataView) (*Conn, error) {
	c := &Conn{ep: ep, r: r, rwake: make(chan struct{}, 1), wwake: make(chan struct{}, 1), closed: make(chan struct{})}
	c.rdl.init()
	c.wdl.init()
	c.k = newCore(r.cc, peer, r.tbuf.Bytes())
	c.peerData = peer
	c.iomapUsed = make([]bool, c.k.remoteIOMap.Length)
	c.local = net.TCPAddrFromAddrPort(ep.LocalAddr())
	c.remote = net.TCPAddrFromAddrPort(ep.RemoteAddr())
	c.woke = make([]*uverbs.CQ, 0, 2)
	c.pollTime = r.cfg.pollTime
	c.rposted = int(r.cfg.rqSize) // posted at INIT (resources.setup)
	if r.cfg.netpoll {
		c.wctx, c.wcancel = context.WithCancel(context.Background())
	}
	c.rdl.onPass = func() { c.interrupt(&c.rdl) }
	c.wdl.onPass = func() { c.interrupt(&c.wdl) }
	c.done.Add(1)
	go c.watch()
	if r.cfg.keepAlive > 0 {
		c.kaTime = time.Duration(r.cfg.keepAlive)
		c.ka = time.AfterFunc(c.kaTime, c.keepalive)
	}
	return c, nil
}

// pollLocked polls the CQ until it is empty, feeding the core, then
// posts the receives it consumed and the credits it owes (rs_process_cq's
// rs_update_credits / rs_poll_cq / rs_update_credits).
func (c *Conn) pollLocked() (int, error) {
	total := 0
	for {
		n, err := c.r.cq.Poll(c.wcs[:])
		if err != nil {
			c.k.fail(err)
			c.kickLocked()
			return total, err
		}
		for i := range c.wcs[:n] {
			wc := &c.wcs[i]
			if wc.ID&recvWRID != 0 {
				c.rposted--
				switch {
				case wc.Status != rdma.WCSuccess:
					// Flushed or failed receives end nothing by themselves
					// (rsocket.c); the CM's disconnect or a send error does.
				case wc.Flags&uverbs.WCWithImm == 0:
					c.k.fail(fmt.Errorf("%w: a message without immediate data", ErrProtocol))
				default:
					c.k.onRecv(wc.Imm)
				}
				continue
			}
			c.k.onSend(wc.ID, wc.Status == rdma.WCSuccess, wc.Status == rdma.WCWRFlushErr, wc.Status)
		}
		total += n
		if n < len(c.wcs) {
			break
		}
	}
	if total > 0 {
		// Whoever polls wakes the others: a Read may find the credits a
		// blocked Write waits for, or a Write the error a Read needs.
		c.wake()
	}
	if c.k.connected && c.k.reposts > 0 {
		if err := c.r.q.PostRecv(c.r.rwrs[:c.k.reposts]); err != nil {
			c.k.fail(err)
			c.kickLocked()
		} else {
			c.rposted += c.k.reposts
		}
		c.k.reposts = 0
	}
	c.creditsLocked()
	return total, nil
}

// creditsLocked sends the credits the core owes (rs_update_credits).
func (c *Conn) creditsLocked() {
	for c.k.giveCredits() {
		cr := c.k.sendCredits()
		wr := &c.swr[0]
		*wr = uverbs.SendWR{ID: uint64(cr.imm), Opcode: uverbs.OpRDMAWriteWithImm, Imm: cr.imm}
		if cr.withSGE {
			wr.RemoteAddr, wr.RKey = cr.remoteAddr, cr.rkey
			if c.k.inline >= sgeLen {
				wr.Flags = uverbs.SendInline
				c.creditSGE = cr.sge
				wr.InlineData = c.creditSGE[:]
			} else {
				off := int(c.r.cfg.sbufSize) + int(cr.ctrlSlot)*sgeLen
				copy(c.r.sbuf.Bytes()[off:], cr.sge[:])
				c.sges[0] = c.r.smr.SGE(off, sgeLen)
				wr.SGEs = c.sges[:1]
			}
		}
		c.postLocked()
	}
}

func (c *Conn) postLocked() {
	err := c.r.q.PostSend(c.swr[:])
	c.swr[0] = uverbs.SendWR{}
	if err != nil && c.k.connected {
		c.k.fail(err)
		c.wake()
		c.kickLocked()
	}
}

// wake tells a blocked Read and a blocked Write to look again.
func (c *Conn) wake() {
	select {
	case c.rwake <- struct{}{}:
	default:
	}
	select {
	case c.wwake <- struct{}{}:
	default:
	}
}

// await blocks a Read or Write that found nothing to do until the CQ may
// hold news for it, as rsocket.c's rs_get_comp: poll for the polling
// time, arm the CQ, poll again, then read the completion channel in the
// caller's goroutine with a blocking read(2), one syscall per wait. Only
// one goroutine reads the channel; another waits for its wake. nil means
// look again.
//
// The read ends only when a completion arrives on the armed CQ, so
// every other reason to wake becomes one (kickLocked). No wake-up is
// lost, in any order of arm, poll, completion and news:
//   - While c.armed, the CQ is armed or its event is queued: an arm is
//     spent by exactly one event, and only the wait that reads it
//     clears armed. So a completion after the arm ends the read, even
//     one that came before the read began.
//   - A completion before the arm is found by the poll that follows the
//     arm (under the same c.mu as the arm), so it makes no wait.
//   - Every other news (a deadline, Close, the CM's, a failed post) is
//     published under c.mu, then kickLocked runs: if waiting is set the
//     waiter already checked, and the kick makes a completion; if not,
//     the waiter's check under c.mu, before it sets waiting, sees the
//     news. A deadline closes its channel before onPass takes c.mu, so a
//     check that missed it is followed by an interrupt that finds
//     waiting.
func (c *Conn) await(wake chan struct{}, dl *deadline) error {
	c.mu.Lock()
	if !c.waiting {
		if n := c.spinLocked(); n > 0 || c.k.err != nil {
			c.mu.Unlock()
			return nil
		}
	}
	if c.waiting {
		c.mu.Unlock()
		select {
		case <-wake:
			return nil
		case <-dl.wait():
			return os.ErrDeadlineExceeded
		case <-c.closed:
			return net.ErrClosed
		}
	}
	if !c.armed {
		if err := c.r.cq.RequestNotify(false); err != nil {
			c.k.fail(err)
			c.mu.Unlock()
			c.wake()
			return nil
		}
		c.armed = true
	}
	// A completion may have come before the arm. The poll also leaves
	// every receive posted while connected, for the kick's flush.
	if n, _ := c.pollLocked(); n > 0 || !c.k.connected || c.closing.Load() {
		c.mu.Unlock()
		return nil
	}
	if isClosed(dl.wait()) {
		c.mu.Unlock()
		return os.ErrDeadlineExceeded
	}
	c.waiting, c.waitDL, c.kicked = true, dl, false
	ctx := c.wctx
	c.mu.Unlock()
	var err error
	if ctx != nil {
		c.woke, err = c.r.ch.WaitInto(ctx, c.woke)
	} else {
		c.woke, err = c.r.ch.WaitBlocking(context.Background(), c.woke)
	}
	c.mu.Lock()
	c.waiting, c.waitDL, c.kicked = false, nil, false
	switch {
	case err == nil:
		c.armed = false
	case ctx != nil && ctx.Err() != nil: // kicked: the CQ stays armed
	default:
		// The device is gone (EIO): no event will come.
		c.k.fail(err)
	}
	c.mu.Unlock()
	// Whoever waited for this wait's news looks again, and may wait next.
	c.wake()
	if isClosed(dl.wait()) {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// spinLocked polls the CQ for the polling time (rsocket.c's
// polling_time), c.mu held but released between polls; it returns the
// completions found.
func (c *Conn) spinLocked() int {
	if c.pollTime <= 0 {
		return 0
	}
	start := time.Now()
	for {
		if n, err := c.pollLocked(); n > 0 || err != nil || c.waiting {
			return n
		}
		if time.Since(start) >= c.pollTime {
			return 0
		}
		c.mu.Unlock()
		c.mu.Lock()
	}
}

// interrupt ends a wait on the completion channel whose deadline d
// passed or moved into the past.
func (c *Conn) interrupt(d *deadline) {
	c.mu.Lock()
	if c.waiting && c.waitDL == d {
		c.kickLocked()
	}
	c.mu.Unlock()
}

// kickLocked makes a completion arrive on the armed CQ, which ends the
// wait on the completion channel in progress, if any; c.mu is held.
//
// While connected it posts a signalled zero-length RDMA WRITE (as the
// keepalive, which the peer never sees) on a control slot. With none
// free, a control message's completion is still to come (every send is
// signalled and a slot is freed only by polling its completion), which
// ends the wait as well. The WRITE completes after a round trip; to a
// dead or unreachable peer only with an error once the QP's transport
// retries run out (7 retries of the CM's ACK timeout: seconds), which
// also ends the connection, as the keepalive's would. So a deadline
// that passes during a wait is late by a round trip, or by the retries
// when the peer is gone.
//
// Not connected, it moves the QP to ERR, which flushes the posted
// receives into completions (see flushLocked for why some are posted).
// Without ThreadWait it cancels the wait's context instead.
//
// Why not ppoll(2) with a timeout when a deadline is set: a timeout
// serves only a deadline set before the wait, while net/http moves one
// into the past during a wait that began with none (to abort a
// background read), which needs a completion anyway. With one
// mechanism a wait stays one syscall, deadline or not.
func (c *Conn) kickLocked() {
	if !c.waiting {
		return
	}
	if c.wcancel != nil { // the netpoller's wait takes a context
		c.wcancel()
		c.wctx, c.wcancel = context.WithCancel(context.Background())
		return
	}
	if c.k.connected {
		if c.kicked || !c.k.ctrlAvail() {
			return
		}
		c.kicked = true
		imm := c.k.ctrl(ctrlKeepalive)
		c.swr[0] = uverbs.SendWR{ID: uint64(imm), Opcode: uverbs.OpRDMAWrite}
		c.postLocked() // if it fails, it ends the connection and kicks again
		return
	}
	c.flushLocked()
}

// flushLocked moves the QP to ERR so that its posted work requests
// complete (flushed); c.mu is held. A wait then always has a receive to
// flush or an event queued: it starts only while connected, right after
// a poll that reposted every receive it found completed (rposted is
// rqSize then), and a receive leaves the count during the wait only by
// a completion, which came after the arm and so queued an event. (A
// receive posted to a QP already in ERR is no substitute: rxe does not
// flush it.)
func (c *Conn) flushLocked() {
	if c.r.q.State() == qp.Err {
		return // flushed already: the wait has its completions
	}
	if err := c.r.q.Modify(&qp.Attr{State: qp.Err}, qp.MaskState); err != nil {
		c.k.fail(err) // the device is gone: the wait ends with EIO
	}
}

// watch ends the connection when the CM says so: the peer's DREQ is an
// orderly end (reads drain, then io.EOF), anything else an error.
func (c *Conn) watch() {
	defer c.done.Done()
	select {
	case <-c.ep.Done():
	case <-c.closed:
		return
	}
	c.mu.Lock()
	err := c.ep.Err()
	if errors.Is(err, io.EOF) {
		c.k.disconnected()
	} else if c.k.connected {
		c.k.fail(errfmt.Wrap("rsocket", "", err))
	}
	c.kickLocked()
	c.mu.Unlock()
	c.wake()
}

// keepalive is rsocket.c's tcp_svc_send_keepalive: a zero-length RDMA
// WRITE the peer never sees; a dead peer fails its completion after the
// QP's retries, which ends the connection.
func (c *Conn) keepalive() {
	c.mu.Lock()
	// No goroutine polls an idle connection: the earlier keepalives'
	// completions free their control slots here.
	c.pollLocked()
	if c.k.connected && c.k.ctrlAvail() {
		imm := c.k.ctrl(ctrlKeepalive)
		c.swr[0] = uverbs.SendWR{ID: uint64(imm), Opcode: uverbs.OpRDMAWrite}
		c.postLocked()
	}
	live := c.k.connected
	c.mu.Unlock()
	select {
	case <-c.closed:
	default:
		if live {
			c.ka.Reset(c.kaTime)
		}
	}
}

// Read reads data the peer wrote; io.EOF after the peer's shutdown or
// close once the data before it is read.
func (c *Conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if isClosed(c.rdl.wait()) { // as a socket: a passed deadline fails at once
		return 0, c.opErr("read", os.ErrDeadlineExceeded)
	}
	for {
		select {
		case <-c.closed:
			return 0, c.opErr("read", net.ErrClosed)
		default:
		}
		c.mu.Lock()
		c.pollLocked()
		if c.k.haveData() {
			if len(b) == 0 {
				c.mu.Unlock()
				return 0, nil
			}
			n := c.k.consume(b, c.r.rbuf.Bytes())
			c.creditsLocked()
			c.mu.Unlock()
			return n, nil
		}
		err := c.k.err
		readable := c.k.readable
		c.mu.Unlock()
		if c.closing.Load() {
			return 0, c.opErr("read", net.ErrClosed)
		}
		if err != nil {
			return 0, c.opErr("read", err)
		}
		if !readable {
			return 0, io.EOF
		}
		if len(b) == 0 {
			return 0, nil
		}
		if err := c.await(c.rwake, &c.rdl); err != nil {
			return 0, c.opErr("read", err)
		}
	}
}

// Write writes b in chunks growing from 2 KiB to 64 KiB, each an RDMA
// WRITE WITH IMMEDIATE into the peer's receive buffer (rsend); it blocks
// while the peer grants no room. After CloseWrite, the peer's close or a
// failed transfer, it fails with an error matching syscall.ECONNRESET (as
// rsend's) and rdma.ErrDisconnected.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if isClosed(c.wdl.wait()) {
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	}
	if err := c.sendIOMaps(); err != nil {
		return 0, err
	}
	olen := uint32(olapStartSize)
	sent := 0
	for sent < len(b) {
		if err := c.sendSlot("write"); err != nil {
			return sent, err
		}
		w, err := c.k.nextWrite(len(b)-sent, &olen)
		if err != nil {
			c.mu.Unlock()
			return sent, c.opErr("write", err)
		}
		c.postPlanned(w, b[sent:sent+int(w.n)], uverbs.OpRDMAWriteWithImm)
		err = c.k.err
		c.mu.Unlock()
		if err != nil {
			return sent, c.opErr("write", err)
		}
		sent += int(w.n)
	}
	return sent, nil
}

// shutdown is rshutdown: a control message (SHUTDOWN for a half-close,
// DISCONNECT for the end), then wait for the sends to complete.
func (c *Conn) shutdown(ctx context.Context, write bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.k.connected {
		return nil
	}
	ctrl := uint32(ctrlDisconnect)
	if write {
		c.k.writable = false
		if c.k.readable {
			ctrl = ctrlShutdown
		}
	} else {
		c.k.readable, c.k.writable = false, false
	}
	c.wake() // a blocked Write sees it cannot write any more
	if err := c.waitLocked(ctx, c.k.ctrlAvail); err != nil {
		return err
	}
	if c.k.connected {
		imm := c.k.ctrl(ctrl)
		c.swr[0] = uverbs.SendWR{ID: uint64(imm), Opcode: uverbs.OpRDMAWriteWithImm, Imm: imm}
		c.postLocked()
	}
	return c.waitLocked(ctx, c.k.allSendsDone)
}

// waitLocked polls until test holds, the connection ends or ctx ends,
// with c.mu held (released while it sleeps). The sleeps grow from 1 ms
// to 64 ms: a wait that outlasts a round trip is one for the QP's
// retries.
func (c *Conn) waitLocked(ctx context.Context, test func() bool) error {
	var t *time.Timer
	for d := time.Millisecond; ; d = min(2*d, 64*time.Millisecond) {
		c.pollLocked()
		if test() || !c.k.connected {
			return nil
		}
		c.mu.Unlock()
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			c.mu.Lock()
			return ctx.Err()
		}
		c.mu.Lock()
	}
}

// drainTime bounds how long a shutdown waits for its sends to complete.
// Until the QP's own retries run out (each waits the local ACK timeout,
// 4.096 µs × 2^Timeout) a send may still reach the peer, so giving up
// sooner would lose data already written, as rsocket.c's rshutdown,
// which waits without a bound, never does. After them the QP has failed
// the sends itself; the bound only covers a peer that never replies at
// all (RNR retries are unbounded).
func (c *Conn) drainTime() time.Duration {
	a, err := c.r.q.Query(qp.MaskTimeout | qp.MaskRetryCnt)
	if err != nil || a.Timeout == 0 { // 0: no timeout
		return maxDrainTime
	}
	// One try more than the QP makes, so that its verdict comes first.
	try := 4096 * time.Nanosecond << a.Timeout
	return min(max(try*time.Duration(a.RetryCnt+2), minDrainTime), maxDrainTime)
}

const (
	minDrainTime = 2 * time.Second
	maxDrainTime = 2 * time.Minute
)

// CloseWrite half-closes: the peer reads io.EOF, this side may still
// read (rshutdown(SHUT_WR), CTRL(SHUTDOWN)).
func (c *Conn) CloseWrite() error {
	select {
	case <-c.closed:
		return c.opErr("close", net.ErrClosed)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.drainTime())
	defer cancel()
	if err := c.shutdown(ctx, true); err != nil {
		return c.opErr("close", err)
	}
	return nil
}

// Close sends DISCONNECT, waits for the sends to complete (so the peer
// gets everything written before; at most as long as the QP's retries
// take, seconds to a peer that is gone), disconnects and releases
// everything; blocked Reads and Writes return net.ErrClosed.
func (c *Conn) Close() error {
	err := c.opErr("close", net.ErrClosed)
	c.once.Do(func() {
		c.closing.Store(true)
		if c.ka != nil {
			c.ka.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.drainTime())
		c.shutdown(ctx, false)
		cancel()
		close(c.closed)
		c.rdl.close()
		c.wdl.close()
		// A Read or Write blocked reading the completion channel holds
		// rmu or wmu: the kick ends its wait (a blocking read, only its
		// flush can), and the check before a wait sees the connection is
		// over, so the channel is never closed under a reader.
		c.mu.Lock()
		c.k.fail(net.ErrClosed)
		c.kickLocked()
		c.mu.Unlock()
		c.done.Wait()
		// Every user of the resources holds rmu, wmu or mu. They go
		// before the endpoint: its Close may release the last reference
		// to the device, which destroys whatever is still open on it
		// (uverbs Context.Close), the CQ our driver polls included.
		c.rmu.Lock()
		c.wmu.Lock()
		c.mu.Lock()
		for len(c.iomaps) > 0 {
			c.iomaps[0].release()
		}
		c.r.close()
		c.k.fail(net.ErrClosed)
		c.mu.Unlock()
		c.wmu.Unlock()
		c.rmu.Unlock()
		err = c.ep.Close()
	})
	return err
}

func (c *Conn) opErr(op string, err error) error {
	if err == io.EOF {
		return err
	}
	return &net.OpError{Op: op, Net: "rdma", Source: c.local, Addr: c.remote, Err: err}
}

// LocalAddr is the CM ID's address and port.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the peer's address and port.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

// SetReadDeadline bounds Read: past t it returns os.ErrDeadlineExceeded.
// A Read asleep on the completion channel when t passes (or moves into
// the past) is woken by a zero-length RDMA WRITE's completion, a round
// trip later; with the peer dead or unreachable, only when the WRITE
// fails after the QP's retries (seconds), which also ends the
// connection. The same holds for SetWriteDeadline and SetDeadline.
func (c *Conn) SetReadDeadline(t time.Time) error { c.rdl.set(t); return nil }

// SetWriteDeadline bounds Write likewise.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wdl.set(t); return nil }
