//go:build linux

package cm

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// gapMeter is a goroutine that wakes every millisecond and records the
// longest time between two of its wake-ups: with GOMAXPROCS=1 that is the
// longest time the other goroutines kept the one P from it.
type gapMeter struct {
	mu       sync.Mutex
	last     time.Time
	max      time.Duration // since reset
	cmdStart time.Time     // of the command running, zero if none
	cmdGap   time.Duration // its largest gap so far
	stop     chan struct{}
	done     chan struct{}
	noise    time.Duration
	worst    cmdGap // of the attempt: the command with the largest gap
	failed   []cmdGap
}

// cmdGap is one command's length and the ticker's largest gap during it.
type cmdGap struct {
	name     string
	sequence int
	took     time.Duration
	gap      time.Duration
}

func startGapMeter(t *testing.T) *gapMeter {
	g := &gapMeter{last: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-g.stop:
				return
			case <-tk.C:
			}
			now := time.Now()
			g.mu.Lock()
			g.max = max(g.max, now.Sub(g.last))
			if !g.cmdStart.IsZero() {
				g.cmdGap = max(g.cmdGap, now.Sub(later(g.last, g.cmdStart)))
			}
			g.last = now
			g.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(g.stop); <-g.done })
	return g
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// reset starts a new measurement now.
func (g *gapMeter) reset() {
	g.mu.Lock()
	g.last, g.max, g.worst, g.failed = time.Now(), 0, cmdGap{}, nil
	g.mu.Unlock()
}

// gap is the longest gap since reset, counting the one still open.
func (g *gapMeter) gap() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.max, time.Since(g.last))
}

// bound is the largest gap a command of length took may leave: half its
// length, or the guest's noise for commands too short to tell. A command
// that holds the P (a raw syscall) leaves a gap as long as itself.
func (g *gapMeter) bound(took time.Duration) time.Duration { return max(g.noise, took/2) }

// cmd runs one command and records its length and the ticker's largest
// gap while it ran.
func (g *gapMeter) cmd(name string, i int, f func() error) error {
	start := time.Now()
	g.mu.Lock()
	g.cmdStart, g.cmdGap = start, 0
	g.mu.Unlock()
	err := f()
	end := time.Now()
	g.mu.Lock()
	c := cmdGap{name: name, sequence: i, took: end.Sub(start), gap: max(g.cmdGap, end.Sub(later(g.last, start)))}
	g.cmdStart = time.Time{}
	if c.gap > g.worst.gap {
		g.worst = c
	}
	if c.gap > g.bound(c.took) {
		g.failed = append(g.failed, c)
	}
	g.mu.Unlock()
	return err
}

// phase runs f, whose commands go through g.cmd, with the meter reset,
// up to three times: it fails the test when, every time, the ticker's
// gap during some command exceeded the bound. A command that holds the P
// does so every time; a loaded host that stalls the whole guest rarely
// does twice in the same place.
func (g *gapMeter) phase(t *testing.T, name string, f func() error) {
	t.Helper()
	const attempts = 3
	for a := 1; a <= attempts; a++ {
		runtime.GC() // no collection left over from before
		g.reset()
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		took, total := time.Since(start), g.gap()
		g.mu.Lock()
		w, failed := g.worst, g.failed
		g.mu.Unlock()
		t.Logf("NOSTARVE %-28s total %-10v ticker gap %-10v; worst command: %s #%d took %v, gap %v (bound %v)",
			name, took.Round(time.Microsecond), total.Round(time.Microsecond),
			w.name, w.sequence, w.took.Round(time.Microsecond), w.gap.Round(time.Microsecond), g.bound(w.took).Round(time.Microsecond))
		if len(failed) == 0 {
			return
		}
		for _, c := range failed {
			msg := fmt.Sprintf("%s, attempt %d of %d: during %s #%d (%v) the 1 ms ticker went %v without running (bound %v)",
				name, a, attempts, c.name, c.sequence, c.took, c.gap, g.bound(c.took))
			if a < attempts {
				t.Log(msg)
			} else {
				t.Error(msg + ": the command holds the P")
			}
		}
	}
}

