package rdmacm

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/uverbs"
)

const (
	sendQ = 0
	recvQ = 1
)

// poller waits for completions of a send and a receive CQ that share one
// completion channel: poll, arm, poll again, then wait on the channel (in
// the netpoller, or with ThreadWait in the kernel). One goroutine at a
// time waits on the channel; the others wait for its news and poll again.
type poller struct {
	ch   *uverbs.CompChannel
	cqs  [2]*uverbs.CQ
	spin int
	// blocking: ch is a blocking channel (EndpointOptions.ThreadWait).
	blocking bool
	// posted counts each queue's work requests, after their post
	// succeeded; polled (under mu) their completions polled. So
	// posted-polled never exceeds the work requests still to complete.
	posted [2]atomic.Int64
	polled [2]int64
	// inRead: the channel wait in progress is a read(2) that only a
	// completion ends; readEnd (on mu) tells its end to awaitRead.
	inRead  bool
	readEnd sync.Cond

	mu      sync.Mutex
	q       [2][]uverbs.WC // completions polled and not yet returned, in qarr
	armed   [2]bool
	waiting bool
	news    chan struct{}
	// newsTaken: a goroutine waits on news, so the wait in progress
	// closes it (and makes the next); a wait nobody waited on allocates
	// no channel.
	newsTaken bool
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
	n, err := p.cqs[k].Poll(p.qarr[k][:])
	if err != nil {
		return 0, err
	}
	p.q[k] = p.qarr[k][:n]
	p.polled[k] += int64(n)
	return n, nil
}

// awaitRead returns once no channel wait is a read(2) in progress: Close
// calls it after the QP's move to ERR, whose flushed work requests end
// such a read, and before it destroys the QP and the CQs.
func (p *poller) awaitRead() {
	if !p.blocking {
		return
	}
	p.mu.Lock()
	for p.inRead {
		p.readEnd.Wait()
	}
	p.mu.Unlock()
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
		// A read(2) alone ends only by a completion: one of queue k's
		// work requests still to come, on its CQ armed with nothing in
		// it, or the connection's end, which flushes them.
		p.inRead = p.blocking && ctx.Done() == nil && p.posted[k].Load() > p.polled[k]
		p.mu.Unlock()
		switch {
		case p.inRead:
			p.woke, err = p.ch.WaitBlocking(context.Background(), p.woke)
		case ctx.Done() == nil:
			// A context that never ends (examples/echo's): the wait ends
			// with the connection only, so it takes gone itself, which the
			// channel keeps registered from one wait to the next.
			p.woke, err = p.wait(gone)
		default:
			wctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(gone, cancel)
			p.woke, err = p.wait(wctx)
			stop()
			cancel()
		}
		p.mu.Lock()
		p.waiting = false
		if p.inRead {
			p.inRead = false
			p.readEnd.Broadcast()
		}
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

// wait waits on the channel until an armed CQ reports or ctx ends.
func (p *poller) wait(ctx context.Context) ([]*uverbs.CQ, error) {
	if p.blocking {
		return p.ch.WaitBlocking(ctx, p.woke)
	}
	return p.ch.WaitInto(ctx, p.woke)
}
