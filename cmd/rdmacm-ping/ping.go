package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// rping's protocol (librdmacm/examples/rping.c), per ping:
//
//	client: SEND {addr, rkey, size} of its start buffer ("read advert")
//	server: RDMA READ of it into its buffer, then SEND "go ahead"
//	client: SEND {addr, rkey, size} of its result buffer ("write advert")
//	server: RDMA WRITE of its buffer into it, then SEND "go ahead"
//	client: compares the buffers (-V), prints the data (-v)
//
// The advert is struct rping_rdma_info: buf __be64, rkey __be32, size
// __be32 (16 bytes). The data is "rdma-ping-%d: " followed by the letters
// A..z shifting by one each ping, NUL-terminated.

const (
	infoSize = 16
	sqDepth  = 16 // RPING_SQ_DEPTH
	msgFmt   = "rdma-ping-%d: "
)

// Work request IDs, to tell completions apart.
const (
	wrRecv = iota + 1
	wrSend
	wrRDMA
)

// errDisconnected ends a ping loop when the peer disconnected.
var errDisconnected = errors.New("disconnected")

// pingConn holds one connection's verbs resources.
type pingConn struct {
	a      *app
	id     *cm.ID
	server bool

	pd   *uverbs.PD
	ch   *uverbs.CompChannel
	cq   *uverbs.CQ
	qp   *uverbs.QP
	self extQP // -q: the QP this program created and moves itself

	recvBuf, sendBuf, rdmaBuf, startBuf *uverbs.Buffer
	recvMR, sendMR, rdmaMR, startMR     *uverbs.MR

	wcs     [sqDepth]uverbs.WC
	pending []uverbs.WC
	closers []func() error
}

// setupQP creates the CQ and the QP: by the library (rdma_create_qp) or,
// with -q, by this program.
func (a *app) setupQP(id *cm.ID, server bool) (*pingConn, error) {
	x, pd, err := id.Verbs()
	if err != nil {
		return nil, err
	}
	pc := &pingConn{a: a, id: id, server: server, pd: pd}
	ok := false
	defer func() {
		if !ok {
			pc.close()
		}
	}()
	if pc.ch, err = x.CreateCompChannel(); err != nil {
		return nil, err
	}
	pc.closers = append(pc.closers, pc.ch.Close)
	if pc.cq, err = x.CreateCQ(sqDepth*2, pc.ch, 0); err != nil {
		return nil, err
	}
	pc.closers = append(pc.closers, pc.cq.Close)
	caps := qp.Cap{MaxSendWR: sqDepth, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}
	if a.cfg.selfQP {
		v, err := pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: pc.cq, RecvCQ: pc.cq, Cap: caps})
		if err != nil {
			return nil, err
		}
		pc.closers = append(pc.closers, v.Close)
		pc.qp, pc.self = v, uverbsQP{v}
		// INIT now, so that receives can be posted before the connection.
		if err := modifyQP(id, pc.self, qp.Init); err != nil {
			return nil, err
		}
	} else {
		lq, err := id.CreateQP(cm.QPInit{Cap: caps, SendCQ: pc.cq, RecvCQ: pc.cq})
		if err != nil {
			return nil, err
		}
		pc.closers = append(pc.closers, id.DestroyQP)
		pc.qp = lq.Verbs
	}
	a.dbg("created QP %#x (self-created: %v)", pc.qp.Num(), a.cfg.selfQP)
	ok = true
	return pc, nil
}

// setupBuffers registers rping's buffers.
func (pc *pingConn) setupBuffers() error {
	size := pc.a.cfg.size
	reg := func(n int, access qp.Access) (*uverbs.Buffer, *uverbs.MR, error) {
		b, err := uverbs.AllocBuffer(n)
		if err != nil {
			return nil, nil, err
		}
		pc.closers = append(pc.closers, b.Close)
		mr, err := pc.pd.RegMR(b, access)
		if err != nil {
			return nil, nil, err
		}
		pc.closers = append(pc.closers, mr.Close)
		return b, mr, nil
	}
	var err error
	if pc.recvBuf, pc.recvMR, err = reg(infoSize, qp.AccessLocalWrite); err != nil {
		return err
	}
	if pc.sendBuf, pc.sendMR, err = reg(infoSize, 0); err != nil {
		return err
	}
	rw := qp.AccessLocalWrite | qp.AccessRemoteRead | qp.AccessRemoteWrite
	if pc.rdmaBuf, pc.rdmaMR, err = reg(size, rw); err != nil {
		return err
	}
	if !pc.server {
		if pc.startBuf, pc.startMR, err = reg(size, rw); err != nil {
			return err
		}
	}
	return nil
}

