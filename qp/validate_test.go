package qp

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

func TestValidateMessage(t *testing.T) {
	err := Validate(RC, Init, RTR, MaskState)
	// Names come in bit order.
	want := "qp: RC INIT→RTR: missing AV, PATH_MTU, RQ_PSN, MIN_RNR_TIMER, MAX_DEST_RD_ATOMIC, DEST_QPN"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}

	err = Validate(UD, Reset, Init, MaskState|MaskPKeyIndex|MaskPort|MaskAccessFlags|MaskRateLimit)
	want = "qp: UD RESET→INIT: missing QKEY; not allowed ACCESS_FLAGS, RATE_LIMIT"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrMissingAttr) || !errors.Is(err, ErrForbiddenAttr) || errors.Is(err, ErrIllegalTransition) {
		t.Errorf("sentinels of %v", err)
	}
	if errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrUnknownType) {
		t.Errorf("%v matches an unrelated sentinel", err)
	}
	var te *TransitionError
	if !errors.As(err, &te) || te.Missing != MaskQKey || te.Forbidden != MaskAccessFlags|MaskRateLimit {
		t.Errorf("TransitionError = %+v", te)
	}
}

func TestValidateBadInputs(t *testing.T) {
	tests := []struct {
		name     string
		ty       QPType
		from, to State
		want     error
	}{
		{"raw packet type", QPType(8), Reset, Init, ErrUnknownType},
		{"type 0", QPType(0), Reset, Init, ErrUnknownType},
		{"from 7", RC, State(7), Err, ErrInvalidArgument},
		{"to 7", RC, Reset, State(7), ErrInvalidArgument},
		{"RESET→ERR", RC, Reset, Err, ErrIllegalTransition},
		{"RTR→RTR", UD, RTR, RTR, ErrIllegalTransition},
		{"RESET→RTS", UC, Reset, RTS, ErrIllegalTransition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(tt.ty, tt.from, tt.to, MaskState); !errors.Is(err, tt.want) {
				t.Fatalf("Validate = %v, want %v", err, tt.want)
			}
		})
	}
}

// The kernel reads the source state from attr.cur_qp_state when the mask
// has CUR_STATE, and stays in the current state without STATE.
func TestCheckStates(t *testing.T) {
	rts := &Attr{State: RTS, CurState: SQE}
	if err := Check(UD, RTS, rts, MaskState|MaskCurState); err != nil {
		t.Errorf("UD SQE→RTS with CUR_STATE: %v", err)
	}
	// CUR_STATE is not allowed from INIT.
	err := Check(RC, Init, &Attr{State: Init, CurState: Init}, MaskState|MaskCurState)
	if !errors.Is(err, ErrForbiddenAttr) {
		t.Errorf("INIT→INIT with CUR_STATE: %v, want ErrForbiddenAttr", err)
	}
	// No STATE: RTS→RTS. attr.State is ignored.
	if err := Check(RC, RTS, &Attr{State: Reset, MinRNRTimer: 12}, MaskMinRNRTimer); err != nil {
		t.Errorf("RTS modify without STATE: %v", err)
	}
	// No STATE in RTR is RTR→RTR, which is illegal.
	if err := Check(RC, RTR, &Attr{}, MaskMinRNRTimer); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("RTR modify without STATE: %v, want ErrIllegalTransition", err)
	}
	if err := Check(RC, Init, &Attr{State: 9}, MaskState); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("STATE 9: %v", err)
	}
	if err := Check(RC, Init, &Attr{State: Init, CurState: 9}, MaskState|MaskCurState); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("CUR_STATE 9: %v", err)
	}
	// nil reads as the zero Attr: State RESET.
	if err := Check(RC, Err, nil, MaskState); err != nil {
		t.Errorf("nil attr ERR→RESET: %v", err)
	}
}

func goodRTR() Attr {
	return Attr{
		State:   RTR,
		AH:      AH{PortNum: 1, SL: 15, GRH: GRH{FlowLabel: 1<<20 - 1}, IsGlobal: true},
		PathMTU: rdma.MTU4096, DestQPN: 1<<24 - 1, RQPSN: 1<<24 - 1,
		MaxDestRdAtomic: 16, MinRNRTimer: 31,
		AltPath: AltPath{AH: AH{PortNum: 2}, PortNum: 2, Timeout: 31},
	}
}

const rtrMask = MaskState | MaskAV | MaskPathMTU | MaskDestQPN | MaskRQPSN |
	MaskMaxDestRdAtomic | MaskMinRNRTimer | MaskAltPath

