package qp

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// QPType is the transport service of a QP, numbered as enum ib_uverbs_qp_type
// and enum ibv_qp_type (GSI as the kernel's enum ib_qp_type).
type QPType uint8

// QP types this package knows.
const (
	// GSI is QP1, the General Services Interface QP (kernel only).
	GSI QPType = 1
	// RC is Reliable Connected.
	RC QPType = 2
	// UC is Unreliable Connected.
	UC QPType = 3
	// UD is Unreliable Datagram.
	UD QPType = 4
)

// Types returns the QP types the transition table covers, in a new slice.
func Types() []QPType { return []QPType{RC, UC, UD, GSI} }

// Known reports whether t is a QP type the table covers.
func (t QPType) Known() bool { return t >= GSI && t <= UD }

func (t QPType) String() string {
	switch t {
	case GSI:
		return "GSI"
	case RC:
		return "RC"
	case UC:
		return "UC"
	case UD:
		return "UD"
	}
	return "QPType(" + strconv.Itoa(int(t)) + ")"
}

// State is a QP state, numbered as enum ibv_qp_state / enum ib_qp_state.
type State uint8

// QP states (IBTA vol. 1 §10.3.1).
const (
	Reset State = iota // RESET
	Init               // INIT
	RTR                // Ready To Receive
	RTS                // Ready To Send
	SQD                // Send Queue Drain(ed)
	SQE                // Send Queue Error (UC, UD)
	Err                // ERR
)

// NumStates is the number of QP states; valid states are below it.
const NumStates = 7

// States returns every QP state in numeric order, in a new slice.
func States() []State { return []State{Reset, Init, RTR, RTS, SQD, SQE, Err} }

// Valid reports whether s is one of the seven QP states.
func (s State) Valid() bool { return s < NumStates }

var stateNames = [NumStates]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

