package mad

import "fmt"

// RejectReason is REJ's 16-bit Reason (IBTA vol. 1 12.6.7.2 table 103;
// kernel enum ib_cm_rej_reason). Code 34 is not defined by Linux.
//
// What the Additional Reject Information (ARI, up to 72 bytes, length in
// RejectedInfoLength) holds per reason. "Kernel" marks what Linux cm.c
// actually sends; the rest follows the IBTA table and is not checked
// against the spec text (UNVERIFIED where noted).
//
//	 #  constant                               ARI
//	 1  IB_CM_REJ_NO_QP                        none
//	 2  IB_CM_REJ_NO_EEC                       none
//	 3  IB_CM_REJ_NO_RESOURCES                 none
//	 4  IB_CM_REJ_TIMEOUT                      8-byte CA GUID of the REJ sender (kernel: its node GUID;
//	                                           the receiver matches it against remote CA GUIDs)
//	 5  IB_CM_REJ_UNSUPPORTED                  none
//	 6  IB_CM_REJ_INVALID_COMM_ID              none
//	 7  IB_CM_REJ_INVALID_COMM_INSTANCE        none
//	 8  IB_CM_REJ_INVALID_SERVICE_ID           none (kernel: no listener)
//	 9  IB_CM_REJ_INVALID_TRANSPORT_TYPE       none
//	10  IB_CM_REJ_STALE_CONN                   none (kernel: also used for duplicate REQs in TimeWait)
//	11  IB_CM_REJ_RDC_NOT_EXIST                none
//	12  IB_CM_REJ_INVALID_GID                  16-byte GID the sender would accept (kernel: its port's GID 0)
//	13  IB_CM_REJ_INVALID_LID                  acceptable LID (2 bytes)
//	14  IB_CM_REJ_INVALID_SL                   acceptable SL (UNVERIFIED)
//	15  IB_CM_REJ_INVALID_TRAFFIC_CLASS        acceptable traffic class (UNVERIFIED)
//	16  IB_CM_REJ_INVALID_HOP_LIMIT            acceptable hop limit (UNVERIFIED)
//	17  IB_CM_REJ_INVALID_PACKET_RATE          acceptable packet rate (UNVERIFIED)
//	18  IB_CM_REJ_INVALID_ALT_GID              16-byte GID for the alternate path (kernel: its port's GID 0)
//	19  IB_CM_REJ_INVALID_ALT_LID              acceptable alternate LID (UNVERIFIED)
//	20  IB_CM_REJ_INVALID_ALT_SL               acceptable alternate SL (UNVERIFIED)
//	21  IB_CM_REJ_INVALID_ALT_TRAFFIC_CLASS    acceptable alternate traffic class (UNVERIFIED)
//	22  IB_CM_REJ_INVALID_ALT_HOP_LIMIT        acceptable alternate hop limit (UNVERIFIED)
//	23  IB_CM_REJ_INVALID_ALT_PACKET_RATE      acceptable alternate packet rate (UNVERIFIED)
//	24  IB_CM_REJ_PORT_CM_REDIRECT             ClassPortInfo (72 bytes) naming the CM to retry at
//	25  IB_CM_REJ_PORT_REDIRECT                the port to redirect to (UNVERIFIED layout)
//	26  IB_CM_REJ_INVALID_MTU                  acceptable path MTU (UNVERIFIED)
//	27  IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES  responder resources available (UNVERIFIED)
//	28  IB_CM_REJ_CONSUMER_DEFINED             consumer-defined; rdma_cm sends none
//	29  IB_CM_REJ_INVALID_RNR_RETRY            acceptable RNR retry count (UNVERIFIED)
//	30  IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID      none
//	31  IB_CM_REJ_INVALID_CLASS_VERSION        highest CM class version supported (UNVERIFIED)
//	32  IB_CM_REJ_INVALID_FLOW_LABEL           acceptable flow label (UNVERIFIED)
//	33  IB_CM_REJ_INVALID_ALT_FLOW_LABEL       acceptable alternate flow label (UNVERIFIED)
//	35  IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED  none (ECE: rdma_reject_ece sends no ARI)
type RejectReason uint16