// close releases everything in reverse order.
func (pc *pingConn) close() {
	for i := len(pc.closers) - 1; i >= 0; i-- {
		if err := pc.closers[i](); err != nil {
			pc.a.dbg("cleanup: %v", err)
		}
	}
	pc.closers = nil
}

func (pc *pingConn) postRecv() error {
	return pc.qp.PostRecv([]uverbs.RecvWR{{ID: wrRecv, SGEs: []uverbs.SGE{pc.recvMR.SGE(0, infoSize)}}})
}

// advertise sends {addr, rkey, size} of mr (rping_format_send).
func (pc *pingConn) advertise(mr *uverbs.MR) error {
	b := pc.sendBuf.Bytes()
	binary.BigEndian.PutUint64(b[0:], mr.Addr)
	binary.BigEndian.PutUint32(b[8:], mr.RKey)
	binary.BigEndian.PutUint32(b[12:], uint32(pc.a.cfg.size))
	return pc.send()
}

func (pc *pingConn) send() error {
	return pc.qp.PostSend([]uverbs.SendWR{{ID: wrSend, Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{pc.sendMR.SGE(0, infoSize)}}})
}

func (pc *pingConn) rdma(op uverbs.Opcode, length int, addr uint64, rkey uint32) error {
	return pc.qp.PostSend([]uverbs.SendWR{{ID: wrRDMA, Opcode: op, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{pc.rdmaMR.SGE(0, length)}, RemoteAddr: addr, RKey: rkey}})
}

// next returns the next completion: poll, arm, poll again, then sleep in
// the completion channel (drained in the netpoller).
func (pc *pingConn) next(ctx context.Context) (uverbs.WC, error) {
	for {
		if len(pc.pending) > 0 {
			wc := pc.pending[0]
			pc.pending = pc.pending[1:]
			return wc, nil
		}
		n, err := pc.cq.Poll(pc.wcs[:])
		if err != nil {
			return uverbs.WC{}, err
		}
		if n > 0 {
			pc.pending = pc.wcs[:n]
			continue
		}
		if err := pc.cq.RequestNotify(false); err != nil {
			return uverbs.WC{}, err
		}
		if n, err = pc.cq.Poll(pc.wcs[:]); err != nil {
			return uverbs.WC{}, err
		} else if n > 0 {
			pc.pending = pc.wcs[:n]
			continue
		}
		if _, err := pc.ch.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return uverbs.WC{}, errDisconnected
			}
			return uverbs.WC{}, err
		}
	}
}

// await returns the next completion of the wanted opcode; receives are
// re-posted, send completions skipped.
func (pc *pingConn) await(ctx context.Context, want rdma.WCOpcode) (uverbs.WC, error) {
	for {
		wc, err := pc.next(ctx)
		if err != nil {
			return wc, err
		}
		if wc.Status != rdma.WCSuccess {
			if wc.Status == rdma.WCWRFlushErr {
				return wc, errDisconnected
			}
			return wc, fmt.Errorf("cq completion failed status %d (%v)", wc.Status, wc.Status)
		}
		if wc.Opcode == rdma.WCRecv {
			if wc.ByteLen != infoSize {
				return wc, fmt.Errorf("received bogus data, size %d", wc.ByteLen)
			}
			if err := pc.postRecv(); err != nil {
				return wc, err
			}
		}
		if wc.Opcode == want {
			return wc, nil
		}
	}
}