// TestGuestNoStarve holds that no verbs or CM command keeps the Go
// scheduler from other goroutines while the kernel works: with
// GOMAXPROCS=1, a goroutine ticking every millisecond keeps running
// during a 256 MiB REG_MR and its DEREG, 100 create/modify/destroy QP
// cycles and 100 CM connect/disconnect cycles to guest b, on whichever
// backend BackendAuto picks (the kernel CM, or the engine under
// vmexec -nocm-a). The ticker's largest gap during each command must stay
// below half the command's length, or below the guest's idle noise for
// shorter commands (see gapMeter.phase for the retries).
func TestGuestNoStarve(t *testing.T) {
	guest.Require(t)
	ctx := guestCtx(t, 10*time.Minute)
	const cycles = 100
	peer, err := netip.ParseAddr(guest.Peer().Addr)
	if err != nil {
		t.Fatal(err)
	}
	dst := netip.AddrPortFrom(peer, endurancePort+1)
	startEnduranceServer(t, ctx, dst, 3*cycles) // enough for every attempt; stopped at cleanup

	x, err := uverbs.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	pd, err := x.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pd.Close() })
	cq, err := x.CreateCQ(16, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cq.Close() })
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	t.Logf("backend %q, device %s", ch.Backend(), x.Name())

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	g := startGapMeter(t)
	time.Sleep(20 * time.Millisecond)
	g.reset()
	time.Sleep(300 * time.Millisecond)
	idle := g.gap()
	g.noise = max(50*time.Millisecond, 3*idle)
	t.Logf("NOSTARVE idle ticker gap %v over 300ms; noise bound %v", idle.Round(time.Microsecond), g.noise)

	g.phase(t, "REG_MR+DEREG_MR 256 MiB", func() error {
		// Fresh pages every time: REG_MR faults them in and pins them.
		big, err := uverbs.AllocBuffer(256 << 20)
		if err != nil {
			return err
		}
		defer big.Close()
		var mr *uverbs.MR
		if err := g.cmd("REG_MR", 0, func() (err error) { mr, err = pd.RegMR(big, qp.AccessLocalWrite); return err }); err != nil {
			return err
		}
		return g.cmd("DEREG_MR", 0, mr.Close)
	})

	g.phase(t, fmt.Sprintf("%d QP create/modify/destroy", cycles), func() error {
		for i := range cycles {
			var q *uverbs.QP
			if err := g.cmd("CREATE_QP", i, func() (err error) {
				q, err = pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq,
					Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
				return err
			}); err != nil {
				return err
			}
			err := g.cmd("MODIFY_QP INIT", i, func() error {
				return q.Modify(&qp.Attr{State: qp.Init, Port: 1}, qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskAccessFlags)
			})
			if err == nil {
				err = g.cmd("MODIFY_QP ERR", i, func() error { return q.Modify(&qp.Attr{State: qp.Err}, qp.MaskState) })
			}
			if cerr := g.cmd("DESTROY_QP", i, q.Close); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		return nil
	})

	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	regs := map[*uverbs.PD]*uverbs.MR{} // one per PD the IDs use, normally one
	t.Cleanup(func() {
		for _, m := range regs {
			m.Close()
		}
	})
	served := 0 // the server checks the message of its k-th connection
	cycle := func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var id *ID
		if err := g.cmd("CreateID", i, func() (err error) {
			id, err = ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
			return err
		}); err != nil {
			return err
		}
		defer id.Destroy() // on failure; the second Destroy is a no-op
		if err := g.cmd("ResolveAddr", i, func() error { return id.ResolveAddr(cctx, netip.AddrPort{}, dst, 0) }); err != nil {
			return err
		}
		if err := g.cmd("ResolveRoute", i, func() error { return id.ResolveRoute(cctx, 0) }); err != nil {
			return err
		}
		var q *QP
		if err := g.cmd("CreateQP", i, func() (err error) { q, err = id.CreateQP(enduranceCaps); return err }); err != nil {
			return err
		}
		_, idPD, err := id.Verbs()
		if err != nil {
			return err
		}
		mr := regs[idPD]
		if mr == nil {
			if mr, err = idPD.RegMR(buf, 0); err != nil {
				return err
			}
			regs[idPD] = mr
		}
		copy(buf.Bytes(), enduranceMessage(served))
		if err := g.cmd("Connect", i, func() error { return id.Connect(cctx, nil) }); err != nil {
			return err
		}
		served++
		if err := g.cmd("SEND", i, func() error {
			if err := q.Verbs.PostSend([]uverbs.SendWR{{ID: uint64(i), Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled,
				SGEs: []uverbs.SGE{mr.SGE(0, enduranceMsgLen)}}}); err != nil {
				return err
			}
			wc, err := waitCompletion(cctx, q.SendCQ, q.SendChannel)
			if err == nil && wc.Status != rdma.WCSuccess {
				err = fmt.Errorf("send completion %+v (%v)", wc, wc.Status)
			}
			return err
		}); err != nil {
			return err
		}
		if err := g.cmd("Disconnect", i, func() error { return id.Disconnect(cctx) }); err != nil {
			return err
		}
		return g.cmd("Destroy", i, id.Destroy)
	}
	g.phase(t, fmt.Sprintf("%d CM connect/disconnect", cycles), func() error {
		for i := range cycles {
			if err := cycle(i); err != nil {
				return fmt.Errorf("cycle %d: %w", i, err)
			}
		}
		return nil
	})
}
