package qp

import (
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

// Numeric values pinned from /usr/include/infiniband/verbs.h (libibverbs-dev
// 44.0: enum ibv_qp_attr_mask, ibv_qp_state, ibv_qp_type, ibv_access_flags,
// ibv_mtu, ibv_mig_state) and /usr/include/rdma/ib_user_ioctl_verbs.h
// (linux-libc-dev 6.1). TestHeaderValues checks the same names against the
// installed headers with a C compiler.
var wantMaskBits = map[string]Mask{
	"STATE": 1 << 0, "CUR_STATE": 1 << 1, "EN_SQD_ASYNC_NOTIFY": 1 << 2,
	"ACCESS_FLAGS": 1 << 3, "PKEY_INDEX": 1 << 4, "PORT": 1 << 5, "QKEY": 1 << 6,
	"AV": 1 << 7, "PATH_MTU": 1 << 8, "TIMEOUT": 1 << 9, "RETRY_CNT": 1 << 10,
	"RNR_RETRY": 1 << 11, "RQ_PSN": 1 << 12, "MAX_QP_RD_ATOMIC": 1 << 13,
	"ALT_PATH": 1 << 14, "MIN_RNR_TIMER": 1 << 15, "SQ_PSN": 1 << 16,
	"MAX_DEST_RD_ATOMIC": 1 << 17, "PATH_MIG_STATE": 1 << 18, "CAP": 1 << 19,
	"DEST_QPN": 1 << 20, "RATE_LIMIT": 1 << 25,
}

// goMask maps the IB_QP_* names to this package's constants.
var goMask = map[string]Mask{
	"STATE": MaskState, "CUR_STATE": MaskCurState, "EN_SQD_ASYNC_NOTIFY": MaskEnSQDAsyncNotify,
	"ACCESS_FLAGS": MaskAccessFlags, "PKEY_INDEX": MaskPKeyIndex, "PORT": MaskPort,
	"QKEY": MaskQKey, "AV": MaskAV, "PATH_MTU": MaskPathMTU, "TIMEOUT": MaskTimeout,
	"RETRY_CNT": MaskRetryCnt, "RNR_RETRY": MaskRNRRetry, "RQ_PSN": MaskRQPSN,
	"MAX_QP_RD_ATOMIC": MaskMaxQPRdAtomic, "ALT_PATH": MaskAltPath,
	"MIN_RNR_TIMER": MaskMinRNRTimer, "SQ_PSN": MaskSQPSN,
	"MAX_DEST_RD_ATOMIC": MaskMaxDestRdAtomic, "PATH_MIG_STATE": MaskPathMigState,
	"CAP": MaskCap, "DEST_QPN": MaskDestQPN, "RATE_LIMIT": MaskRateLimit,
}

var goState = map[string]State{
	"RESET": Reset, "INIT": Init, "RTR": RTR, "RTS": RTS, "SQD": SQD, "SQE": SQE, "ERR": Err,
}

var wantState = map[string]uint8{
	"RESET": 0, "INIT": 1, "RTR": 2, "RTS": 3, "SQD": 4, "SQE": 5, "ERR": 6,
}

var goType = map[string]QPType{"RC": RC, "UC": UC, "UD": UD}
var wantType = map[string]uint8{"RC": 2, "UC": 3, "UD": 4}

var goAccess = map[string]Access{
	"LOCAL_WRITE": AccessLocalWrite, "REMOTE_WRITE": AccessRemoteWrite,
	"REMOTE_READ": AccessRemoteRead, "REMOTE_ATOMIC": AccessRemoteAtomic,
	"MW_BIND": AccessMWBind, "ZERO_BASED": AccessZeroBased, "ON_DEMAND": AccessOnDemand,
	"HUGETLB": AccessHugeTLB, "RELAXED_ORDERING": AccessRelaxedOrdering,
}
var wantAccess = map[string]uint32{
	"LOCAL_WRITE": 1, "REMOTE_WRITE": 2, "REMOTE_READ": 4, "REMOTE_ATOMIC": 8,
	"MW_BIND": 16, "ZERO_BASED": 32, "ON_DEMAND": 64, "HUGETLB": 128,
	"RELAXED_ORDERING": 1 << 20,
}

var goMTU = map[string]rdma.MTU{"256": rdma.MTU256, "512": rdma.MTU512, "1024": rdma.MTU1024, "2048": rdma.MTU2048, "4096": rdma.MTU4096}
var wantMTU = map[string]uint8{"256": 1, "512": 2, "1024": 3, "2048": 4, "4096": 5}

var goMig = map[string]MigState{"MIGRATED": Migrated, "REARM": Rearm, "ARMED": Armed}
var wantMig = map[string]uint8{"MIGRATED": 0, "REARM": 1, "ARMED": 2}

func TestPinnedValues(t *testing.T) {
	if len(goMask) != len(wantMaskBits) {
		t.Fatalf("%d mask constants, %d pinned", len(goMask), len(wantMaskBits))
	}
	for name, want := range wantMaskBits {
		if got := goMask[name]; got != want {
			t.Errorf("IB_QP_%s = %#x, want %#x", name, uint32(got), uint32(want))
		}
	}
	for name, want := range wantState {
		if got := goState[name]; uint8(got) != want {
			t.Errorf("IBV_QPS_%s = %d, want %d", name, got, want)
		}
	}
	for name, want := range wantType {
		if got := goType[name]; uint8(got) != want {
			t.Errorf("IBV_QPT_%s = %d, want %d", name, got, want)
		}
	}
	if GSI != 1 {
		t.Errorf("IB_QPT_GSI = %d, want 1 (kernel enum ib_qp_type)", GSI)
	}
	for name, want := range wantAccess {
		if got := goAccess[name]; uint32(got) != want {
			t.Errorf("IBV_ACCESS_%s = %#x, want %#x", name, uint32(got), want)
		}
	}
	for name, want := range wantMTU {
		if got := goMTU[name]; uint8(got) != want {
			t.Errorf("IBV_MTU_%s = %d, want %d", name, got, want)
		}
	}
	for name, want := range wantMig {
		if got := goMig[name]; uint8(got) != want {
			t.Errorf("IBV_MIG_%s = %d, want %d", name, got, want)
		}
	}
	if MaskLegacy != MaskDestQPN<<1-1 {
		t.Errorf("MaskLegacy = %#x, want STATE..DEST_QPN", uint32(MaskLegacy))
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{Reset.String(), "RESET"},
		{Init.String(), "INIT"},
		{RTR.String(), "RTR"},
		{RTS.String(), "RTS"},
		{SQD.String(), "SQD"},
		{SQE.String(), "SQE"},
		{Err.String(), "ERR"},
		{State(7).String(), "State(7)"},
		{RC.String(), "RC"},
		{UC.String(), "UC"},
		{UD.String(), "UD"},
		{GSI.String(), "GSI"},
		{QPType(9).String(), "QPType(9)"},
		{Mask(0).String(), "0"},
		{(MaskState | MaskAV | MaskDestQPN).String(), "STATE|AV|DEST_QPN"},
		{(MaskRateLimit | 1<<21).String(), "0x200000|RATE_LIMIT"},
		{Access(0).String(), "0"},
		{(AccessRemoteWrite | AccessRemoteRead).String(), "REMOTE_WRITE|REMOTE_READ"},
		{(AccessRelaxedOrdering | 1<<30).String(), "RELAXED_ORDERING|0x40000000"},
		{rdma.MTU1024.String(), "1024"},
		{rdma.MTU(0).String(), "MTU(0)"},
		{Migrated.String(), "MIGRATED"},
		{Rearm.String(), "REARM"},
		{Armed.String(), "ARMED"},
		{MigState(3).String(), "MigState(3)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	// Every named bit round-trips through Names.
	for name, bit := range goMask {
		if got := bit.Names(); len(got) != 1 || got[0] != name {
			t.Errorf("Mask(%#x).Names() = %v, want [%s]", uint32(bit), got, name)
		}
	}
	all := Mask(0)
	for _, bit := range goMask {
		all |= bit
	}
	if got := len(strings.Split(all.String(), "|")); got != len(goMask) {
		t.Errorf("all-bits String has %d names, want %d", got, len(goMask))
	}
}

func TestMTU(t *testing.T) {
	for name, m := range goMTU {
		if got := m.String(); got != name {
			t.Errorf("%d.String() = %q, want %q", m, got, name)
		}
		back, ok := rdma.MTUFromBytes(m.Bytes())
		if !ok || back != m {
			t.Errorf("MTUFromBytes(%d) = %v, %v; want %v", m.Bytes(), back, ok, m)
		}
	}
	if rdma.MTU256.Bytes() != 256 || rdma.MTU4096.Bytes() != 4096 {
		t.Errorf("Bytes: 256→%d 4096→%d", rdma.MTU256.Bytes(), rdma.MTU4096.Bytes())
	}
	for _, m := range []rdma.MTU{0, 6, 255} {
		if m.Valid() || m.Bytes() != 0 {
			t.Errorf("MTU(%d): Valid=%v Bytes=%d, want false, 0", m, m.Valid(), m.Bytes())
		}
	}
	for _, n := range []int{0, 255, 300, 1500, 8192, -1} {
		if m, ok := rdma.MTUFromBytes(n); ok {
			t.Errorf("MTUFromBytes(%d) = %v, want not ok", n, m)
		}
	}
}