// remote decodes the advert in the receive buffer.
func (pc *pingConn) remote() (addr uint64, rkey, size uint32) {
	b := pc.recvBuf.Bytes()
	return binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint32(b[12:])
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// fillPing writes rping's ping data for ping number n.
func fillPing(b []byte, n int, start byte) {
	cc := copy(b, fmt.Sprintf(msgFmt, n))
	c := start
	for i := cc; i < len(b); i++ {
		b[i] = c
		c++
		if c > 122 {
			c = 65
		}
	}
	b[len(b)-1] = 0
}

type rttStats struct {
	n             int
	min, max, sum time.Duration
}

func (s *rttStats) add(d time.Duration) {
	if s.n == 0 || d < s.min {
		s.min = d
	}
	if d > s.max {
		s.max = d
	}
	s.sum += d
	s.n++
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

func (s *rttStats) String() string {
	if s.n == 0 {
		return "0 pings"
	}
	return fmt.Sprintf("%d pings: rtt min/avg/max = %s/%s/%s ms", s.n, ms(s.min), ms(s.sum/time.Duration(s.n)), ms(s.max))
}

func (a *app) pingClient(ctx context.Context) error {
	id, err := a.ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		return err
	}
	defer id.Destroy()
	if err := a.resolve(ctx, id); err != nil {
		return err
	}
	pc, err := a.setupQP(id, false)
	if err != nil {
		return err
	}
	defer pc.close()
	if err := pc.setupBuffers(); err != nil {
		return err
	}
	if err := pc.postRecv(); err != nil {
		return err
	}
	if err := a.connectClient(ctx, id, pc); err != nil {
		return err
	}
	a.dbg("connected")
	// A disconnect by the server ends the data path (rping's cm thread).
	dctx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); watchDisconnect(dctx, stop, id, a) }()
	stats, runErr := pc.runClient(dctx)
	stop()
	<-watched // Disconnect below waits for DISCONNECTED itself
	// rping_disconnect: an own QP goes to ERR first; the library does it
	// for its QP.
	if pc.self != nil {
		pc.self.Modify(&qp.Attr{State: qp.Err}, qp.MaskState)
	}
	sctx, cancel := a.step(ctx)
	defer cancel()
	discErr := id.Disconnect(sctx)
	fmt.Println(stats)
	if runErr != nil && !errors.Is(runErr, errDisconnected) {
		return runErr
	}
	return discErr
}

// connectClient connects, with the -q flow when the QP is the program's.
func (a *app) connectClient(ctx context.Context, id *cm.ID, pc *pingConn) error {
	if a.cfg.eceSet {
		if pc.self == nil {
			return errors.New("-ece with a library-created QP: the library takes ECE from the QP; add -q")
		}
		if err := id.SetLocalECE(a.cfg.ece); err != nil {
			return err
		}
	}
	param := connParam(pc.self)
	sctx, cancel := a.step(ctx)
	defer cancel()
	if err := id.Connect(sctx, &param); err != nil {
		return err
	}
	if pc.self == nil {
		return nil
	}
	remote, err := id.RemoteECE()
	if err != nil {
		return err
	}
	a.dbg("remote ECE: %s", formatECE(remote))
	if err := applyRemoteECE(pc.self, remote); err != nil {
		return err
	}
	if err := modifyQP(id, pc.self, qp.Init, qp.RTR, qp.RTS); err != nil {
		return err
	}
	return id.Establish()
}

func (pc *pingConn) runClient(ctx context.Context) (*rttStats, error) {
	cfg := pc.a.cfg
	stats := &rttStats{}
	start := byte(65)
	for n := 0; cfg.count == 0 || n < cfg.count; n++ {
		if ctx.Err() != nil {
			return stats, errDisconnected
		}
		sb := pc.startBuf.Bytes()
		fillPing(sb, n, start)
		start++
		if start > 122 {
			start = 65
		}
		t0 := time.Now()
		if err := pc.advertise(pc.startMR); err != nil {
			return stats, err
		}
		// The server read the start buffer.
		if _, err := pc.await(ctx, rdma.WCRecv); err != nil {
			return stats, err
		}
		if err := pc.advertise(pc.rdmaMR); err != nil {
			return stats, err
		}
		// The server wrote the result buffer.
		if _, err := pc.await(ctx, rdma.WCRecv); err != nil {
			return stats, err
		}
		stats.add(time.Since(t0))
		rb := pc.rdmaBuf.Bytes()
		if cfg.validate && !bytes.Equal(sb, rb) {
			return stats, errors.New("data mismatch") // rping: "data mismatch!"
		}
		if cfg.verbose {
			fmt.Printf("ping data: %s\n", cString(rb))
		}
	}
	return stats, nil
}

func (a *app) pingServer(ctx context.Context) error {
	l, err := a.listen()
	if err != nil {
		return err
	}
	defer l.Destroy()
	if !a.cfg.persistent {
		id, err := l.GetRequest(ctx)
		if err != nil {
			return err
		}
		defer id.Destroy()
		return a.serve(ctx, id)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		id, err := l.GetRequest(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer id.Destroy()
			if err := a.serve(ctx, id); err != nil {
				fmt.Fprintf(os.Stderr, "rdmacm-ping: connection: %v\n", err)
			}
		}()
	}
}

