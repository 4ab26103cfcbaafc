// Command rdma-mckey is a twin of librdmacm's mckey written on package cm:
// it joins a multicast group on one or more UD IDs and sends datagrams to
// the group (-s) or receives them, with mckey's flags and printed lines,
// so that either side may be mckey itself.
//
//	rdma-mckey -m group [-s] [-b bind_addr] [-c ids] [-C count] [-S size] [-p port_space] [-o] [-backend kernel|user|auto]
//
// -o joins as a send-only full member (RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER:
// no QP attach, and on RoCE no IGMP membership). -backend picks the CM
// (default auto: the kernel's where rdma_ucm is loaded, else our engine).
// The exit status is mckey's return status, 1 for a failure before the
// test starts, 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// grhLen is the room a UD receive leaves for the GRH (struct ibv_grh).
const grhLen = 40

type config struct {
	dst, src   string
	sender     bool
	sendOnly   bool
	ids        int
	count      int
	size       int
	portSpace  rdma.PortSpace
	backend    string
	settle     time.Duration
	resolveFor time.Duration
}

func parseArgs(args []string, out io.Writer) (*config, error) {
	c := &config{settle: 3 * time.Second, resolveFor: 2 * time.Second}
	fs := flag.NewFlagSet("rdma-mckey", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.dst, "m", "", "multicast address")
	fs.BoolVar(&c.sender, "s", false, "sender")
	fs.StringVar(&c.src, "b", "", "bind address")
	fs.IntVar(&c.ids, "c", 1, "connections (IDs, each joining the group)")
	fs.IntVar(&c.count, "C", 10, "message count")
	fs.IntVar(&c.size, "S", 100, "message size")
	ps := fs.String("p", "0x111", "port space: 0x111 for UDP (default), 0x2 for IPOIB")
	fs.BoolVar(&c.sendOnly, "o", false, "join as a send-only full member")
	fs.StringVar(&c.backend, "backend", "auto", "CM backend: kernel, user or auto")
	fs.DurationVar(&c.settle, "settle", c.settle, "pause after the joins (mckey's 3 s for the SM)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.dst == "" {
		return nil, errors.New("-m multicast_address is required")
	}
	v, err := strconv.ParseInt(*ps, 0, 32)
	if err != nil {
		return nil, fmt.Errorf("-p %s: %w", *ps, err)
	}
	c.portSpace = rdma.PortSpace(v)
	if c.ids < 1 {
		return nil, fmt.Errorf("-c %d: at least one connection", c.ids)
	}
	if c.count < 0 || c.size < 0 {
		return nil, errors.New("-C and -S take a count and a size, not negative")
	}
	if c.size == 0 {
		c.count = 0 // create_message: no size, no messages
	}
	return c, nil
}

func main() {
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "rdma-mckey: %v\n", err)
		}
		os.Exit(2)
	}
	if !unix.IsLinux {
		fmt.Fprintf(os.Stderr, "rdma-mckey: %v\n", unix.ErrNotSupported)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runMain(ctx, cfg, os.Stdout))
}

// lookup resolves a name or address as mckey's getaddrinfo does (the first
// address).
func lookup(s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", s)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("getaddrinfo failed (%v) - invalid hostname or IP address", err)
	}
	return addrs[0].Unmap(), nil
}

// runMain is main after the flags: it prints mckey's lines to out and
// returns the exit status.
func runMain(ctx context.Context, cfg *config, out io.Writer) int {
	ch, err := cm.Open(&cm.Options{Backend: cm.Backend(cfg.backend)})
	if err != nil {
		fmt.Fprintf(out, "failed to create event channel: %v\n", err)
		return 1
	}
	t := &test{cfg: cfg, ch: ch, out: out}
	for i := range cfg.ids {
		id, err := ch.CreateID(cfg.portSpace, &cm.IDOptions{QPType: qp.UD})
		if err != nil {
			fmt.Fprintf(out, "mckey: %v\n", err)
			t.destroy()
			ch.Close()
			return 1
		}
		n := &node{index: i, id: id}
		id.Context = n
		t.nodes = append(t.nodes, n)
	}
	ret := t.run(ctx)
	fmt.Fprintln(out, "test complete")
	t.destroy()
	if err := ch.Close(); err != nil {
		fmt.Fprintf(out, "mckey: %v\n", err)
	}
	fmt.Fprintf(out, "return status %d\n", ret)
	return ret
}