// Reject reasons; see the table on RejectReason for their ARI.
const (
	RejectNoQP                      RejectReason = 1
	RejectNoEEC                     RejectReason = 2
	RejectNoResources               RejectReason = 3
	RejectTimeout                   RejectReason = 4
	RejectUnsupported               RejectReason = 5
	RejectInvalidCommID             RejectReason = 6
	RejectInvalidCommInstance       RejectReason = 7
	RejectInvalidServiceID          RejectReason = 8
	RejectInvalidTransportType      RejectReason = 9
	RejectStaleConn                 RejectReason = 10
	RejectRDCNotExist               RejectReason = 11
	RejectInvalidGID                RejectReason = 12
	RejectInvalidLID                RejectReason = 13
	RejectInvalidSL                 RejectReason = 14
	RejectInvalidTrafficClass       RejectReason = 15
	RejectInvalidHopLimit           RejectReason = 16
	RejectInvalidPacketRate         RejectReason = 17
	RejectInvalidAltGID             RejectReason = 18
	RejectInvalidAltLID             RejectReason = 19
	RejectInvalidAltSL              RejectReason = 20
	RejectInvalidAltTrafficClass    RejectReason = 21
	RejectInvalidAltHopLimit        RejectReason = 22
	RejectInvalidAltPacketRate      RejectReason = 23
	RejectPortCMRedirect            RejectReason = 24
	RejectPortRedirect              RejectReason = 25
	RejectInvalidMTU                RejectReason = 26
	RejectInsufficientRespResources RejectReason = 27
	RejectConsumerDefined           RejectReason = 28
	RejectInvalidRNRRetry           RejectReason = 29
	RejectDuplicateLocalCommID      RejectReason = 30
	RejectInvalidClassVersion       RejectReason = 31
	RejectInvalidFlowLabel          RejectReason = 32
	RejectInvalidAltFlowLabel       RejectReason = 33
	RejectVendorOptionNotSupported  RejectReason = 35
)

type rejectInfo struct{ name, constant, ari string }

