package rdmacm

import (
	"context"
	"runtime"
	"sync"

	"github.com/go-rdma/rdmacm/uverbs"
)

const (
	sendQ = 0
	recvQ = 1
)

// poller waits for completions of a send and a receive CQ that share one
// completion channel: poll, arm, poll again, then wait on the channel (in
// the netpoller). One goroutine at a time waits on the channel; the others
// wait for its news and poll again.
type poller struct {
	ch   *uverbs.CompChannel
	cqs  [2]*uverbs.CQ
	spin int

	mu      sync.Mutex
	q       [2][]uverbs.WC // completions polled and not yet returned, in qarr
	armed   [2]bool
	waiting bool
	news    chan struct{}
	// newsTaken: a goroutine waits on news, so the wait in progress
	// closes it (and makes the next); a wait nobody waited on allocates
	// no channel.
	newsTaken bool
	buf       [16]uverbs.WC
	qarr      [2][16]uverbs.WC
	woke      []*uverbs.CQ // the channel wait's CQs (only the waiter touches it)
}

// errGone is returned by next when gone ended and nothing is queued.
type goneError struct{}

func (goneError) Error() string { return "gone" }

// pollLocked polls queue k's CQ into its queue; next calls it only when
// that queue is empty, so it refills the queue's array from the start and
// nothing is allocated.
func (p *poller) pollLocked(k int) (int, error) {
	if len(p.q[k]) == 0 {
		p.q[k] = p.qarr[k][:0]
	}
	n, err := p.cqs[k].Poll(p.buf[:])
	if err != nil {
		return 0, err
	}
	p.q[k] = append(p.q[k], p.buf[:n]...)
	return n, nil
}

// next returns the next completion of queue k. When gone is done and the
// CQ is empty it returns goneError{}.
func (p *poller) next(ctx, gone context.Context, k int) (uverbs.WC, error) {
	spins := p.spin
	p.mu.Lock()
	for {
		if len(p.q[k]) > 0 {
			wc := p.q[k][0]
			p.q[k] = p.q[k][1:]
			p.mu.Unlock()
			return wc, nil
		}
		n, err := p.pollLocked(k)
		if err != nil {
			p.mu.Unlock()
			return uverbs.WC{}, err
		}
		if n > 0 {
			continue
		}
		if gone.Err() != nil {
			p.mu.Unlock()
			return uverbs.WC{}, goneError{}
		}
		if err := ctx.Err(); err != nil {
			p.mu.Unlock()
			return uverbs.WC{}, ctxErr(ctx)
		}
		if spins > 0 {
			spins--
			p.mu.Unlock()
			runtime.Gosched()
			p.mu.Lock()
			continue
		}
		if !p.armed[k] {
			if err := p.cqs[k].RequestNotify(false); err != nil {
				p.mu.Unlock()
				return uverbs.WC{}, err
			}
			p.armed[k] = true
			continue // poll again: a completion may have come before the arm
		}
		if p.waiting {
			news := p.news
			p.newsTaken = true
			p.mu.Unlock()
			select {
			case <-news:
			case <-ctx.Done():
			case <-gone.Done():
			}
			p.mu.Lock()
			continue
		}
		p.waiting = true
		p.mu.Unlock()
		if ctx.Done() == nil {
			// A context that never ends (examples/echo's): the wait ends
			// with the connection only, so it takes gone itself, which the
			// channel keeps registered from one wait to the next.
			p.woke, err = p.ch.WaitInto(gone, p.woke)
		} else {
			wctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(gone, cancel)
			p.woke, err = p.ch.WaitInto(wctx, p.woke)
			stop()
			cancel()
		}
		p.mu.Lock()
		p.waiting = false
		for _, cq := range p.woke {
			for i := range p.cqs {
				if p.cqs[i] == cq {
					p.armed[i] = false
				}
			}
		}
		if p.newsTaken {
			close(p.news)
			p.news = make(chan struct{})
			p.newsTaken = false
		}
		if err != nil && gone.Err() == nil && ctx.Err() == nil {
			p.mu.Unlock()
			return uverbs.WC{}, err
		}
	}
}
