package engine

import "github.com/go-rdma/rdmacm/mad"

// DefaultMaxHalfOpen is Config.MaxHalfOpen's default: Linux's somaxconn
// default, room for a job's all-to-one connect burst, while a flood holds
// about 2.6 MiB per listener (docs/reliability.md).
const DefaultMaxHalfOpen = 4096

// halfOpenState reports whether a passive ID in state s counts in its
// listener's half-open bound: from the REQ (or SIDR_REQ) until
// ESTABLISHED or the end of the attempt.
func halfOpenState(s State) bool {
	switch s {
	case StateREQRcvd, StateMRAREQSent, StateREPSent, StateMRAREPRcvd, StateSIDRREQRcvd:
		return true
	}
	return false
}

// repWaiting reports whether a half-open ID in state s has sent its REP
// and waits for the RTU: the IDs eviction may take.
func repWaiting(s State) bool { return s == StateREPSent || s == StateMRAREPRcvd }

// admit makes room in l's half-open bound for one more request. When the
// bound is reached it evicts the listener's oldest ID waiting for an RTU;
// when every half-open ID still waits for the consumer it refuses, and
// the caller drops the request.
func (e *Engine) admit(l *conn) bool {
	li := l.listen
	if e.cfg.MaxHalfOpen < 0 || li.halfOpen < e.cfg.MaxHalfOpen {
		return true
	}
	v := li.repHead
	if v == nil {
		return false
	}
	e.evict(v)
	return true
}

// joinHalfOpen counts the new passive ID c in its listener's bound.
func (e *Engine) joinHalfOpen(c *conn, l *conn) {
	c.halfOpen, c.ho = true, l.listen
	l.listen.halfOpen++
}

// moveHalfOpen follows a half-open ID into state s: it leaves the bound
// when s is not half-open, and joins the listener's RTU queue (oldest
// first) when its REP goes out.
func (e *Engine) moveHalfOpen(c *conn, s State) {
	switch {
	case !halfOpenState(s):
		e.leaveHalfOpen(c)
	case repWaiting(s) && !c.repQueued:
		li := c.ho
		c.repQueued = true
		c.hoPrev, c.hoNext = li.repTail, nil
		if li.repTail != nil {
			li.repTail.hoNext = c
		} else {
			li.repHead = c
		}
		li.repTail = c
	}
}

// leaveHalfOpen takes c out of its listener's bound and RTU queue.
func (e *Engine) leaveHalfOpen(c *conn) {
	if !c.halfOpen {
		return
	}
	li := c.ho
	if c.repQueued {
		if c.hoPrev != nil {
			c.hoPrev.hoNext = c.hoNext
		} else {
			li.repHead = c.hoNext
		}
		if c.hoNext != nil {
			c.hoNext.hoPrev = c.hoPrev
		} else {
			li.repTail = c.hoPrev
		}
		c.hoPrev, c.hoNext, c.repQueued = nil, nil, false
	}
	li.halfOpen--
	c.halfOpen, c.ho = false, nil
}

// evict gives up a half-open ID whose REP is still unanswered, to admit a
// newer request. It ends as if the REP's retries had run out (IDLE,
// REP_ERROR, the QP to ERR), without a TimeWait, which the peer could
// stretch (the REQ sets its length); the peer gets REJ 3 (no resources)
// so that a live one does not take the connection for established.
func (e *Engine) evict(c *conn) {
	e.stats.Evicted++
	from := c.state
	e.resetToIdle(c)
	e.unpend(c)
	e.qpErr(c)
	e.sendREJ(c, from, mad.RejectNoResources, nil, nil)
	e.bareEvent(EventRepError, c)
}

// HalfOpen returns how many half-open IDs the listener holds, and
// false if id is not a listener.
func (e *Engine) HalfOpen(id ID) (int, bool) {
	c := e.conns.get(uint32(id))
	if c == nil || c.listen == nil {
		return 0, false
	}
	return c.listen.halfOpen, true
}
