package engine

import (
	"fmt"
	"reflect"
	"time"
)

// hasMsg reports whether an ID in state s has an outstanding, resent MAD.
func hasMsg(s State) bool {
	switch s {
	case StateREQSent, StateMRAREQRcvd, StateREPSent, StateMRAREPRcvd, StateDREQSent, StateSIDRREQSent:
		return true
	}
	return false
}

// CheckInvariants verifies the engine's internal consistency: every
// outstanding MAD has a timer and belongs to a state that resends one,
// TimeWait and nothing else has a bare timer, the lookup tables point at
// live IDs, backlog and half-open counts match, each listener's half-open
// IDs stay within Config.MaxHalfOpen and are all in the remote ID table
// (so no duplicate REQ becomes a second ID), and each listener's queue of
// IDs awaiting an RTU links exactly those. Tests and fuzzers call it after every
// input; it returns the first violation.
func (e *Engine) CheckInvariants() error {
	pending := map[uint32]int{}
	halfOpen := map[*listenInfo]int{}
	queued := map[*listenInfo]int{}
	n := 0
	for _, s := range e.conns.slots {
		c := s.c
		if c == nil {
			continue
		}
		n++
		id := c.localID
		if e.conns.get(id) != c {
			return fmt.Errorf("ID %#x not found under its ID", id)
		}
		if (c.msg != nil) != hasMsg(c.state) {
			return fmt.Errorf("ID %#x in %v: outstanding MAD %v", id, c.state, c.msg != nil)
		}
		wantTimer := c.msg != nil || c.state == StateTimeWait
		if (c.heapIdx >= 0) != wantTimer {
			return fmt.Errorf("ID %#x in %v: timer armed %v", id, c.state, c.heapIdx >= 0)
		}
		if c.heapIdx >= 0 && (int(c.heapIdx) >= len(e.timers) || e.timers[c.heapIdx].c != c) {
			return fmt.Errorf("ID %#x: heap index %d wrong", id, c.heapIdx)
		}
		if c.hasPD != (c.privateData != nil) {
			return fmt.Errorf("ID %#x: private data flag %v, data %v", id, c.hasPD, c.privateData != nil)
		}
		if c.destroyed && c.state != StateTimeWait {
			return fmt.Errorf("destroyed ID %#x kept in %v", id, c.state)
		}
		if (c.listen != nil) != (c.state == StateListen) {
			return fmt.Errorf("ID %#x: listener %v in %v", id, c.listen != nil, c.state)
		}
		if c.inRemoteID && e.remoteIDs.get(c.key()) != c || c.inRemoteQPN && e.remoteQPNs.get(c.qpnKey()) != c {
			return fmt.Errorf("ID %#x: remote table entry lost", id)
		}
		if (c.inRemoteID || c.inRemoteQPN) && (c.state == StateIdle || c.state == StateTimeWait) {
			return fmt.Errorf("ID %#x in %v still in the remote tables", id, c.state)
		}
		if c.sidrIn != (c.state == StateSIDRREQRcvd) {
			return fmt.Errorf("ID %#x in %v: SIDR table %v", id, c.state, c.sidrIn)
		}
		if c.pending {
			pending[c.parent]++
		}
		if c.passive && halfOpenState(c.state) != c.halfOpen {
			return fmt.Errorf("ID %#x in %v: half-open %v", id, c.state, c.halfOpen)
		}
		if c.repQueued != (c.halfOpen && repWaiting(c.state)) {
			return fmt.Errorf("ID %#x in %v: in the RTU queue %v", id, c.state, c.repQueued)
		}
		if c.repQueued {
			queued[c.ho]++
		}
		if c.halfOpen {
			halfOpen[c.ho]++
			// A request is known by its sender's ID until it ends, so a
			// duplicate or stale REQ cannot become a second ID.
			if c.state != StateSIDRREQRcvd && !c.inRemoteID {
				return fmt.Errorf("half-open ID %#x in %v not in the remote ID table", id, c.state)
			}
		}
	}
	if n != e.conns.len() {
		return fmt.Errorf("ID table counts %d IDs, holds %d", e.conns.len(), n)
	}
	if !e.remoteIDs.check(e, func(c *conn) bool { return c.inRemoteID }) {
		return fmt.Errorf("remote ID table: stale entry")
	}
	if !e.remoteQPNs.check(e, func(c *conn) bool { return c.inRemoteQPN }) {
		return fmt.Errorf("remote QPN table: stale entry")
	}
	for k, c := range e.sidrRemote {
		if e.conns.get(c.localID) != c || !c.sidrIn || c.sidrKey != k {
			return fmt.Errorf("SIDR entry %v stale", k)
		}
	}
	for sid, c := range e.listeners {
		if e.conns.get(c.localID) != c || c.listen == nil || c.serviceID != sid {
			return fmt.Errorf("listener for %#x stale", sid)
		}
		if c.listen.pending != pending[c.localID] {
			return fmt.Errorf("listener %#x backlog %d, counted %d", c.localID, c.listen.pending, pending[c.localID])
		}
		if err := e.checkHalfOpen(c, halfOpen[c.listen], queued[c.listen]); err != nil {
			return err
		}
	}
	// Released conns wait for newConn to zero them, holding nothing alive;
	// the newest few are checked (all of them would cost O(capacity)).
	for _, c := range e.free[max(0, len(e.free)-64):] {
		if c.msg != nil || c.listen != nil || c.privateData != nil || c.ho != nil || c.hoPrev != nil || c.hoNext != nil {
			return fmt.Errorf("released ID %#x still holds pointers", c.localID)
		}
	}
	// newEvent fills spare event slots assuming they are zero but for the
	// fields it sets; the next few are checked (all of them would cost
	// O(capacity) per call).
	r := &e.ready
	for i, ev := range r.Events[len(r.Events):min(cap(r.Events), len(r.Events)+64)] {
		ev.Type, ev.ID, ev.Context = 0, 0, 0
		if !reflect.ValueOf(ev).IsZero() {
			return fmt.Errorf("spare event slot %d not zero: %v", len(r.Events)+i, ev.Type)
		}
	}
	if len(e.timers) > 0 && !e.rootMoved && !e.dlTime.IsZero() && !e.dlTime.Equal(e.base.Add(time.Duration(e.timers[0].deadline))) {
		return fmt.Errorf("cached deadline %v, earliest timer at %v", e.dlTime, e.base.Add(time.Duration(e.timers[0].deadline)))
	}
	for i, t := range e.timers {
		if c := t.c; c == nil || int(c.heapIdx) != i || e.conns.get(c.localID) != c {
			return fmt.Errorf("timer %d: stale entry", i)
		}
		if i > 0 && e.timers.less(i, (i-1)/heapArity) {
			return fmt.Errorf("timer heap order broken at %d", i)
		}
	}
	return nil
}

