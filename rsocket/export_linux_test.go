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

// PeerIOMapEntries is the size of the peer's iomap table, from its
// connection data.
func PeerIOMapEntries(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.k.remoteIOMap.Length)
}
