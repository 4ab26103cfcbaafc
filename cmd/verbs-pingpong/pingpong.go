package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Work request ids, as in rc_pingpong.c; pending is a mask of them.
const (
	recvWRID = 1
	sendWRID = 2
)

// dest is one side's address as exchanged over TCP.
type dest struct {
	lid uint16
	qpn uint32
	psn uint32
	gid rdma.GID
}

// wireLen is sizeof "0000:000000:000000:00000000000000000000000000000000"
// (the C message buffer, NUL included).
const wireLen = 52

// encode formats d as "%04x:%06x:%06x:%s" with the GID as 32 hex digits
// (the bytes in order, as gid_to_wire_gid produces them), NUL-padded to
// wireLen bytes.
func (d dest) encode() []byte {
	s := fmt.Sprintf("%04x:%06x:%06x:%s", d.lid, d.qpn, d.psn, hex.EncodeToString(d.gid[:]))
	b := make([]byte, wireLen)
	copy(b, s)
	return b
}

// parseDest parses a peer's message like sscanf("%x:%x:%x:%s") followed
// by wire_gid_to_gid.
func parseDest(b []byte) (dest, error) {
	var d dest
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	f := strings.Split(s, ":")
	if len(f) != 4 {
		return d, fmt.Errorf("bad remote address %q", s)
	}
	lid, err1 := strconv.ParseUint(f[0], 16, 16)
	qpn, err2 := strconv.ParseUint(f[1], 16, 32)
	psn, err3 := strconv.ParseUint(f[2], 16, 32)
	gid, err4 := hex.DecodeString(f[3])
	if err := errors.Join(err1, err2, err3, err4); err != nil || len(gid) != 16 {
		return d, fmt.Errorf("bad remote address %q", s)
	}
	d.lid, d.qpn, d.psn = uint16(lid), uint32(qpn), uint32(psn)
	copy(d.gid[:], gid)
	return d, nil
}

// clientExchange connects to the server, sends our n addresses, reads
// the server's n, and confirms with "done" (pp_client_exch_dest). n is 1
// for rc_pingpong, maxQP for srq_pingpong (whose unused entries are zero).
func clientExchange(server string, port int, my []dest, n int) ([]dest, error) {
	c, err := net.Dial("tcp", net.JoinHostPort(server, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("couldn't connect to %s:%d: %w", server, port, err)
	}
	defer c.Close()
	if _, err := c.Write(encodeAll(my, n)); err != nil {
		return nil, fmt.Errorf("couldn't send local address: %w", err)
	}
	rem, err := readDests(c, n)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte("done\x00")); err != nil {
		return nil, fmt.Errorf("couldn't write done: %w", err)
	}
	return rem, nil
}

// encodeAll is the n messages of my, zero addresses past its end (the
// C programs memset their array), in one buffer for one write.
func encodeAll(my []dest, n int) []byte {
	b := make([]byte, 0, n*wireLen)
	for i := range n {
		var d dest
		if i < len(my) {
			d = my[i]
		}
		b = append(b, d.encode()...)
	}
	return b
}

// readDests reads and parses n messages.
func readDests(r io.Reader, n int) ([]dest, error) {
	rem := make([]dest, n)
	msg := make([]byte, wireLen)
	for i := range rem {
		if _, err := io.ReadFull(r, msg); err != nil {
			return nil, fmt.Errorf("couldn't read remote address [%d]: %w", i, err)
		}
		var err error
		if rem[i], err = parseDest(msg); err != nil {
			return nil, err
		}
	}
	return rem, nil
}

