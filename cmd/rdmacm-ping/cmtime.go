package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/cmd/internal/term"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// The -cmtime mode times connection setup and teardown the way rdma-core's
// cmtime (librdmacm/examples/cmtime.c, v44 as in Debian 12) does: every
// step is issued for all N connections before waiting for their
// completions, and the table reports the step's wall time, the slowest
// and fastest connection, and wall time per connection.

type cmStep int

const (
	stepCreateID cmStep = iota
	stepBind
	stepResolveAddr
	stepResolveRoute
	stepCreateQP
	stepConnect
	stepDisconnect
	stepDestroy
	numSteps
)

// stepNames are cmtime's step_str.
var stepNames = [numSteps]string{
	"create id", "bind addr", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy",
}

type cmNode struct {
	id    *cm.ID
	times [numSteps][2]time.Time
	err   bool
}

// curStep is the step under way, for profile labels.
var curStep atomic.Int32

type cmTimer struct {
	out   *stdoutBuffer
	nodes []cmNode
	steps [numSteps][2]time.Time
	// usage is the process's context switches, the step thread's, and
	// minor faults at each step's start and end (selfUsage), read with
	// -cmtime-usage only.
	usage     [numSteps][2][3]int64
	usageSeen [numSteps]bool

	mu        sync.Mutex
	completed [numSteps]int
	cond      *sync.Cond
}

func (t *cmTimer) end(n *cmNode, s cmStep, failed bool) {
	t.mu.Lock()
	n.times[s][1] = time.Now()
	if failed {
		n.err = true
	}
	t.completed[s]++
	t.cond.Broadcast()
	t.mu.Unlock()
}

// waitAll waits until started completions of step s arrived (or ctx ends).
func (t *cmTimer) waitAll(ctx context.Context, s cmStep, started int) error {
	stop := context.AfterFunc(ctx, func() {
		t.mu.Lock()
		t.cond.Broadcast()
		t.mu.Unlock()
	})
	defer stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.completed[s] < started {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %d of %d completions: %w", stepNames[s], t.completed[s], started, ctx.Err())
		}
		t.cond.Wait()
	}
	return nil
}

// table prints cmtime's show_perf table.
func (t *cmTimer) table(withBind bool) string {
	var b []byte
	b = append(b, "step              total ms     max ms     min us  us / conn\n"...)
	n := len(t.nodes)
	for s := cmStep(0); s < numSteps; s++ {
		if s == stepBind && !withBind {
			continue
		}
		maxUS, minUS := 0.0, 999999999.0
		for i := range t.nodes {
			st := t.nodes[i].times[s]
			if st[0].IsZero() || st[1].IsZero() {
				continue
			}
			us := float64(st[1].Sub(st[0]).Nanoseconds()) / 1e3
			maxUS = max(maxUS, us)
			minUS = min(minUS, us)
		}
		total := float64(t.steps[s][1].Sub(t.steps[s][0]).Nanoseconds()) / 1e3
		b = fmt.Appendf(b, "%-13s: %11.2f%11.2f%11.2f%11.2f\n", stepNames[s], total/1000, maxUS/1000, minUS, total/float64(n))
	}
	return string(b)
}

