package rsocket

// PeerConnData is the peer's rs_conn_data (for the guest tests' golden
// capture).
func PeerConnData(c *Conn) []byte { return c.peerData }

// CtrlCounts is the control messages posted and the limit their
// completions moved (rs->ctrl_seqno, rs->ctrl_max_seqno).
func CtrlCounts(c *Conn) (posted, limit uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pollLocked()
	return c.k.ctrlSeqno, c.k.ctrlMaxSeqno
}