type test struct {
	cfg          *config
	ch           *cm.Channel
	out          io.Writer
	nodes        []*node
	connectsLeft int
	dst          netip.Addr
}

// node is one ID and its verbs objects (mckey's cmatest_node).
type node struct {
	index      int
	id         *cm.ID
	mc         *cm.Multicast
	qp         *cm.QP
	pd         *uverbs.PD
	ch         *uverbs.CompChannel
	cq         *uverbs.CQ
	buf        *uverbs.Buffer
	mr         *uverbs.MR
	ah         *uverbs.AH
	remoteQPN  uint32
	remoteQKey uint32
	connected  bool
}

// status is a C-style return status for an error: the negated errno when
// one is inside, else -1.
func status(err error) int {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return -int(errno)
	}
	return -1
}

func (t *test) run(ctx context.Context) int {
	cfg := t.cfg
	if cfg.sender {
		fmt.Fprintln(t.out, "mckey: starting client")
	} else {
		fmt.Fprintln(t.out, "mckey: starting server")
	}
	var src netip.Addr
	if cfg.src != "" {
		a, err := lookup(cfg.src)
		if err != nil {
			fmt.Fprintln(t.out, err)
			return -1
		}
		src = a
	}
	dst, err := lookup(cfg.dst)
	if err != nil {
		fmt.Fprintln(t.out, err)
		return -1
	}
	t.dst = dst
	t.connectsLeft = len(t.nodes)
	fmt.Fprintln(t.out, "mckey: joining")
	ret := 0
	for _, n := range t.nodes {
		var srcAP netip.AddrPort
		if src.IsValid() {
			srcAP = netip.AddrPortFrom(src, 0)
			if err := n.id.Bind(srcAP); err != nil {
				fmt.Fprintf(t.out, "mckey: addr bind failure: %v\n", err)
				t.connectsLeft--
				return status(err)
			}
		}
		if err := n.id.ResolveAddr(ctx, srcAP, netip.AddrPortFrom(dst, 0), cfg.resolveFor); err != nil {
			fmt.Fprintf(t.out, "mckey: resolve addr failure: %v\n", err)
			t.connectsLeft--
			return status(err)
		}
	}
	if ret = t.connectEvents(ctx); ret != 0 {
		return t.leave(ret)
	}
	// Later events (a group error, an address change) are printed, as
	// mckey's cma_thread does.
	evctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.eventLoop(evctx)
	}()
	defer func() { cancel(); <-done }()
	// mckey pauses here for the SM to program the switches.
	select {
	case <-time.After(cfg.settle):
	case <-ctx.Done():
		return t.leave(status(unix.EINTR))
	}
	if cfg.count > 0 {
		if cfg.sender {
			fmt.Fprintln(t.out, "initiating data transfers")
			for _, n := range t.nodes {
				if err := n.postSends(ctx, cfg); err != nil {
					fmt.Fprintf(t.out, "failed to post sends: %v\n", err)
					return t.leave(status(err))
				}
			}
		} else {
			fmt.Fprintln(t.out, "receiving data transfers")
			for _, n := range t.nodes {
				if !n.connected {
					continue
				}
				if err := n.poll(ctx, cfg.count); err != nil {
					fmt.Fprintf(t.out, "mckey: failed polling CQ: %v\n", err)
					return t.leave(status(err))
				}
			}
		}
		fmt.Fprintln(t.out, "data transfers complete")
	}
	return t.leave(ret)
}

// leave leaves the group on every ID, as mckey's run ends.
func (t *test) leave(ret int) int {
	for _, n := range t.nodes {
		if n.mc == nil {
			continue
		}
		if err := n.mc.Leave(); err != nil {
			fmt.Fprintf(t.out, "mckey: failure leaving: %v\n", err)
			ret = status(err)
		}
		n.mc = nil
	}
	return ret
}