// serverExchange accepts one client, reads its n addresses, connects the
// QPs with connect (before answering, as pp_server_exch_dest does), sends
// our n addresses and waits for the client's "done".
func serverExchange(port int, my []dest, n int, connect func([]dest) error) ([]dest, error) {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return nil, fmt.Errorf("couldn't listen to port %d: %w", port, err)
	}
	c, err := l.Accept()
	l.Close()
	if err != nil {
		return nil, fmt.Errorf("accept() failed: %w", err)
	}
	defer c.Close()
	rem, err := readDests(c, n)
	if err != nil {
		return nil, err
	}
	if err := connect(rem); err != nil {
		return rem, fmt.Errorf("couldn't connect to remote QP: %w", err)
	}
	if _, err := c.Write(encodeAll(my, n)); err != nil {
		return rem, fmt.Errorf("couldn't send local address: %w", err)
	}
	done := make([]byte, wireLen)
	if _, err := io.ReadAtLeast(c, done, 1); err != nil {
		return rem, fmt.Errorf("couldn't read done: %w", err)
	}
	return rem, nil
}

// pingpong is one side's verbs state (pingpong_context): one QP
// (rc_pingpong), or numQP QPs on one SRQ (srq_pingpong).
type pingpong struct {
	o         options
	x         *uverbs.Context
	ch        *uverbs.CompChannel
	pd        *uverbs.PD
	buf       *uverbs.Buffer
	mr        *uverbs.MR
	cq        *uverbs.CQ
	srq       *uverbs.SRQ
	qps       []*uverbs.QP
	qpIndex   map[uint32]int // QP number to index in qps (find_qp)
	recvQ     recvQueue      // where receives go: the QP or the SRQ
	sendFlags uverbs.SendFlags
	sendWR    []uverbs.SendWR
	recvWR    []uverbs.RecvWR
	pending   []int
	port      uverbs.PortAttr
}

// recvQueue is a QP's own receive queue or a shared one.
type recvQueue interface {
	PostRecv(wrs []uverbs.RecvWR) error
}

func (p *pingpong) close() error {
	if p.x == nil {
		return nil
	}
	// QPs before the SRQ they receive from, as pp_close_ctx.
	var err error
	for _, q := range p.qps {
		err = errors.Join(err, q.Close())
	}
	if p.srq != nil {
		err = errors.Join(err, p.srq.Close())
	}
	err = errors.Join(err, p.x.Close())
	if p.buf != nil {
		err = errors.Join(err, p.buf.Close())
	}
	p.x, p.qps, p.srq = nil, nil, nil
	return err
}

// pageSize is the page size the -c pattern steps by.
var pageSize = os.Getpagesize()

// fillBuffer writes the -c pattern: rc_pingpong fills the buffer with 0x7b
// and, when validating, writes (i / page_size) % sizeof(char) — that is 0
// — at each page start.
func fillBuffer(b []byte, validate bool) {
	for i := range b {
		b[i] = 0x7b
	}
	if validate {
		for i := 0; i < len(b); i += pageSize {
			b[i] = 0
		}
	}
}

// checkBuffer validates every byte against the -c pattern; it returns the
// pages that differ.
func checkBuffer(b []byte) []int {
	var bad []int
	for page := 0; page*pageSize < len(b); page++ {
		start := page * pageSize
		end := min(start+pageSize, len(b))
		ok := b[start] == 0
		for _, c := range b[start+1 : end] {
			ok = ok && c == 0x7b
		}
		if !ok {
			bad = append(bad, page)
		}
	}
	return bad
}