var rejectReasons = [...]rejectInfo{
	RejectNoQP:                      {"no QP", "IB_CM_REJ_NO_QP", ""},
	RejectNoEEC:                     {"no EEC", "IB_CM_REJ_NO_EEC", ""},
	RejectNoResources:               {"no resources", "IB_CM_REJ_NO_RESOURCES", ""},
	RejectTimeout:                   {"timeout", "IB_CM_REJ_TIMEOUT", "CA GUID of the sender (8 bytes)"},
	RejectUnsupported:               {"unsupported", "IB_CM_REJ_UNSUPPORTED", ""},
	RejectInvalidCommID:             {"invalid comm ID", "IB_CM_REJ_INVALID_COMM_ID", ""},
	RejectInvalidCommInstance:       {"invalid comm instance", "IB_CM_REJ_INVALID_COMM_INSTANCE", ""},
	RejectInvalidServiceID:          {"invalid service ID", "IB_CM_REJ_INVALID_SERVICE_ID", ""},
	RejectInvalidTransportType:      {"invalid transport type", "IB_CM_REJ_INVALID_TRANSPORT_TYPE", ""},
	RejectStaleConn:                 {"stale conn", "IB_CM_REJ_STALE_CONN", ""},
	RejectRDCNotExist:               {"RDC not exist", "IB_CM_REJ_RDC_NOT_EXIST", ""},
	RejectInvalidGID:                {"invalid GID", "IB_CM_REJ_INVALID_GID", "acceptable GID (16 bytes)"},
	RejectInvalidLID:                {"invalid LID", "IB_CM_REJ_INVALID_LID", "acceptable LID"},
	RejectInvalidSL:                 {"invalid SL", "IB_CM_REJ_INVALID_SL", "acceptable SL"},
	RejectInvalidTrafficClass:       {"invalid traffic class", "IB_CM_REJ_INVALID_TRAFFIC_CLASS", "acceptable traffic class"},
	RejectInvalidHopLimit:           {"invalid hop limit", "IB_CM_REJ_INVALID_HOP_LIMIT", "acceptable hop limit"},
	RejectInvalidPacketRate:         {"invalid packet rate", "IB_CM_REJ_INVALID_PACKET_RATE", "acceptable packet rate"},
	RejectInvalidAltGID:             {"invalid alt GID", "IB_CM_REJ_INVALID_ALT_GID", "acceptable alternate GID (16 bytes)"},
	RejectInvalidAltLID:             {"invalid alt LID", "IB_CM_REJ_INVALID_ALT_LID", "acceptable alternate LID"},
	RejectInvalidAltSL:              {"invalid alt SL", "IB_CM_REJ_INVALID_ALT_SL", "acceptable alternate SL"},
	RejectInvalidAltTrafficClass:    {"invalid alt traffic class", "IB_CM_REJ_INVALID_ALT_TRAFFIC_CLASS", "acceptable alternate traffic class"},
	RejectInvalidAltHopLimit:        {"invalid alt hop limit", "IB_CM_REJ_INVALID_ALT_HOP_LIMIT", "acceptable alternate hop limit"},
	RejectInvalidAltPacketRate:      {"invalid alt packet rate", "IB_CM_REJ_INVALID_ALT_PACKET_RATE", "acceptable alternate packet rate"},
	RejectPortCMRedirect:            {"port CM redirect", "IB_CM_REJ_PORT_CM_REDIRECT", "ClassPortInfo of the CM to redirect to (72 bytes)"},
	RejectPortRedirect:              {"port redirect", "IB_CM_REJ_PORT_REDIRECT", "port to redirect to"},
	RejectInvalidMTU:                {"invalid MTU", "IB_CM_REJ_INVALID_MTU", "acceptable path MTU"},
	RejectInsufficientRespResources: {"insufficient resp resources", "IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES", "responder resources available"},
	RejectConsumerDefined:           {"consumer defined", "IB_CM_REJ_CONSUMER_DEFINED", "consumer-defined"},
	RejectInvalidRNRRetry:           {"invalid RNR retry", "IB_CM_REJ_INVALID_RNR_RETRY", "acceptable RNR retry count"},
	RejectDuplicateLocalCommID:      {"duplicate local comm ID", "IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID", ""},
	RejectInvalidClassVersion:       {"invalid class version", "IB_CM_REJ_INVALID_CLASS_VERSION", "highest CM class version supported"},
	RejectInvalidFlowLabel:          {"invalid flow label", "IB_CM_REJ_INVALID_FLOW_LABEL", "acceptable flow label"},
	RejectInvalidAltFlowLabel:       {"invalid alt flow label", "IB_CM_REJ_INVALID_ALT_FLOW_LABEL", "acceptable alternate flow label"},
	RejectVendorOptionNotSupported:  {"vendor option is not supported", "IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED", ""},
}

func (r RejectReason) info() (rejectInfo, bool) {
	if int(r) < len(rejectReasons) && rejectReasons[r].name != "" {
		return rejectReasons[r], true
	}
	return rejectInfo{}, false
}

// Known reports whether r is a reason Linux defines (1-33, 35).
func (r RejectReason) Known() bool { _, ok := r.info(); return ok }

// String returns the kernel's ibcm_reject_msg text, e.g. "vendor option
// is not supported" for 35, or "unrecognized reason (N)".
func (r RejectReason) String() string {
	if i, ok := r.info(); ok {
		return i.name
	}
	return fmt.Sprintf("unrecognized reason (%d)", uint16(r))
}

// ConstantName returns the kernel constant, e.g. "IB_CM_REJ_TIMEOUT",
// or "" for an unknown reason.
func (r RejectReason) ConstantName() string { i, _ := r.info(); return i.constant }

// ARIDescription says what the REJ's additional reject information
// holds for r, or "" when the reason carries none.
func (r RejectReason) ARIDescription() string { i, _ := r.info(); return i.ari }
