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
	mu   sync.Mutex
	last time.Time
	max  time.Duration
	stop chan struct{}
	done chan struct{}
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
			g.last = now
			g.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(g.stop); <-g.done })
	return g
}

// reset starts a new measurement now.
func (g *gapMeter) reset() {
	g.mu.Lock()
	g.last, g.max = time.Now(), 0
	g.mu.Unlock()
}

// gap is the longest gap since reset, counting the one still open.
func (g *gapMeter) gap() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.max, time.Since(g.last))
}

// phase runs f with the meter reset; f reports its longest single command
// through longest. The ticker's largest gap must stay below a quarter of
// that command's length, or below noise for short commands: a command
// issued as a raw syscall holds the P for its whole length.
func (g *gapMeter) phase(t *testing.T, name string, noise time.Duration, f func(longest *time.Duration)) {
	t.Helper()
	var longest time.Duration
	runtime.GC() // no collection left over from the phase before
	g.reset()
	start := time.Now()
	f(&longest)
	took := time.Since(start)
	gap := g.gap()
	bound := max(noise, longest/4)
	t.Logf("NOSTARVE %-28s total %-10v longest command %-10v ticker gap %-10v (bound %v)",
		name, took.Round(time.Microsecond), longest.Round(time.Microsecond), gap.Round(time.Microsecond), bound.Round(time.Microsecond))
	if gap > bound {
		t.Errorf("%s: the 1 ms ticker went %v without running (longest command %v, bound %v): a command holds the P", name, gap, longest, bound)
	}
}

// timed runs f and raises *longest to its length.
func timed(longest *time.Duration, f func() error) error {
	start := time.Now()
	err := f()
	*longest = max(*longest, time.Since(start))
	return err
}

// TestGuestNoStarve holds that no verbs or CM command keeps the Go
// scheduler from other goroutines while the kernel works: with
// GOMAXPROCS=1, a goroutine ticking every millisecond keeps running
// during a 256 MiB REG_MR and its DEREG, 100 create/modify/destroy QP
// cycles and 100 CM connect/disconnect cycles to guest b, on whichever
// backend BackendAuto picks (the kernel CM, or the engine under
// vmexec -nocm-a).
func TestGuestNoStarve(t *testing.T) {
	guest.Require(t)
	ctx := guestCtx(t, 10*time.Minute)
	const cycles = 100
	peer, err := netip.ParseAddr(guest.Peer().Addr)
	if err != nil {
		t.Fatal(err)
	}
	dst := netip.AddrPortFrom(peer, endurancePort+1)
	srv := startEnduranceServer(t, ctx, dst, cycles)

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
	noise := max(50*time.Millisecond, 3*idle)
	t.Logf("NOSTARVE idle ticker gap %v over 300ms; noise bound %v", idle.Round(time.Microsecond), noise)

	big, err := uverbs.AllocBuffer(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { big.Close() })
	var mr *uverbs.MR
	g.phase(t, "REG_MR 256 MiB", noise, func(longest *time.Duration) {
		err = timed(longest, func() (err error) { mr, err = pd.RegMR(big, qp.AccessLocalWrite); return err })
	})
	if err != nil {
		t.Fatalf("REG_MR of 256 MiB: %v", err)
	}
	g.phase(t, "DEREG_MR 256 MiB", noise, func(longest *time.Duration) {
		err = timed(longest, mr.Close)
	})
	if err != nil {
		t.Fatalf("DEREG_MR: %v", err)
	}

	g.phase(t, fmt.Sprintf("%d QP create/modify/destroy", cycles), noise, func(longest *time.Duration) {
		for i := 0; i < cycles && err == nil; i++ {
			var q *uverbs.QP
			err = timed(longest, func() (err error) {
				q, err = pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq,
					Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
				return err
			})
			if err != nil {
				break
			}
			err = timed(longest, func() error {
				return q.Modify(&qp.Attr{State: qp.Init, Port: 1}, qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskAccessFlags)
			})
			if err == nil {
				err = timed(longest, func() error { return q.Modify(&qp.Attr{State: qp.Err}, qp.MaskState) })
			}
			if cerr := timed(longest, q.Close); err == nil {
				err = cerr
			}
		}
	})
	if err != nil {
		t.Fatalf("QP cycles: %v", err)
	}

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
	cycle := func(i int, longest *time.Duration) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var id *ID
		if err := timed(longest, func() (err error) {
			id, err = ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
			return err
		}); err != nil {
			return err
		}
		defer id.Destroy() // on failure; the second Destroy is a no-op
		if err := timed(longest, func() error { return id.ResolveAddr(cctx, netip.AddrPort{}, dst, 0) }); err != nil {
			return err
		}
		if err := timed(longest, func() error { return id.ResolveRoute(cctx, 0) }); err != nil {
			return err
		}
		var q *QP
		if err := timed(longest, func() (err error) { q, err = id.CreateQP(enduranceCaps); return err }); err != nil {
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
		copy(buf.Bytes(), enduranceMessage(i))
		if err := timed(longest, func() error { return id.Connect(cctx, nil) }); err != nil {
			return err
		}
		if err := q.Verbs.PostSend([]uverbs.SendWR{{ID: uint64(i), Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled,
			SGEs: []uverbs.SGE{mr.SGE(0, enduranceMsgLen)}}}); err != nil {
			return err
		}
		wc, err := waitCompletion(cctx, q.SendCQ, q.SendChannel)
		if err != nil {
			return err
		}
		if wc.Status != uverbs.WCSuccess {
			return fmt.Errorf("send completion %+v (%v)", wc, wc.Status)
		}
		if err := timed(longest, func() error { return id.Disconnect(cctx) }); err != nil {
			return err
		}
		return timed(longest, id.Destroy)
	}
	g.phase(t, fmt.Sprintf("%d CM connect/disconnect", cycles), noise, func(longest *time.Duration) {
		for i := 0; i < cycles && err == nil; i++ {
			if err = cycle(i, longest); err != nil {
				err = fmt.Errorf("cycle %d: %w", i, err)
			}
		}
	})
	if err != nil {
		t.Fatalf("CM cycles: %v", err)
	}
	if _, err := srv.Wait(ctx); err != nil {
		t.Fatalf("server in guest b: %v", err)
	}
}