// connectEvents handles events until every ID has joined or failed.
func (t *test) connectEvents(ctx context.Context) int {
	for t.connectsLeft > 0 {
		ev, err := t.ch.GetEvent(ctx)
		if err != nil {
			fmt.Fprintf(t.out, "rdma_get_cm_event: %v\n", err)
			return status(err)
		}
		ret := t.handle(ctx, ev)
		ev.Ack()
		if ret != 0 {
			return ret
		}
	}
	return 0
}

func (t *test) handle(ctx context.Context, ev *cm.Event) int {
	n, _ := ev.ID.Context.(*node)
	if n == nil {
		return 0
	}
	switch ev.Type {
	case cm.EventAddrResolved:
		if err := t.addrHandler(ctx, n); err != nil {
			t.connectsLeft--
			return status(err)
		}
	case cm.EventMulticastJoin:
		if err := t.joinHandler(n, ev.UD); err != nil {
			fmt.Fprintln(t.out, "mckey: failure creating address handle")
			t.connectsLeft--
			return -1
		}
	case cm.EventAddrError, cm.EventRouteError, cm.EventMulticastError:
		fmt.Fprintf(t.out, "mckey: event: %s, error: %d\n", ev.Type, ev.Status)
		t.connectsLeft--
		return int(ev.Status)
	}
	return 0
}

func (t *test) addrHandler(ctx context.Context, n *node) error {
	cfg := t.cfg
	if err := n.init(cfg, t.out); err != nil {
		return err
	}
	if !cfg.sender {
		if err := n.postRecvs(cfg); err != nil {
			fmt.Fprintf(t.out, "failed to post receives: %v\n", err)
			return err
		}
	}
	mc, err := n.id.JoinMulticast(ctx, t.dst, cfg.sendOnly, n)
	if err != nil {
		fmt.Fprintf(t.out, "mckey: failure joining: %v\n", err)
		return err
	}
	n.mc = mc
	return nil
}

func (t *test) joinHandler(n *node, p cm.UDParam) error {
	fmt.Fprintf(t.out, "mckey: joined dgid: %s mlid 0x%x sl %d\n", p.AH.GRH.DGID.Addr(), p.AH.DLID, p.AH.SL)
	n.remoteQPN, n.remoteQKey = p.QPNum, p.QKey
	ah, err := n.pd.CreateAH(p.AH)
	if err != nil {
		return err
	}
	n.ah = ah
	n.connected = true
	t.connectsLeft--
	return nil
}

// eventLoop prints the events that come after the joins.
func (t *test) eventLoop(ctx context.Context) {
	for {
		ev, err := t.ch.GetEvent(ctx)
		if err != nil {
			return
		}
		switch ev.Type {
		case cm.EventMulticastError, cm.EventAddrChange:
			fmt.Fprintf(t.out, "mckey: event: %s, status: %d\n", ev.Type, ev.Status)
		}
		ev.Ack()
	}
}