func (a *app) cmtimeClient(ctx context.Context) error {
	dst, err := a.dst()
	if err != nil {
		return err
	}
	src, err := a.src()
	if err != nil {
		return err
	}
	n := a.cfg.cmtime
	t := &cmTimer{nodes: make([]cmNode, n), out: newStdoutBuffer(a.cfg.lineBuffered)}
	defer t.out.flush()
	t.cond = sync.NewCond(&t.mu)
	ch := a.ch

	t.out.println("creating id")
	a.stepUsage(t, stepCreateID, 0)
	t.steps[stepCreateID][0] = time.Now()
	for i := range t.nodes {
		node := &t.nodes[i]
		node.times[stepCreateID][0] = time.Now()
		id, err := ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Context: node})
		if err != nil {
			return err
		}
		node.id = id
		node.times[stepCreateID][1] = time.Now()
	}
	t.steps[stepCreateID][1] = time.Now()
	a.stepUsage(t, stepCreateID, 1)

	// The event loop: one goroutine handles every event (cma_handler),
	// started after the create id step as cmtime starts its event thread
	// (run_client, after create_ids in main): its first run, the netpoller
	// wait included, is not inside the step.
	evCtx, stopEvents := context.WithCancel(ctx)
	evDone := make(chan struct{})
	defer func() { stopEvents(); <-evDone }()
	go func() {
		defer close(evDone)
		for {
			if a.cfg.cpuprofile != "" {
				// Attribute the event loop's CPU to the step under way.
				pprof.SetGoroutineLabels(pprof.WithLabels(evCtx, pprof.Labels("step", stepNames[curStep.Load()])))
			}
			ev, err := ch.GetEvent(evCtx)
			if err != nil {
				return
			}
			// The node is the ID's context, as cmtime's id->context.
			if node, _ := ev.ID.Context.(*cmNode); node != nil {
				a.cmtimeEvent(t, node, ev)
			}
			ev.Ack()
		}
	}()
	// The CQs every QP shares (below) close after the IDs, on every path.
	var cqs sharedCQs
	defer func() { a.cmtimeDestroy(t); cqs.close() }()

	if src.Addr().IsValid() {
		t.out.println("binding source address")
		t.steps[stepBind][0] = time.Now()
		for i := range t.nodes {
			node := &t.nodes[i]
			node.times[stepBind][0] = time.Now()
			if err := node.id.Bind(src); err != nil {
				fmt.Fprintf(os.Stderr, "failure bind addr: %v\n", err)
				node.err = true
				continue
			}
			node.times[stepBind][1] = time.Now()
		}
		t.steps[stepBind][1] = time.Now()
	}

	var runStep func(t *cmTimer, s cmStep, label string, issue func(node *cmNode) error) error
	run := func(s cmStep, label string, issue func(node *cmNode) error) (err error) {
		curStep.Store(int32(s))
		pprof.Do(ctx, pprof.Labels("step", stepNames[s]), func(ctx context.Context) { err = runStep(t, s, label, issue) })
		return err
	}
	runStep = func(t *cmTimer, s cmStep, label string, issue func(node *cmNode) error) error {
		t.out.println(label)
		started := 0
		// The CPU figures (-d) read /proc: a few syscalls, outside the
		// timed step, skipped without -d so that syscall counts of the
		// run are the steps' own.
		var cpu0 cpuTicks
		cpuOK := false
		if a.cfg.debug {
			cpu0, cpuOK = readCPUTicks()
		}
		a.stepUsage(t, s, 0)
		t.steps[s][0] = time.Now()
		for i := range t.nodes {
			node := &t.nodes[i]
			if node.err {
				continue
			}
			node.times[s][0] = time.Now()
			if err := issue(node); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", stepNames[s], err)
				node.err = true
				continue
			}
			started++
		}
		wctx, cancel := a.step(ctx)
		defer cancel()
		err := t.waitAll(wctx, s, started)
		t.steps[s][1] = time.Now()
		a.stepUsage(t, s, 1)
		if !cpuOK {
			return err
		}
		if cpu1, ok := readCPUTicks(); ok {
			d := cpu1.sub(cpu0)
			const tick = 10 // ms per USER_HZ tick
			a.dbg("%s: machine CPU %d ms user, %d ms system, %d ms irq/softirq, %d ms idle (this process %d ms user, %d ms system, %d reads, %d writes, %d context switches), over %v",
				stepNames[s], d.user*tick, d.system*tick, d.softirq*tick, d.idle*tick, d.selfUser*tick, d.selfSystem*tick, d.reads, d.writes, d.switches, t.steps[s][1].Sub(t.steps[s][0]).Round(time.Millisecond))
		}
		return err
	}
	timeout := 2 * time.Second
	if err := run(stepResolveAddr, "resolving address", func(node *cmNode) error {
		return node.id.ResolveAddr(ctx, src, dst, timeout)
	}); err != nil {
		return err
	}
	if err := run(stepResolveRoute, "resolving route", func(node *cmNode) error {
		return node.id.ResolveRoute(ctx, timeout)
	}); err != nil {
		return err
	}

	t.out.println("creating qp")
	curStep.Store(int32(stepCreateQP))
	// cmtime passes one static ibv_qp_init_attr to every rdma_create_qp,
	// and rdma_create_qp copies the attributes it completed back into it
	// (librdmacm cma.c, rdma_create_qp: memcpy(qp_init_attr, &attr_ex)),
	// the CQs it made included: the first call makes two completion
	// channels and two CQs (ucma_create_cqs), every later QP uses that
	// first ID's CQs. Their destroy_cq then fails with EBUSY in cmtime's
	// disconnect step (rdma_destroy_qp on the first ID) and they live
	// until exit. Here the first QP's turn makes the same channels and
	// CQs, on the ID's device, and every QP uses them; they close after
	// the destroy step: a DESTROY_CQ can wait in rxe (about 20 ms in the
	// disconnect step) and, between disconnect and destroy, woke Go's
	// sysmon into the destroy step (docs/benchmarks.md, "Connection
	// lifecycle").
	var shared cm.QPInit
	a.stepUsage(t, stepCreateQP, 0)
	t.steps[stepCreateQP][0] = time.Now()
	for i := range t.nodes {
		node := &t.nodes[i]
		if node.err {
			continue
		}
		node.times[stepCreateQP][0] = time.Now()
		init := shared
		init.Cap = qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
		if !a.cfg.cmtimeOwnCQs && shared.SendCQ == nil {
			if err := cqs.create(node.id, init.Cap); err != nil {
				fmt.Fprintf(os.Stderr, "failure creating qp: %v\n", err)
				node.err = true
				continue
			}
			shared.SendCQ, shared.RecvCQ = cqs.send, cqs.recv
			init.SendCQ, init.RecvCQ = cqs.send, cqs.recv
		}
		if _, err := node.id.CreateQP(init); err != nil {
			fmt.Fprintf(os.Stderr, "failure creating qp: %v\n", err)
			node.err = true
			continue
		}
		node.times[stepCreateQP][1] = time.Now()
	}
	t.steps[stepCreateQP][1] = time.Now()
	a.stepUsage(t, stepCreateQP, 1)

	// cmtime's conn_param: one read each way, retry count 2, RNR retry
	// count 0 (cmtime leaves it zero; a zero field here would mean 7).
	param := &cm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 2, RNRRetryCount: cm.RetryNone}
	if err := run(stepConnect, "connecting", func(node *cmNode) error {
		return node.id.Connect(ctx, param)
	}); err != nil {
		return err
	}
	if err := run(stepDisconnect, "disconnecting", func(node *cmNode) error {
		err := node.id.Disconnect(ctx)
		node.id.DestroyQP() // the shared CQs stay (cmtime's destroy_cq: EBUSY)
		return err
	}); err != nil {
		return err
	}
	stopEvents()
	<-evDone
	a.cmtimeDestroy(t)
	cqs.close()
	t.out.print(t.table(src.Addr().IsValid()))
	failed := 0
	for i := range t.nodes {
		if t.nodes[i].err {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d connections failed", failed, n)
	}
	return nil
}