// checkHalfOpen verifies listener l's half-open count (counted: its IDs
// marked half-open) and bound, and that its RTU queue links exactly its
// IDs waiting for an RTU (queued of them).
func (e *Engine) checkHalfOpen(l *conn, counted, queued int) error {
	li := l.listen
	if li.halfOpen != counted {
		return fmt.Errorf("listener %#x half-open %d, counted %d", l.localID, li.halfOpen, counted)
	}
	if e.cfg.MaxHalfOpen >= 0 && li.halfOpen > e.cfg.MaxHalfOpen {
		return fmt.Errorf("listener %#x holds %d half-open IDs, bound %d", l.localID, li.halfOpen, e.cfg.MaxHalfOpen)
	}
	n := 0
	var prev *conn
	for c := li.repHead; c != nil; prev, c = c, c.hoNext {
		if n++; n > li.halfOpen {
			return fmt.Errorf("listener %#x: RTU queue longer than its half-open count", l.localID)
		}
		if c.hoPrev != prev || c.ho != li || !c.repQueued || e.conns.get(c.localID) != c {
			return fmt.Errorf("listener %#x: RTU queue broken at ID %#x", l.localID, c.localID)
		}
	}
	if li.repTail != prev || n != queued {
		return fmt.Errorf("listener %#x: RTU queue of %d (tail ok %v), %d IDs queued", l.localID, n, li.repTail == prev, queued)
	}
	return nil
}