// init is mckey's verify_test_params and init_node: the message fits the
// port's MTU, then a PD, one CQ for both queues, a UD QP and the message
// buffer.
func (n *node) init(cfg *config, out io.Writer) error {
	x, pd, err := n.id.Verbs()
	if err != nil {
		fmt.Fprintf(out, "mckey: unable to allocate PD: %v\n", err)
		return err
	}
	n.pd = pd
	info, err := n.id.Query()
	if err != nil {
		return err
	}
	pa, err := x.QueryPort(int(info.Port))
	if err != nil {
		return err
	}
	if mtu := pa.ActiveMTU.Bytes(); cfg.count > 0 && cfg.size > mtu {
		fmt.Fprintf(out, "mckey: message_size %d is larger than active mtu %d\n", cfg.size, mtu)
		return unix.EINVAL
	}
	cqe := 2
	if cfg.count > 0 {
		cqe = cfg.count * 2
	}
	if n.ch, err = x.CreateCompChannel(); err != nil {
		fmt.Fprintf(out, "mckey: unable to create CQ: %v\n", err)
		return err
	}
	if n.cq, err = x.CreateCQ(cqe, n.ch, 0); err != nil {
		fmt.Fprintf(out, "mckey: unable to create CQ: %v\n", err)
		return err
	}
	wr := uint32(max(cfg.count, 1))
	n.qp, err = n.id.CreateQP(cm.QPInit{
		Cap:    qp.Cap{MaxSendWR: wr, MaxRecvWR: wr, MaxSendSGE: 1, MaxRecvSGE: 1},
		SendCQ: n.cq, RecvCQ: n.cq, PD: pd,
	})
	if err != nil {
		fmt.Fprintf(out, "mckey: unable to create QP: %v\n", err)
		return err
	}
	if cfg.count == 0 {
		return nil
	}
	if n.buf, err = uverbs.AllocBuffer(cfg.size + grhLen); err != nil {
		fmt.Fprintf(out, "failed message allocation: %v\n", err)
		return err
	}
	if n.mr, err = pd.RegMR(n.buf, qp.AccessLocalWrite); err != nil {
		fmt.Fprintf(out, "failed to reg MR: %v\n", err)
		return err
	}
	return nil
}

func (n *node) postRecvs(cfg *config) error {
	if cfg.count == 0 {
		return nil
	}
	wr := []uverbs.RecvWR{{ID: uint64(n.index), SGEs: []uverbs.SGE{n.mr.SGE(0, cfg.size+grhLen)}}}
	for range cfg.count {
		if err := n.qp.Verbs.PostRecv(wr); err != nil {
			return err
		}
	}
	return nil
}

// postSends sends the messages to the group with the join's QPN and qkey,
// the QP number as immediate data (as mckey does). mckey posts them all
// unsignaled and exits; here the last one is signaled and waited for, so
// that leaving and destroying the QP cannot cut the tail of the burst.
func (n *node) postSends(ctx context.Context, cfg *config) error {
	if !n.connected || cfg.count == 0 {
		return nil
	}
	wr := []uverbs.SendWR{{
		ID: uint64(n.index), Opcode: uverbs.OpSendWithImm, Imm: n.qp.Num(),
		SGEs: []uverbs.SGE{n.mr.SGE(0, cfg.size)},
		AH:   n.ah, RemoteQPN: n.remoteQPN, RemoteQKey: n.remoteQKey,
	}}
	for i := range cfg.count {
		if i == cfg.count-1 {
			wr[0].Flags = uverbs.SendSignaled
		}
		if err := n.qp.Verbs.PostSend(wr); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return n.poll(wctx, 1)
}

// poll waits for want completions on the node's CQ.
func (n *node) poll(ctx context.Context, want int) error {
	wcs := make([]uverbs.WC, 8)
	for done := 0; done < want; {
		k, err := n.cq.Poll(wcs)
		if err != nil {
			return err
		}
		for _, wc := range wcs[:k] {
			if wc.Status != rdma.WCSuccess {
				return fmt.Errorf("completion %v (vendor error %#x)", wc.Status, wc.VendorErr)
			}
		}
		done += k
		if k > 0 || done >= want {
			continue
		}
		if err := n.cq.RequestNotify(false); err != nil {
			return err
		}
		if k, err = n.cq.Poll(wcs); err != nil {
			return err
		} else if k > 0 { // completions that raced the arm
			for _, wc := range wcs[:k] {
				if wc.Status != rdma.WCSuccess {
					return fmt.Errorf("completion %v (vendor error %#x)", wc.Status, wc.VendorErr)
				}
			}
			done += k
			continue
		}
		if _, err := n.ch.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// destroy frees every node's objects in mckey's order, the ID last.
func (t *test) destroy() {
	for _, n := range t.nodes {
		if n.ah != nil {
			n.ah.Close()
		}
		if n.qp != nil {
			n.id.DestroyQP()
		}
		if n.cq != nil {
			n.cq.Close()
		}
		if n.ch != nil {
			n.ch.Close()
		}
		if n.mr != nil {
			n.mr.Close()
		}
		if n.buf != nil {
			n.buf.Close()
		}
		n.id.Destroy()
	}
}