func setup(o options) (*pingpong, error) {
	p := &pingpong{o: o, sendFlags: uverbs.SendSignaled, qpIndex: map[uint32]int{}, pending: make([]int, o.numQP)}
	dev, err := uverbs.DefaultDiscovery.Device(o.device)
	if err != nil {
		if o.device != "" {
			return nil, fmt.Errorf("IB device %s not found: %w", o.device, err)
		}
		return nil, fmt.Errorf("no IB devices found: %w", err)
	}
	if p.x, err = uverbs.OpenDevice(dev, nil); err != nil {
		return nil, fmt.Errorf("couldn't get context for %s: %w", dev.Name, err)
	}
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()
	if p.buf, err = uverbs.AllocBuffer(o.size); err != nil {
		return nil, fmt.Errorf("couldn't allocate work buf: %w", err)
	}
	if o.srq {
		clear(p.buf.Bytes()) // srq_pingpong sends zeros
	} else {
		fillBuffer(p.buf.Bytes(), o.validate && o.serverName != "")
	}
	if o.events {
		// One blocking read per event, as ibv_get_cq_event: the loop waits
		// for nothing else, and nothing closes the channel during a wait.
		if p.ch, err = p.x.CreateCompChannelBlocking(); err != nil {
			return nil, fmt.Errorf("couldn't create completion channel: %w", err)
		}
	}
	if p.pd, err = p.x.AllocPD(); err != nil {
		return nil, fmt.Errorf("couldn't allocate PD: %w", err)
	}
	if p.mr, err = p.pd.RegMR(p.buf, qp.AccessLocalWrite); err != nil {
		return nil, fmt.Errorf("couldn't register MR: %w", err)
	}
	if p.cq, err = p.x.CreateCQ(o.rxDepth+o.numQP, p.ch, 0); err != nil {
		return nil, fmt.Errorf("couldn't create CQ: %w", err)
	}
	qpCap := qp.Cap{MaxSendWR: 1, MaxRecvWR: uint32(o.rxDepth), MaxSendSGE: 1, MaxRecvSGE: 1}
	if o.srq {
		if p.srq, err = p.pd.CreateSRQ(uverbs.SRQInit{MaxWR: o.rxDepth, MaxSGE: 1}); err != nil {
			return nil, fmt.Errorf("couldn't create SRQ: %w", err)
		}
		qpCap.MaxRecvWR, qpCap.MaxRecvSGE = 0, 0
	}
	for i := range o.numQP {
		q, err := p.pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: p.cq, RecvCQ: p.cq, SRQ: p.srq, Cap: qpCap})
		if err != nil {
			return nil, fmt.Errorf("couldn't create QP[%d]: %w", i, err)
		}
		p.qps = append(p.qps, q)
		p.qpIndex[q.Num()] = i
		if int(q.Cap().MaxInlineData) >= o.size {
			p.sendFlags |= uverbs.SendInline
		}
	}
	p.recvQ = p.qps[0]
	if p.srq != nil {
		p.recvQ = p.srq
	}
	for i, q := range p.qps {
		init := qp.Attr{State: qp.Init, PKeyIndex: 0, Port: uint8(o.ibPort)}
		if err := q.Modify(&init, qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskAccessFlags); err != nil {
			return nil, fmt.Errorf("failed to modify QP[%d] to INIT: %w", i, err)
		}
	}
	sge := []uverbs.SGE{p.mr.SGE(0, o.size)}
	p.sendWR = []uverbs.SendWR{{ID: sendWRID, Opcode: uverbs.OpSend, Flags: p.sendFlags, SGEs: sge}}
	p.recvWR = []uverbs.RecvWR{{ID: recvWRID, SGEs: sge}}
	if p.port, err = p.x.QueryPort(o.ibPort); err != nil {
		return nil, fmt.Errorf("couldn't get port info: %w", err)
	}
	ok = true
	return p, nil
}

// connect moves each QP to RTR and RTS towards its peer in rem
// (pp_connect_ctx).
func (p *pingpong) connect(my, rem []dest) error {
	for i, q := range p.qps {
		if err := p.connectQP(q, my[i].psn, rem[i]); err != nil {
			if len(p.qps) > 1 {
				return fmt.Errorf("QP[%d]: %w", i, err)
			}
			return err
		}
	}
	return nil
}

func (p *pingpong) connectQP(q *uverbs.QP, myPSN uint32, rem dest) error {
	rtr := qp.Attr{State: qp.RTR, PathMTU: p.o.mtu, DestQPN: rem.qpn, RQPSN: rem.psn, MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AH: qp.AH{DLID: rem.lid, SL: uint8(p.o.sl), PortNum: uint8(p.o.ibPort)}}
	if binary.BigEndian.Uint64(rem.gid[8:]) != 0 { // interface id set: route with a GRH
		rtr.AH.IsGlobal = true
		rtr.AH.GRH = qp.GRH{HopLimit: 1, DGID: rem.gid, SGIDIndex: uint8(p.o.gidIndex)}
	}
	if err := q.Modify(&rtr, qp.MaskState|qp.MaskAV|qp.MaskPathMTU|qp.MaskDestQPN|qp.MaskRQPSN|qp.MaskMaxDestRdAtomic|qp.MaskMinRNRTimer); err != nil {
		return fmt.Errorf("failed to modify QP to RTR: %w", err)
	}
	rts := qp.Attr{State: qp.RTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: myPSN, MaxRdAtomic: 1}
	if err := q.Modify(&rts, qp.MaskState|qp.MaskTimeout|qp.MaskRetryCnt|qp.MaskRNRRetry|qp.MaskSQPSN|qp.MaskMaxQPRdAtomic); err != nil {
		return fmt.Errorf("failed to modify QP to RTS: %w", err)
	}
	return nil
}

