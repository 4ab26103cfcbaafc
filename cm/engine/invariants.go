package engine

import "fmt"

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
// live IDs, backlog counts match. Tests and fuzzers call it after every
// input; it returns the first violation.
func (e *Engine) CheckInvariants() error {
	pending := map[uint32]int{}
	n := 0
	for _, c := range e.conns.slots {
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
		if c.heapIdx >= 0 && (int(c.heapIdx) >= len(e.timers) || e.timers[c.heapIdx] != c) {
			return fmt.Errorf("ID %#x: heap index %d wrong", id, c.heapIdx)
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
	}
	if n != e.conns.len() {
		return fmt.Errorf("ID table counts %d IDs, holds %d", e.conns.len(), n)
	}
	if !e.remoteIDs.check(e, func(c *conn) (bool, bool) { return c.inRemoteID, c.remoteIDSlow }) {
		return fmt.Errorf("remote ID table: stale entry")
	}
	if !e.remoteQPNs.check(e, func(c *conn) (bool, bool) { return c.inRemoteQPN, c.remoteQPNSlow }) {
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
	}
	for i, c := range e.timers {
		if int(c.heapIdx) != i || e.conns.get(c.localID) != c {
			return fmt.Errorf("timer %d: stale entry", i)
		}
		if i > 0 && e.timers.less(i, (i-1)/2) {
			return fmt.Errorf("timer heap order broken at %d", i)
		}
	}
	return nil
}