// stdoutBuffer buffers the client's stdout as C's stdio does for cmtime:
// line by line on a terminal, otherwise in full until exit. cmtime's
// printf("creating qp\n") and the like make no syscall when its output
// goes to a pipe or file, as in the benchmarks; a write per step here did,
// just before the step's clock started (in the guests, into the test
// agent's pipe: a call that can outlive sysmon's 20 µs tick, which then
// hands the P to another thread, runtime/proc.go retake). -line-buffered
// writes each line, for tools that split a trace at the step lines.
type stdoutBuffer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	line bool
}

// stdoutIsTerminal is looked up once at start-up, as glibc's stdio does
// (isatty).
var stdoutIsTerminal = term.IsTerminal(1) // stdout; os.Stdout.Fd() could make it blocking

func newStdoutBuffer(lineBuffered bool) *stdoutBuffer {
	if stdoutIsTerminal {
		lineBuffered = true
	}
	return &stdoutBuffer{w: bufio.NewWriterSize(os.Stdout, 64<<10), line: lineBuffered}
}

func (b *stdoutBuffer) print(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.w.WriteString(s)
	if b.line {
		b.w.Flush()
	}
}

func (b *stdoutBuffer) println(s string) { b.print(s + "\n") }

func (b *stdoutBuffer) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.w.Flush()
}

