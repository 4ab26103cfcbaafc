package rsocket

// PeerConnData is the peer's rs_conn_data (for the guest tests' golden
// capture).
func PeerConnData(c *Conn) []byte { return c.peerData }
