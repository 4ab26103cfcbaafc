package rdmacm

// MulticastOptions configure JoinMulticast. A nil *MulticastOptions and
// every zero field mean the default.
type MulticastOptions struct {
	// DatagramOptions size the endpoint and pick the CM, as for
	// DialDatagram (PrivateData and OnRequest are not used).
	DatagramOptions
	// Bind is the local address to join from ("" lets the routing table
	// pick the device; a host without a route to 224.0.0.0/4 must bind).
	Bind string
	// SendOnly joins as a send-only full member
	// (RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER): the endpoint sends to the
	// group but is not attached to it, and on RoCE the host takes no IGMP
	// membership.
	SendOnly bool
}