func TestCheckValues(t *testing.T) {
	base := goodRTR()
	if err := Check(RC, Init, &base, rtrMask); err != nil {
		t.Fatalf("good RTR: %v", err)
	}
	tests := []struct {
		field  string
		mutate func(*Attr)
	}{
		{"PATH_MTU", func(a *Attr) { a.PathMTU = 0 }},
		{"PATH_MTU", func(a *Attr) { a.PathMTU = 6 }},
		{"DEST_QPN", func(a *Attr) { a.DestQPN = 1 << 24 }},
		{"RQ_PSN", func(a *Attr) { a.RQPSN = 1 << 24 }},
		{"MIN_RNR_TIMER", func(a *Attr) { a.MinRNRTimer = 32 }},
		{"AV.PORT", func(a *Attr) { a.AH.PortNum = 0 }},
		{"AV.SL", func(a *Attr) { a.AH.SL = 16 }},
		{"AV.FLOW_LABEL", func(a *Attr) { a.AH.GRH.FlowLabel = 1 << 20 }},
		{"ALT_PATH.AV.PORT", func(a *Attr) { a.AltPath.AH.PortNum = 0; a.AltPath.PortNum = 0 }},
		{"ALT_PATH.AV.SL", func(a *Attr) { a.AltPath.AH.SL = 200 }},
		{"ALT_PATH.PORT", func(a *Attr) { a.AltPath.PortNum = 1 }},
		{"ALT_PATH.TIMEOUT", func(a *Attr) { a.AltPath.Timeout = 32 }},
	}
	for _, tt := range tests {
		a := goodRTR()
		tt.mutate(&a)
		err := Check(RC, Init, &a, rtrMask)
		var ve *ValueError
		if !errors.As(err, &ve) || ve.Field != tt.field || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v", tt.field, err)
		}
	}

	// Values outside the mask are not checked.
	a := goodRTR()
	a.AltPath.Timeout = 99
	if err := Check(RC, Init, &a, rtrMask&^MaskAltPath); err != nil {
		t.Errorf("unselected ALT_PATH checked: %v", err)
	}

	rts := Attr{State: RTS, Timeout: 31, RetryCnt: 7, RNRRetry: 7, SQPSN: 1<<24 - 1, PathMigState: Armed}
	rtsMask := MaskState | MaskTimeout | MaskRetryCnt | MaskRNRRetry | MaskSQPSN | MaskMaxQPRdAtomic | MaskPathMigState
	if err := Check(RC, RTR, &rts, rtsMask); err != nil {
		t.Fatalf("good RTS: %v", err)
	}
	rtsTests := []struct {
		field  string
		mutate func(*Attr)
	}{
		{"TIMEOUT", func(a *Attr) { a.Timeout = 32 }},
		{"RETRY_CNT", func(a *Attr) { a.RetryCnt = 8 }},
		{"RNR_RETRY", func(a *Attr) { a.RNRRetry = 8 }},
		{"SQ_PSN", func(a *Attr) { a.SQPSN = 0xffffffff }},
		{"PATH_MIG_STATE", func(a *Attr) { a.PathMigState = 3 }},
	}
	for _, tt := range rtsTests {
		a := rts
		tt.mutate(&a)
		var ve *ValueError
		if err := Check(RC, RTR, &a, rtsMask); !errors.As(err, &ve) || ve.Field != tt.field {
			t.Errorf("%s: got %v", tt.field, err)
		}
	}

	init := Attr{State: Init, Port: 0}
	err := Check(RC, Reset, &init, MaskState|MaskPort|MaskPKeyIndex|MaskAccessFlags)
	if want := "qp: PORT = 0, want 1..255"; err == nil || err.Error() != want {
		t.Errorf("port 0: %v, want %s", err, want)
	}
	a = goodRTR()
	a.AltPath.PortNum = 1
	err = Check(RC, Init, &a, rtrMask)
	if want := "qp: ALT_PATH.PORT = 1, want 2"; err == nil || err.Error() != want {
		t.Errorf("alt port: %v, want %s", err, want)
	}
}

// TestValueChecksTable keeps checkValues' table and attrValue in step:
// attrValue reads a different field for each bit.
func TestValueChecksTable(t *testing.T) {
	a := Attr{Port: 1, PathMTU: 2, Timeout: 3, RetryCnt: 4, RNRRetry: 5, RQPSN: 6, MinRNRTimer: 7, SQPSN: 8, PathMigState: 9, DestQPN: 10}
	seen := map[uint64]string{}
	for _, c := range valueChecks {
		v := attrValue(&a, c.bit)
		if prev, ok := seen[v]; ok || v == 0 {
			t.Errorf("%s: attrValue %d, as %q", c.name, v, prev)
		}
		seen[v] = c.name
	}
	p := Attr{State: Init, Port: 0}
	var ve *ValueError
	if err := Check(RC, Reset, &p, MaskState|MaskPKeyIndex|MaskPort|MaskAccessFlags); !errors.As(err, &ve) || ve.Field != "PORT" {
		t.Errorf("INIT with port 0: %v, want a PORT ValueError", err)
	}
}