func (s State) String() string {
	if s.Valid() {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Mask selects the Attr fields a Modify QP applies. Bit values are those of
// enum ib_qp_attr_mask (kernel) and enum ibv_qp_attr_mask (libibverbs).
type Mask uint32

// Attribute mask bits. Bits 21–24 (SMAC, ALT_SMAC, VID, ALT_VID) are
// kernel-internal and have no constant here.
const (
	MaskState            Mask = 1 << 0  // IB_QP_STATE
	MaskCurState         Mask = 1 << 1  // IB_QP_CUR_STATE
	MaskEnSQDAsyncNotify Mask = 1 << 2  // IB_QP_EN_SQD_ASYNC_NOTIFY
	MaskAccessFlags      Mask = 1 << 3  // IB_QP_ACCESS_FLAGS
	MaskPKeyIndex        Mask = 1 << 4  // IB_QP_PKEY_INDEX
	MaskPort             Mask = 1 << 5  // IB_QP_PORT
	MaskQKey             Mask = 1 << 6  // IB_QP_QKEY
	MaskAV               Mask = 1 << 7  // IB_QP_AV
	MaskPathMTU          Mask = 1 << 8  // IB_QP_PATH_MTU
	MaskTimeout          Mask = 1 << 9  // IB_QP_TIMEOUT
	MaskRetryCnt         Mask = 1 << 10 // IB_QP_RETRY_CNT
	MaskRNRRetry         Mask = 1 << 11 // IB_QP_RNR_RETRY
	MaskRQPSN            Mask = 1 << 12 // IB_QP_RQ_PSN
	MaskMaxQPRdAtomic    Mask = 1 << 13 // IB_QP_MAX_QP_RD_ATOMIC
	MaskAltPath          Mask = 1 << 14 // IB_QP_ALT_PATH
	MaskMinRNRTimer      Mask = 1 << 15 // IB_QP_MIN_RNR_TIMER
	MaskSQPSN            Mask = 1 << 16 // IB_QP_SQ_PSN
	MaskMaxDestRdAtomic  Mask = 1 << 17 // IB_QP_MAX_DEST_RD_ATOMIC
	MaskPathMigState     Mask = 1 << 18 // IB_QP_PATH_MIG_STATE
	MaskCap              Mask = 1 << 19 // IB_QP_CAP
	MaskDestQPN          Mask = 1 << 20 // IB_QP_DEST_QPN
	MaskRateLimit        Mask = 1 << 25 // IB_QP_RATE_LIMIT
)

// MaskLegacy is every bit the legacy MODIFY_QP write command accepts
// (STATE through DEST_QPN); higher bits need EX_MODIFY_QP.
const MaskLegacy Mask = 1<<21 - 1

var maskNames = [...]string{
	0: "STATE", 1: "CUR_STATE", 2: "EN_SQD_ASYNC_NOTIFY", 3: "ACCESS_FLAGS",
	4: "PKEY_INDEX", 5: "PORT", 6: "QKEY", 7: "AV", 8: "PATH_MTU",
	9: "TIMEOUT", 10: "RETRY_CNT", 11: "RNR_RETRY", 12: "RQ_PSN",
	13: "MAX_QP_RD_ATOMIC", 14: "ALT_PATH", 15: "MIN_RNR_TIMER",
	16: "SQ_PSN", 17: "MAX_DEST_RD_ATOMIC", 18: "PATH_MIG_STATE",
	19: "CAP", 20: "DEST_QPN", 25: "RATE_LIMIT",
}

// Names returns the IB_QP_* names of the bits in m, lowest bit first,
// without the prefix. A bit with no name is given as hex (0x200000).
func (m Mask) Names() []string {
	names := make([]string, 0, bits.OnesCount32(uint32(m)))
	for v := uint32(m); v != 0; v &= v - 1 {
		b := bits.TrailingZeros32(v)
		if b < len(maskNames) && maskNames[b] != "" {
			names = append(names, maskNames[b])
		} else {
			names = append(names, fmt.Sprintf("%#x", uint32(1)<<b))
		}
	}
	return names
}

// String lists the bits of m joined by "|", or "0" for the empty mask.
func (m Mask) String() string {
	if m == 0 {
		return "0"
	}
	return strings.Join(m.Names(), "|")
}

// Access is a set of QP or MR access flags, valued as enum ib_uverbs_access_flags.
type Access uint32

// Access flags. QPs use the remote ones; LOCAL_WRITE and the rest matter to
// memory registration.
const (
	AccessLocalWrite      Access = 1 << 0
	AccessRemoteWrite     Access = 1 << 1
	AccessRemoteRead      Access = 1 << 2
	AccessRemoteAtomic    Access = 1 << 3
	AccessMWBind          Access = 1 << 4
	AccessZeroBased       Access = 1 << 5
	AccessOnDemand        Access = 1 << 6
	AccessHugeTLB         Access = 1 << 7
	AccessFlushGlobal     Access = 1 << 8  // uapi 6.2+; not in 6.1 headers
	AccessFlushPersistent Access = 1 << 9  // uapi 6.2+; not in 6.1 headers
	AccessRelaxedOrdering Access = 1 << 20 // first of the optional range (bits 20–29)
)

var accessNames = [...]string{
	0: "LOCAL_WRITE", 1: "REMOTE_WRITE", 2: "REMOTE_READ", 3: "REMOTE_ATOMIC",
	4: "MW_BIND", 5: "ZERO_BASED", 6: "ON_DEMAND", 7: "HUGETLB",
	8: "FLUSH_GLOBAL", 9: "FLUSH_PERSISTENT", 20: "RELAXED_ORDERING",
}

// String lists the flags joined by "|", or "0".
func (a Access) String() string {
	if a == 0 {
		return "0"
	}
	var parts []string
	for v := uint32(a); v != 0; v &= v - 1 {
		b := bits.TrailingZeros32(v)
		if b < len(accessNames) && accessNames[b] != "" {
			parts = append(parts, accessNames[b])
		} else {
			parts = append(parts, fmt.Sprintf("%#x", uint32(1)<<b))
		}
	}
	return strings.Join(parts, "|")
}

// MigState is the path migration state, as enum ibv_mig_state
// (IBTA vol. 1 automatic path migration).
type MigState uint8

// Path migration states.
const (
	Migrated MigState = 0
	Rearm    MigState = 1
	Armed    MigState = 2
)

func (s MigState) String() string {
	switch s {
	case Migrated:
		return "MIGRATED"
	case Rearm:
		return "REARM"
	case Armed:
		return "ARMED"
	}
	return "MigState(" + strconv.Itoa(int(s)) + ")"
}