// serve runs rping's server side on one connection until the client
// disconnects.
func (a *app) serve(ctx context.Context, id *cm.ID) error {
	remote, err := id.RemoteECE()
	if err != nil {
		return err
	}
	if !remote.IsZero() || a.cfg.debug {
		a.dbg("remote ECE: %s", formatECE(remote))
	}
	if a.cfg.rejectECE {
		return id.RejectECE(nil)
	}
	pc, err := a.setupQP(id, true)
	if err != nil {
		return err
	}
	defer pc.close()
	if err := pc.setupBuffers(); err != nil {
		return err
	}
	if err := pc.postRecv(); err != nil {
		return err
	}
	param := connParam(pc.self)
	if pc.self != nil {
		if err := applyRemoteECE(pc.self, remote); err != nil {
			return err
		}
		if err := modifyQP(id, pc.self, qp.Init, qp.RTR, qp.RTS); err != nil {
			return err
		}
		answer := a.cfg.ece
		if !a.cfg.eceSet {
			answer = ece.None
		}
		if answer.IsZero() {
			param.DeclineECE = true
		} else if err := id.SetLocalECE(answer); err != nil {
			return err
		}
	}
	sctx, cancel := a.step(ctx)
	err = id.Accept(sctx, &param)
	cancel()
	if err != nil {
		return err
	}
	a.dbg("accepted")
	// The data path ends when the client disconnects.
	dctx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); watchDisconnect(dctx, stop, id, a) }()
	n, runErr := pc.runServer(dctx)
	stop()
	<-watched
	if pc.self != nil {
		pc.self.Modify(&qp.Attr{State: qp.Err}, qp.MaskState)
	}
	dc, cancel2 := a.step(ctx)
	defer cancel2()
	discErr := id.Disconnect(dc)
	a.dbg("served %d pings", n)
	if !errors.Is(runErr, errDisconnected) {
		return runErr
	}
	if errors.Is(discErr, cm.ErrClosed) {
		return nil
	}
	return discErr
}

// watchDisconnect reads the ID's events until DISCONNECTED (or device
// removal), then calls stop to end the data path.
func watchDisconnect(ctx context.Context, stop context.CancelFunc, id *cm.ID, a *app) {
	defer stop()
	for {
		ev, err := id.GetEvent(ctx)
		if err != nil {
			return
		}
		t := ev.Type
		ev.Ack()
		a.dbg("event %v", t)
		if t == cm.EventDisconnected || t == cm.EventDeviceRemoval {
			return
		}
	}
}

func (pc *pingConn) runServer(ctx context.Context) (int, error) {
	n := 0
	for {
		// The client advertises its start buffer.
		if _, err := pc.await(ctx, rdma.WCRecv); err != nil {
			return n, err
		}
		addr, rkey, size := pc.remote()
		if int(size) > pc.rdmaBuf.Len() {
			return n, fmt.Errorf("client buffer of %d bytes exceeds the server's %d (-S)", size, pc.rdmaBuf.Len())
		}
		if err := pc.rdma(uverbs.OpRDMARead, int(size), addr, rkey); err != nil {
			return n, err
		}
		if _, err := pc.await(ctx, rdma.WCRDMARead); err != nil {
			return n, err
		}
		if pc.a.cfg.verbose {
			fmt.Printf("server ping data: %s\n", cString(pc.rdmaBuf.Bytes()))
		}
		if err := pc.send(); err != nil {
			return n, err
		}
		// The client advertises its result buffer.
		if _, err := pc.await(ctx, rdma.WCRecv); err != nil {
			return n, err
		}
		addr, rkey, _ = pc.remote()
		length := len(cString(pc.rdmaBuf.Bytes())) + 1
		if err := pc.rdma(uverbs.OpRDMAWrite, length, addr, rkey); err != nil {
			return n, err
		}
		if _, err := pc.await(ctx, rdma.WCRDMAWrite); err != nil {
			return n, err
		}
		if err := pc.send(); err != nil {
			return n, err
		}
		n++
	}
}

// uverbsQP adapts *uverbs.QP to extQP.
type uverbsQP struct{ q *uverbs.QP }

func (u uverbsQP) Num() uint32                        { return u.q.Num() }
func (u uverbsQP) QueryECE() (ece.ECE, error)         { return u.q.QueryECE() }
func (u uverbsQP) SetECE(e ece.ECE) error             { return u.q.SetECE(e) }
func (u uverbsQP) Modify(a *qp.Attr, m qp.Mask) error { return u.q.Modify(a, m) }
func (u uverbsQP) Close() error                       { return u.q.Close() }
