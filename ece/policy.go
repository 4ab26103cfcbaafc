package ece

// A ReplyPolicy computes the ECE a passive side puts in its REP (or
// SIDR_REP) from the ECE the REQ carried and the side's own ECE. A
// policy never hard-wires a vendor.
type ReplyPolicy interface {
	Reply(remote, local ECE) ECE
}

// ReplyFunc adapts a function to ReplyPolicy.
type ReplyFunc func(remote, local ECE) ECE

// Reply calls f.
func (f ReplyFunc) Reply(remote, local ECE) ECE { return f(remote, local) }

// LibrdmacmReply is librdmacm's rdma_accept behaviour: the REP carries the
// vendor ID the REQ carried and the local options, whatever they are.
// With a REQ of vendor 0 the REP has vendor 0 and still the local options
// (a librdmacm quirk, kept for byte-exact interoperation).
var LibrdmacmReply ReplyPolicy = ReplyFunc(func(remote, local ECE) ECE {
	return ECE{VendorID: remote.VendorID, Options: local.Options}
})

// IntersectReply answers with the options both sides support: with the
// same vendor, the AND of the two option sets; with different vendors,
// or when either side offers none, no ECE.
var IntersectReply ReplyPolicy = ReplyFunc(func(remote, local ECE) ECE {
	if remote.IsZero() || local.IsZero() || remote.VendorID != local.VendorID {
		return None
	}
	return ECE{VendorID: local.VendorID, Options: remote.Options & local.Options}
})