// postRecv posts up to n receives of the whole buffer, to the QP or the
// SRQ; it returns how many were posted.
func (p *pingpong) postRecv(n int) int {
	for i := 0; i < n; i++ {
		if p.recvQ.PostRecv(p.recvWR) != nil {
			return i
		}
	}
	return n
}

func randomPSN() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) & 0xffffff
}

// yielder passes the busy-poll loop's goroutine through the scheduler
// every few milliseconds. A goroutine not rescheduled for 10 ms has its
// P taken by sysmon at each syscall sysmon sees it in (here the send
// doorbell), however short, even with idle Ps: a futex wake of another
// thread, its parking, sysmon's deep sleep and the wake that ends it;
// in Go code it is preempted by a signal. A Gosched costs one thread
// wake per period. With one P there is no idle P and sysmon takes the P
// from any syscall it sees twice anyway: nothing to save, so off. With
// -e, WaitBlocking makes the same pass.
type yielder struct {
	on    bool
	last  time.Time // monotonic: Since reads one clock
	polls int
}

// yieldPeriod stays well under sysmon's 10 ms (forcePreemptNS), which it
// checks only at its own ticks. (A variable for the benchmark's A/B.)
var yieldPeriod = 5 * time.Millisecond

func newYielder(start time.Time, events bool) yielder {
	return yielder{on: !events && runtime.GOMAXPROCS(0) > 1, last: start}
}

func (y *yielder) check() {
	if y.on && time.Since(y.last) >= yieldPeriod {
		runtime.Gosched()
		y.last = time.Now()
	}
}

// spin is check for a busy poll, reading the clock every 1,024 empty
// polls only.
func (y *yielder) spin() {
	if y.polls++; y.polls&1023 == 0 {
		y.check()
	}
}

// result is what a run measured.
type result struct {
	bytes int64
	elap  time.Duration
	iters int
	bad   []int // pages that failed -c validation
}