// cmtimeDestroy destroys the IDs once (cleanup_nodes).
func (a *app) cmtimeDestroy(t *cmTimer) {
	if !t.steps[stepDestroy][0].IsZero() {
		return
	}
	t.out.println("destroying id")
	a.stepUsage(t, stepDestroy, 0)
	t.steps[stepDestroy][0] = time.Now()
	for i := range t.nodes {
		node := &t.nodes[i]
		node.times[stepDestroy][0] = time.Now()
		if node.id != nil {
			node.id.Destroy()
		}
		node.times[stepDestroy][1] = time.Now()
	}
	t.steps[stepDestroy][1] = time.Now()
	a.stepUsage(t, stepDestroy, 1)
	a.printUsage(t)
}

// stepUsage records the process's context switches and minor faults at
// the start (end 0) or end (1) of step s with -cmtime-usage: where Go's
// sysmon wakes (a switch each) or fresh memory is touched.
// printUsage prints them after the last step: a write to stderr between
// steps goes through the scheduler's syscall path, and when it is retaken
// it restarts sysmon's 20 µs polling in the next step (docs/benchmarks.md,
// create id). -d is not needed (it traces the CM, which slows the
// steps).
func (a *app) stepUsage(t *cmTimer, s cmStep, end int) {
	if !a.cfg.cmtimeUsage {
		return
	}
	sw, tsw, flt, ok := selfUsage()
	if !ok {
		return
	}
	t.usage[s][end] = [3]int64{sw, tsw, flt}
	t.usageSeen[s] = true
}

// processStart is about when the runtime started: -cmtime-usage gives
// each step's edges from it, to set beside the times of sysmon's restarts
// that a `sysmon_goroot.py trace` build prints (bench/README.md).
var processStart = time.Now()

func (a *app) printUsage(t *cmTimer) {
	if !a.cfg.cmtimeUsage {
		return
	}
	var b []byte
	for s := cmStep(0); s < numSteps; s++ {
		if !t.usageSeen[s] {
			continue
		}
		u := t.usage[s]
		b = fmt.Appendf(b, "usage: %s: %d context switches (%d of the step's thread), %d minor faults (this process), from %d to %d us after start\n", stepNames[s], u[1][0]-u[0][0], u[1][1]-u[0][1], u[1][2]-u[0][2],
			t.steps[s][0].Sub(processStart).Microseconds(), t.steps[s][1].Sub(processStart).Microseconds())
	}
	os.Stderr.Write(b)
}

// cmtimeEvent is cmtime's cma_handler for the client's IDs.
func (a *app) cmtimeEvent(t *cmTimer, node *cmNode, ev *cm.Event) {
	switch ev.Type {
	case cm.EventAddrResolved:
		t.end(node, stepResolveAddr, false)
	case cm.EventRouteResolved:
		t.end(node, stepResolveRoute, false)
	case cm.EventEstablished:
		t.end(node, stepConnect, false)
	case cm.EventAddrError:
		t.out.print(fmt.Sprintf("RDMA_CM_EVENT_ADDR_ERROR, error: %d\n", ev.Status))
		t.end(node, stepResolveAddr, true)
	case cm.EventRouteError:
		t.out.print(fmt.Sprintf("RDMA_CM_EVENT_ROUTE_ERROR, error: %d\n", ev.Status))
		t.end(node, stepResolveRoute, true)
	case cm.EventConnectError, cm.EventUnreachable, cm.EventRejected:
		t.out.print(fmt.Sprintf("event: %v, error: %d\n", ev.Type, ev.Status))
		t.end(node, stepConnect, true)
	case cm.EventDisconnected:
		t.end(node, stepDisconnect, false)
	}
}

