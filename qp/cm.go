package qp

import (
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// Path is one path of a connection, as the CM holds it (the struct
// sa_path_rec fields the kernel copies into an address vector in
// ib_init_ah_attr_from_path).
type Path struct {
	// PathRecord holds the path's addresses, LIDs, GRH fields, SL, rate
	// and MTU. SGID, SLID, PKey, PacketLifeTime and Flags are not used
	// for the address vector.
	rdma.PathRecord
	// SGIDIndex selects the local GID.
	SGIDIndex uint8
	// SrcPathBits are the LMC bits of the local LID.
	SrcPathBits uint8
	// RoCE marks a RoCE port: the GRH is always used there.
	RoCE bool
}

// CMAltPath is the alternate path of a connection (REQ alternate path
// fields; kernel cm_id_private.alt_av).
type CMAltPath struct {
	Path      Path
	Port      uint8
	PKeyIndex uint16
	// AckTimeout is the alternate path's local ACK timeout.
	AckTimeout uint8
}

// CMParams are the results of a CM exchange that set up a connected QP
// (IBTA vol. 1 chapter 12, REQ and REP), named from the local side's view. The
// comments say which message field the kernel takes each one from
// (drivers/infiniband/core/cm.c, cm_req_handler and cm_rep_handler).
type CMParams struct {
	// Port is the local port, starting at 1.
	Port uint8
	// PKeyIndex indexes the REQ's partition key in the port's table.
	PKeyIndex uint16
	// Path is the primary path.
	Path Path
	// Alt is the alternate path, or nil. The kernel has one when the
	// alternate DLID is not 0; RoCE has none.
	Alt *CMAltPath
	// RemoteQPN is the peer's QPN: REP local QPN (active side), REQ
	// local QPN (passive side).
	RemoteQPN uint32
	// LocalPSN is the starting PSN this side sent (REQ on the active
	// side, REP on the passive side). It is this side's receive PSN; the
	// rdma_cm sets it to the cm_id's random 24-bit seq_num.
	LocalPSN uint32
	// RemotePSN is the starting PSN the peer sent; it becomes this side's
	// send PSN.
	RemotePSN uint32
	// AckTimeout is the local ACK timeout for the QP: on the active side
	// AckTimeout(REP target ACK delay, path packet lifetime), on the
	// passive side TimeoutFromREQ(REQ primary local ACK timeout). An
	// rdma_cm RDMA_OPTION_ID_ACK_TIMEOUT replaces it.
	AckTimeout uint8
	// RetryCount is the REQ retry count (3 bits).
	RetryCount uint8
	// RNRRetryCount is the RNR retry count the peer asked for: REP field
	// (active side), REQ field (passive side) (3 bits).
	RNRRetryCount uint8
	// InitiatorDepth becomes max_rd_atomic: the peer's responder
	// resources (active side), or the value given to accept (passive).
	InitiatorDepth uint8
	// ResponderResources becomes max_dest_rd_atomic, and turns on
	// REMOTE_READ and REMOTE_ATOMIC at INIT when not 0.
	ResponderResources uint8
	// MinRNRTimer is the RTR min_rnr_timer. The IB CM sets 0; kernels
	// from 5.13 let in-kernel rdma_cm users override it
	// (rdma_set_min_rnr_timer).
	MinRNRTimer uint8
	// QKey is the UD Q_Key (rdma_cm: RDMA_UDP_QKEY 0x01234567 for the
	// UDP port space, the multicast group's Q_Key for IPoIB).
	QKey uint32
}

// AckTimeout returns the local ACK timeout the kernel's IB CM computes from
// the remote CA's ACK delay and the path packet lifetime (cm.c,
// cm_ack_timeout): log2 of 4.096 µs × 2^ackDelay + 2 × 4.096 µs ×
// 2^packetLifeTime, rounded to the larger term, plus one when the smaller
// term is within half of it, capped at 31.
func AckTimeout(caAckDelay, packetLifeTime uint8) uint8 {
	t := int(packetLifeTime) + 1 // 2 × lifetime
	d := int(caAckDelay)
	if t >= d {
		if d >= t-1 {
			t++
		}
	} else {
		near := t >= d-1
		t = d
		if near {
			t++
		}
	}
	return uint8(min(t, maxTimer))
}

// TimeoutFromREQ returns the ACK timeout the passive side's kernel CM
// uses: the REQ's primary local ACK timeout, taken as packet lifetime + 1
// (cm_format_paths_from_req subtracts one, cm_init_av_by_path adds it
// back), so 0 becomes 1.
func TimeoutFromREQ(reqLocalAckTimeout uint8) uint8 {
	return max(reqLocalAckTimeout, 1)
}

// ah builds the address vector of a path on a local port
// (ib_init_ah_attr_from_path: the GRH is used when the hop limit is not 0
// or the port is RoCE).
func (p *Path) ah(port uint8) AH {
	ah := AH{DLID: p.DLID, SL: p.SL, SrcPathBits: p.SrcPathBits, StaticRate: p.Rate, PortNum: port}
	if p.HopLimit > 0 || p.RoCE {
		ah.IsGlobal = true
		ah.GRH = GRH{DGID: p.DGID, FlowLabel: p.FlowLabel, SGIDIndex: p.SGIDIndex,
			HopLimit: p.HopLimit, TrafficClass: p.TrafficClass}
	}
	return ah
}

func (p *CMParams) altPath() AltPath {
	return AltPath{AH: p.Alt.Path.ah(p.Alt.Port), PKeyIndex: p.Alt.PKeyIndex,
		PortNum: p.Alt.Port, Timeout: p.Alt.AckTimeout}
}

func cmType(t QPType, ud bool) error {
	switch t {
	case RC, UC:
		return nil
	case UD:
		if ud {
			return nil
		}
	}
	return fmt.Errorf("%w: %v has no CM connection attributes", ErrUnknownType, t)
}

// checked validates the built attributes against the transition they are
// made for, so bad parameters fail here rather than in the kernel.
func checked(t QPType, from State, a Attr, m Mask) (Attr, Mask, error) {
	if err := Check(t, from, &a, m); err != nil {
		return Attr{}, 0, fmt.Errorf("qp: CM attributes for %v→%v: %w", from, a.State, err)
	}
	return a, m, nil
}

// InitAttr returns the RESET→INIT attributes the kernel's INIT_QP_ATTR
// gives once a CM exchange exists. RC and UC (cm.c cm_init_qp_init_attr):
// STATE|ACCESS_FLAGS|PKEY_INDEX|PORT with REMOTE_WRITE, plus REMOTE_READ
// and REMOTE_ATOMIC when ResponderResources is not 0 (no LOCAL_WRITE
// since Linux 2.6.20). UD (cma.c cma_ib_init_qp_attr):
// STATE|PKEY_INDEX|PORT|QKEY.
func InitAttr(p CMParams, t QPType) (Attr, Mask, error) {
	if err := cmType(t, true); err != nil {
		return Attr{}, 0, err
	}
	a := Attr{State: Init, PKeyIndex: p.PKeyIndex, Port: p.Port}
	m := MaskState | MaskPKeyIndex | MaskPort
	if t == UD {
		a.QKey = p.QKey
		return checked(t, Reset, a, m|MaskQKey)
	}
	a.AccessFlags = AccessRemoteWrite
	if p.ResponderResources != 0 {
		a.AccessFlags |= AccessRemoteRead | AccessRemoteAtomic
	}
	return checked(t, Reset, a, m|MaskAccessFlags)
}

// InitAttrBeforeCM returns the RESET→INIT attributes the rdma_cm gives
// before any CM exchange (rdma_create_qp right after route resolution;
// cma.c cma_ib_init_qp_attr): access flags 0 for RC and UC, and the same
// as InitAttr for UD.
func InitAttrBeforeCM(p CMParams, t QPType) (Attr, Mask, error) {
	if err := cmType(t, true); err != nil {
		return Attr{}, 0, err
	}
	if t == UD {
		return InitAttr(p, t)
	}
	a := Attr{State: Init, PKeyIndex: p.PKeyIndex, Port: p.Port}
	return checked(t, Reset, a, MaskState|MaskAccessFlags|MaskPKeyIndex|MaskPort)
}

// RTRAttr returns the INIT→RTR attributes (cm.c cm_init_qp_rtr_attr, with
// the rdma_cm's overrides: rq_psn from its seq_num, max_dest_rd_atomic
// from the negotiated responder resources). RC:
// STATE|AV|PATH_MTU|DEST_QPN|RQ_PSN|MAX_DEST_RD_ATOMIC|MIN_RNR_TIMER; UC
// without the last two; both add ALT_PATH with an alternate path. UD:
// STATE only, as cma_init_ud_qp and librdmacm do (the kernel's
// INIT_QP_ATTR for UD at RTR repeats the INIT mask, which the state table
// would reject for its PORT bit).
func RTRAttr(p CMParams, t QPType) (Attr, Mask, error) {
	if err := cmType(t, true); err != nil {
		return Attr{}, 0, err
	}
	a := Attr{State: RTR}
	m := MaskState
	if t == UD {
		return checked(t, Init, a, m)
	}
	a.AH = p.Path.ah(p.Port)
	a.PathMTU = p.Path.MTU
	a.DestQPN = p.RemoteQPN
	a.RQPSN = p.LocalPSN
	m |= MaskAV | MaskPathMTU | MaskDestQPN | MaskRQPSN
	if t == RC {
		a.MaxDestRdAtomic = p.ResponderResources
		a.MinRNRTimer = p.MinRNRTimer
		m |= MaskMaxDestRdAtomic | MaskMinRNRTimer
	}
	if p.Alt != nil {
		a.AltPath = p.altPath()
		m |= MaskAltPath
	}
	return checked(t, Init, a, m)
}

// RTSAttr returns the RTR→RTS attributes (cm.c cm_init_qp_rts_attr, with
// the rdma_cm's max_rd_atomic override). RC:
// STATE|SQ_PSN|TIMEOUT|RETRY_CNT|RNR_RETRY|MAX_QP_RD_ATOMIC; UC:
// STATE|SQ_PSN; both add PATH_MIG_STATE=REARM with an alternate path.
// UD: STATE|SQ_PSN with PSN 0 (cma_init_ud_qp).
func RTSAttr(p CMParams, t QPType) (Attr, Mask, error) {
	if err := cmType(t, true); err != nil {
		return Attr{}, 0, err
	}
	a := Attr{State: RTS}
	m := MaskState | MaskSQPSN
	if t == UD {
		return checked(t, RTR, a, m)
	}
	a.SQPSN = p.RemotePSN
	if t == RC {
		a.Timeout = p.AckTimeout
		a.RetryCnt = p.RetryCount
		a.RNRRetry = p.RNRRetryCount
		a.MaxRdAtomic = p.InitiatorDepth
		m |= MaskTimeout | MaskRetryCnt | MaskRNRRetry | MaskMaxQPRdAtomic
	}
	if p.Alt != nil {
		a.PathMigState = Rearm
		m |= MaskPathMigState
	}
	return checked(t, RTR, a, m)
}

// AltPathAttr returns the RTS→RTS attributes that load a new alternate path
// after a LAP exchange (cm_init_qp_rts_attr once the LAP state is set):
// ALT_PATH|PATH_MIG_STATE=REARM, without STATE. p.Alt must be set.
func AltPathAttr(p CMParams, t QPType) (Attr, Mask, error) {
	if err := cmType(t, false); err != nil {
		return Attr{}, 0, err
	}
	if p.Alt == nil {
		return Attr{}, 0, fmt.Errorf("qp: alternate path attributes: %w: no alternate path", ErrInvalidArgument)
	}
	a := Attr{State: RTS, AltPath: p.altPath(), PathMigState: Rearm}
	return checked(t, RTS, a, MaskAltPath|MaskPathMigState)
}