func run(o options, stdout io.Writer) (result, error) {
	var res result
	if o.numQP > o.rxDepth {
		return res, fmt.Errorf("rx_depth %d is too small for %d QPs -- must have at least one receive per QP", o.rxDepth, o.numQP)
	}
	p, err := setup(o)
	if err != nil {
		return res, err
	}
	defer p.close()
	routs := p.postRecv(o.rxDepth)
	if routs < o.rxDepth {
		return res, fmt.Errorf("couldn't post receive (%d)", routs)
	}
	if o.events {
		if err := p.cq.RequestNotify(false); err != nil {
			return res, fmt.Errorf("couldn't request CQ notification: %w", err)
		}
	}
	if p.port.LinkLayer != uverbs.LinkEthernet && p.port.LID == 0 {
		return res, errors.New("couldn't get local LID")
	}
	var gid rdma.GID
	if o.gidIndex >= 0 {
		gids, err := p.x.QueryGIDTable()
		if err != nil {
			return res, fmt.Errorf("can't read sgid of index %d: %w", o.gidIndex, err)
		}
		found := false
		for _, g := range gids {
			if g.Port == o.ibPort && g.Index == o.gidIndex {
				gid, found = g.GID, true
			}
		}
		if !found {
			return res, fmt.Errorf("can't read sgid of index %d", o.gidIndex)
		}
	}
	my := make([]dest, o.numQP)
	for i, q := range p.qps {
		my[i] = dest{lid: p.port.LID, qpn: q.Num(), psn: randomPSN(), gid: gid}
		fmt.Fprintf(stdout, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", my[i].lid, my[i].qpn, my[i].psn, my[i].gid.Addr().String())
	}
	wire := 1 // messages each way: rc_pingpong's one, srq_pingpong's MAX_QP
	if o.srq {
		wire = maxQP
	}
	var rem []dest
	if o.serverName != "" {
		rem, err = clientExchange(o.serverName, o.port, my, wire)
	} else {
		rem, err = serverExchange(o.port, my, wire, func(d []dest) error { return p.connect(my, d) })
	}
	if err != nil {
		return res, err
	}
	for _, d := range rem[:o.numQP] {
		fmt.Fprintf(stdout, "  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", d.lid, d.qpn, d.psn, d.gid.Addr().String())
	}
	if o.serverName != "" {
		if err := p.connect(my, rem); err != nil {
			return res, err
		}
	}
	for i, q := range p.qps {
		p.pending[i] = recvWRID
		if o.serverName != "" {
			if err := q.PostSend(p.sendWR); err != nil {
				return res, fmt.Errorf("couldn't post send: %w", err)
			}
			p.pending[i] |= sendWRID
		}
	}
	start := time.Now()
	rcnt, scnt := 0, 0
	wc := make([]uverbs.WC, 2) // rc_pingpong's array; srq_pingpong's holds a CQ's worth
	if o.srq {
		wc = make([]uverbs.WC, o.rxDepth+o.numQP)
	}
	var cqs [1]*uverbs.CQ
	y := newYielder(start, o.events)
	for rcnt < o.iters || scnt < o.iters {
		y.check()
		if o.events {
			if _, err := p.ch.WaitBlocking(context.Background(), cqs[:0]); err != nil {
				return res, fmt.Errorf("failed to get cq_event: %w", err)
			}
			if err := p.cq.RequestNotify(false); err != nil {
				return res, fmt.Errorf("couldn't request CQ notification: %w", err)
			}
		}
		var ne int
		for {
			if ne, err = p.cq.Poll(wc); err != nil {
				return res, fmt.Errorf("poll CQ failed: %w", err)
			}
			if o.events || ne > 0 {
				break
			}
			y.spin()
		}
		for i := 0; i < ne; i++ {
			w := &wc[i]
			if w.Status != rdma.WCSuccess {
				return res, fmt.Errorf("failed status %s (%d) for wr_id %d", w.Status, w.Status, w.ID)
			}
			qi, ok := p.qpIndex[w.QPNum]
			if !ok {
				return res, fmt.Errorf("couldn't find QPN %06x", w.QPNum)
			}
			switch w.ID {
			case sendWRID:
				scnt++
			case recvWRID:
				// Refill when no more than one receive per QP is left.
				routs--
				if routs <= o.numQP {
					routs += p.postRecv(o.rxDepth - routs)
					if routs < o.rxDepth {
						return res, fmt.Errorf("couldn't post receive (%d)", routs)
					}
				}
				rcnt++
			default:
				return res, fmt.Errorf("completion for unknown wr_id %d", w.ID)
			}
			p.pending[qi] &^= int(w.ID)
			if scnt < o.iters && p.pending[qi] == 0 {
				if err := p.qps[qi].PostSend(p.sendWR); err != nil {
					return res, fmt.Errorf("couldn't post send: %w", err)
				}
				p.pending[qi] = recvWRID | sendWRID
			}
		}
	}
	res.elap = time.Since(start)
	res.iters = o.iters
	res.bytes = int64(o.size) * int64(o.iters) * 2
	usec := float64(res.elap.Microseconds())
	fmt.Fprintf(stdout, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", res.bytes, usec/1e6, float64(res.bytes)*8/usec)
	fmt.Fprintf(stdout, "%d iters in %.2f seconds = %.2f usec/iter\n", o.iters, usec/1e6, usec/float64(o.iters))
	if o.validate {
		res.bad = checkBuffer(p.buf.Bytes())
		for _, page := range res.bad {
			fmt.Fprintf(stdout, "invalid data in page %d\n", page)
		}
	}
	return res, p.close()
}
