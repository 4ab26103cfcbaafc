package mad

import (
	"fmt"
)

// TransportServiceType is the REQ's 2-bit TransportServiceType (IBTA
// 12.6.5 table 106; kernel cm_req_set_qp_type/cm_req_get_qp_type).
type TransportServiceType uint8

// Transport service types.
const (
	TransportRC TransportServiceType = 0 // reliable connection
	TransportUC TransportServiceType = 1 // unreliable connection
	TransportRD TransportServiceType = 2 // reliable datagram
	// TransportExtended means "see ExtendedTransportType"; Linux sends it
	// with ExtendedTransportXRC for XRC.
	TransportExtended TransportServiceType = 3
)

// String returns "RC", "UC", "RD", "extended" or
// "TransportServiceType(N)".
func (t TransportServiceType) String() string {
	switch t {
	case TransportRC:
		return "RC"
	case TransportUC:
		return "UC"
	case TransportRD:
		return "RD"
	case TransportExtended:
		return "extended"
	}
	return fmt.Sprintf("TransportServiceType(%d)", uint8(t))
}

// ExtendedTransportType is the REQ's 3-bit extended transport type,
// meaningful when TransportServiceType is TransportExtended.
type ExtendedTransportType uint8

// ExtendedTransportXRC is the only defined extended type (IBTA annex A14).
const ExtendedTransportXRC ExtendedTransportType = 1

// MRAedMessage is MRA's 2-bit MessageMRAed (IBTA table 107; kernel
// CM_MSG_RESPONSE_*). Value 3 is reserved; the kernel drops such MRAs.
type MRAedMessage uint8

// MessageMRAed values.
const (
	MRAedREQ   MRAedMessage = 0 // a REQ
	MRAedREP   MRAedMessage = 1 // a REP
	MRAedOther MRAedMessage = 2 // LAP
)

// String returns "REQ", "REP", "other" or "reserved(N)".
func (m MRAedMessage) String() string {
	switch m {
	case MRAedREQ:
		return "REQ"
	case MRAedREP:
		return "REP"
	case MRAedOther:
		return "other"
	}
	return fmt.Sprintf("reserved(%d)", uint8(m))
}

// RejectedMessage is REJ's 2-bit MessageRejected (IBTA table 108). The
// kernel treats 3 like "other".
type RejectedMessage uint8

// MessageRejected values.
const (
	RejectedREQ   RejectedMessage = 0 // a REQ
	RejectedREP   RejectedMessage = 1 // a REP
	RejectedOther RejectedMessage = 2 // no message, or a LAP
)

// String returns "REQ", "REP", "other" or "reserved(N)".
func (m RejectedMessage) String() string {
	switch m {
	case RejectedREQ:
		return "REQ"
	case RejectedREP:
		return "REP"
	case RejectedOther:
		return "other"
	}
	return fmt.Sprintf("reserved(%d)", uint8(m))
}

// Failover is REP's 2-bit FailoverAccepted (IBTA table 110).
type Failover uint8

// FailoverAccepted values.
const (
	FailoverAccepted     Failover = 0 // alternate path accepted
	FailoverNotSupported Failover = 1 // failover not supported
	FailoverRejected     Failover = 2 // alternate path rejected
)

// String returns "accepted", "not supported", "rejected" or "reserved(N)".
func (f Failover) String() string {
	switch f {
	case FailoverAccepted:
		return "accepted"
	case FailoverNotSupported:
		return "not supported"
	case FailoverRejected:
		return "rejected"
	}
	return fmt.Sprintf("reserved(%d)", uint8(f))
}

// SIDRStatus is SIDR_REP's Status (IBTA table 120; kernel
// enum ib_cm_sidr_status). The kernel does not check it.
type SIDRStatus uint8

// SIDR_REP statuses.
const (
	SIDRSuccess            SIDRStatus = 0 // IB_SIDR_SUCCESS
	SIDRUnsupported        SIDRStatus = 1 // IB_SIDR_UNSUPPORTED: no such service
	SIDRReject             SIDRStatus = 2 // IB_SIDR_REJECT
	SIDRNoQP               SIDRStatus = 3 // IB_SIDR_NO_QP
	SIDRRedirect           SIDRStatus = 4 // IB_SIDR_REDIRECT: info holds ClassPortInfo
	SIDRUnsupportedVersion SIDRStatus = 5 // IB_SIDR_UNSUPPORTED_VERSION: info holds the highest version
)

var sidrStatusNames = [...]string{"success", "unsupported service", "rejected", "no QP", "redirect", "unsupported version"}

// String returns the status in words ("no QP"), or "reserved(N)".
func (s SIDRStatus) String() string {
	if int(s) < len(sidrStatusNames) {
		return sidrStatusNames[s]
	}
	return fmt.Sprintf("reserved(%d)", uint8(s))
}

// APRStatus is APR's AP Status (IBTA table 116; kernel
// enum ib_cm_apr_status).
type APRStatus uint8

// AP statuses.
const (
	APRSuccess             APRStatus = iota // IB_CM_APR_SUCCESS
	APRInvalidCommID                        // IB_CM_APR_INVALID_COMM_ID
	APRUnsupported                          // IB_CM_APR_UNSUPPORTED
	APRReject                               // IB_CM_APR_REJECT
	APRRedirect                             // IB_CM_APR_REDIRECT
	APRIsCurrent                            // IB_CM_APR_IS_CURRENT
	APRInvalidQPNEECN                       // IB_CM_APR_INVALID_QPN_EECN
	APRInvalidLID                           // IB_CM_APR_INVALID_LID
	APRInvalidGID                           // IB_CM_APR_INVALID_GID
	APRInvalidFlowLabel                     // IB_CM_APR_INVALID_FLOW_LABEL
	APRInvalidTrafficClass                  // IB_CM_APR_INVALID_TCLASS
	APRInvalidHopLimit                      // IB_CM_APR_INVALID_HOP_LIMIT
	APRInvalidPacketRate                    // IB_CM_APR_INVALID_PACKET_RATE
	APRInvalidSL                            // IB_CM_APR_INVALID_SL
)

var aprStatusNames = [...]string{
	"success", "invalid comm ID", "unsupported", "rejected", "redirect",
	"path is current", "invalid QPN/EECN", "invalid LID", "invalid GID",
	"invalid flow label", "invalid traffic class", "invalid hop limit",
	"invalid packet rate", "invalid SL",
}

// String returns the status in words ("path is current"), or
// "reserved(N)".
func (s APRStatus) String() string {
	if int(s) < len(aprStatusNames) {
		return aprStatusNames[s]
	}
	return fmt.Sprintf("reserved(%d)", uint8(s))
}
