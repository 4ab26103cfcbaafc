package roce

import "errors"

// Errors returned by Decode, Parse, Packet methods and the builders. They
// are wrapped with detail; match them with errors.Is.
var (
	// ErrTruncated: the frame ends before a header or a length field says.
	ErrTruncated = errors.New("roce: truncated packet")
	// ErrNotIP: the Ethernet type is neither IPv4 nor IPv6 (e.g. ARP).
	ErrNotIP = errors.New("roce: not an IPv4 or IPv6 packet")
	// ErrNotRoCEv2: an IP packet that is not UDP to port 4791.
	ErrNotRoCEv2 = errors.New("roce: not UDP to port 4791")
	// ErrMalformed: header fields contradict each other (bad IHL, UDP
	// length, pad count, a fragment, ...).
	ErrMalformed = errors.New("roce: malformed packet")
	// ErrBadICRC: the packet's ICRC differs from the computed one.
	ErrBadICRC = errors.New("roce: bad ICRC")
	// ErrNotGSI: a RoCEv2 packet that is not a MAD for the GSI (QP 1).
	ErrNotGSI = errors.New("roce: not a GSI MAD packet")
	// ErrInvalidFrame: a Frame that cannot be encoded.
	ErrInvalidFrame = errors.New("roce: invalid frame")
)