// cmtimeServer is cmtime's server: accept each request with a library
// QP, and on the peer's disconnect answer it and destroy the ID. It runs
// until interrupted.
func (a *app) cmtimeServer(ctx context.Context) error {
	addr, err := a.bindAddr()
	if err != nil {
		return err
	}
	l, err := a.ch.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		return err
	}
	defer l.Destroy()
	if err := l.Bind(addr); err != nil {
		return err
	}
	if err := l.Listen(0); err != nil {
		return err
	}
	fmt.Printf("listening on %v\n", netip.AddrPortFrom(addr.Addr(), addr.Port()))
	// Requests and disconnects are handled off the event loop, as cmtime's
	// req_handler and disc_handler threads do.
	reqs := make(chan *cm.ID, 1024)
	discs := make(chan *cm.ID, 1024)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for id := range reqs {
			if _, err := id.CreateQP(cm.QPInit{Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
				fmt.Fprintf(os.Stderr, "failure creating qp: %v\n", err)
				id.Reject(nil)
				id.Destroy()
				continue
			}
			if err := id.Accept(ctx, nil); err != nil {
				fmt.Fprintf(os.Stderr, "failure accepting: %v\n", err)
				id.Reject(nil)
				id.Destroy()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for id := range discs {
			id.Disconnect(ctx)
			id.DestroyQP()
			id.Destroy()
		}
	}()
	defer func() { close(reqs); close(discs); wg.Wait() }()
	served := 0
	for {
		ev, err := a.ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, cm.ErrClosed) {
				a.dbg("served %d connections", served)
				return nil
			}
			return err
		}
		switch ev.Type {
		case cm.EventConnectRequest:
			served++
			reqs <- ev.ID
		case cm.EventDisconnected, cm.EventUnreachable, cm.EventRejected:
			// A request whose REP was never answered, or that was
			// rejected, is freed as a disconnected one is.
			if ev.ID != l {
				discs <- ev.ID
			}
		}
		ev.Ack()
	}
}

// sharedCQs are the completion channels and CQs every cmtime QP uses,
// made as librdmacm's ucma_create_cqs makes them for the first QP: the
// receive side first, each CQ as deep as its queue, with its own channel.
type sharedCQs struct {
	send, recv     *uverbs.CQ
	sendCh, recvCh *uverbs.CompChannel
}

func (c *sharedCQs) create(id *cm.ID, qc qp.Cap) (err error) {
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	vctx, _, err := id.Verbs()
	if err != nil {
		return err
	}
	if c.recvCh, err = vctx.CreateCompChannel(); err != nil {
		return err
	}
	if c.recv, err = vctx.CreateCQ(int(qc.MaxRecvWR), c.recvCh, 0); err != nil {
		return err
	}
	if c.sendCh, err = vctx.CreateCompChannel(); err != nil {
		return err
	}
	c.send, err = vctx.CreateCQ(int(qc.MaxSendWR), c.sendCh, 0)
	return err
}

// close closes what create made, once; the QPs that used them are gone.
func (c *sharedCQs) close() {
	if c.send != nil {
		c.send.Close()
	}
	if c.sendCh != nil {
		c.sendCh.Close()
	}
	if c.recv != nil {
		c.recv.Close()
	}
	if c.recvCh != nil {
		c.recvCh.Close()
	}
	*c = sharedCQs{}
}
