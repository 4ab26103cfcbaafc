package qp

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

func TestAckTimeout(t *testing.T) {
	// Worked by hand from cm_ack_timeout: log2(2^ackDelay + 2×2^lifetime),
	// rounded up when the smaller term is within half of the larger.
	tests := []struct{ ackDelay, lifetime, want uint8 }{
		{0, 0, 2},
		{15, 14, 16},
		{16, 15, 17}, // 2^16 + 2^16 = 2^17 exactly
		{15, 18, 19},
		{10, 17, 18},
		{20, 10, 20},
		{20, 18, 21},
		{31, 31, 31}, // capped
		{0, 31, 31},
		{255, 0, 31},
	}
	for _, tt := range tests {
		if got := AckTimeout(tt.ackDelay, tt.lifetime); got != tt.want {
			t.Errorf("AckTimeout(%d, %d) = %d, want %d", tt.ackDelay, tt.lifetime, got, tt.want)
		}
	}
	for _, tt := range []struct{ in, want uint8 }{{0, 1}, {1, 1}, {14, 14}, {31, 31}} {
		if got := TimeoutFromREQ(tt.in); got != tt.want {
			t.Errorf("TimeoutFromREQ(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

var testDGID = [16]byte{0: 0xfe, 1: 0x80, 15: 0x42}

func roceParams() CMParams {
	return CMParams{
		Port: 1, PKeyIndex: 3,
		Path: Path{
			PathRecord: rdma.PathRecord{DGID: testDGID, HopLimit: 64, TrafficClass: 0x10, FlowLabel: 0x12345, SL: 3, MTU: rdma.MTU1024},
			SGIDIndex:  2,
			RoCE:       true,
		},
		RemoteQPN: 0x11, LocalPSN: 0xabcdef, RemotePSN: 0x123456,
		AckTimeout: 18, RetryCount: 6, RNRRetryCount: 7,
		InitiatorDepth: 4, ResponderResources: 8, QKey: 0x01234567,
	}
}

// Masks as plain numbers, the form the kernel's INIT_QP_ATTR returns them
// (cm_init_qp_*_attr, cma_ib_init_qp_attr, cma_init_ud_qp).
func TestCMMasks(t *testing.T) {
	type build func(CMParams, QPType) (Attr, Mask, error)
	p := roceParams()
	alt := roceParams()
	alt.Path.RoCE = false
	alt.Path.DLID = 7
	alt.Alt = &CMAltPath{Path: Path{PathRecord: rdma.PathRecord{DLID: 9, MTU: rdma.MTU1024}}, Port: 2, PKeyIndex: 1, AckTimeout: 14}
	tests := []struct {
		name string
		f    build
		p    CMParams
		ty   QPType
		want Mask
	}{
		{"RC INIT", InitAttr, p, RC, 0x39},
		{"UC INIT", InitAttr, p, UC, 0x39},
		{"UD INIT", InitAttr, p, UD, 0x71},
		{"RC INIT before CM", InitAttrBeforeCM, p, RC, 0x39},
		{"UD INIT before CM", InitAttrBeforeCM, p, UD, 0x71},
		{"RC RTR", RTRAttr, p, RC, 0x129181},
		{"UC RTR", RTRAttr, p, UC, 0x101181},
		{"UD RTR", RTRAttr, p, UD, 0x1},
		{"RC RTS", RTSAttr, p, RC, 0x12e01},
		{"UC RTS", RTSAttr, p, UC, 0x10001},
		{"UD RTS", RTSAttr, p, UD, 0x10001},
		{"RC RTR alt", RTRAttr, alt, RC, 0x12d181},
		{"UC RTR alt", RTRAttr, alt, UC, 0x105181},
		{"RC RTS alt", RTSAttr, alt, RC, 0x52e01},
		{"UC RTS alt", RTSAttr, alt, UC, 0x50001},
		{"RC load alt path", AltPathAttr, alt, RC, 0x44000},
		{"UC load alt path", AltPathAttr, alt, UC, 0x44000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, m, err := tt.f(tt.p, tt.ty)
			if err != nil {
				t.Fatal(err)
			}
			if m != tt.want {
				t.Fatalf("mask %v (%#x), want %v (%#x)", m, uint32(m), tt.want, uint32(tt.want))
			}
			// The result passes the state table for its own transition;
			// loading an alternate path is RTS→RTS.
			from := map[State]State{Init: Reset, RTR: Init, RTS: RTR}[a.State]
			if m&MaskState == 0 {
				from = RTS
			}
			if err := Check(tt.ty, from, &a, m); err != nil {
				t.Fatalf("Check: %v", err)
			}
		})
	}
}

func TestCMValues(t *testing.T) {
	p := roceParams()

	a, _, err := InitAttr(p, RC)
	if err != nil {
		t.Fatal(err)
	}
	want := Attr{State: Init, PKeyIndex: 3, Port: 1, AccessFlags: AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic}
	if a != want {
		t.Errorf("RC INIT = %+v, want %+v", a, want)
	}
	noRead := p
	noRead.ResponderResources = 0
	if a, _, _ := InitAttr(noRead, RC); a.AccessFlags != AccessRemoteWrite {
		t.Errorf("RC INIT without responder resources: access %v, want REMOTE_WRITE", a.AccessFlags)
	}
	if a, _, _ := InitAttrBeforeCM(p, UC); a.AccessFlags != 0 || a.Port != 1 || a.PKeyIndex != 3 {
		t.Errorf("UC INIT before CM = %+v", a)
	}
	if a, _, _ := InitAttr(p, UD); a != (Attr{State: Init, PKeyIndex: 3, Port: 1, QKey: 0x01234567}) {
		t.Errorf("UD INIT = %+v", a)
	}

	a, _, err = RTRAttr(p, RC)
	if err != nil {
		t.Fatal(err)
	}
	want = Attr{
		State: RTR,
		AH: AH{PortNum: 1, SL: 3, IsGlobal: true,
			GRH: GRH{DGID: testDGID, FlowLabel: 0x12345, SGIDIndex: 2, HopLimit: 64, TrafficClass: 0x10}},
		PathMTU: rdma.MTU1024, DestQPN: 0x11, RQPSN: 0xabcdef, MaxDestRdAtomic: 8, MinRNRTimer: 0,
	}
	if a != want {
		t.Errorf("RC RTR =\n%+v\nwant\n%+v", a, want)
	}

	// An IB path inside the subnet (hop limit 0) has no GRH.
	ib := p
	ib.Path = Path{PathRecord: rdma.PathRecord{DGID: testDGID, DLID: 0x20, SL: 2, Rate: 7, MTU: rdma.MTU4096}, SrcPathBits: 1}
	a, _, _ = RTRAttr(ib, UC)
	if a.AH != (AH{DLID: 0x20, SrcPathBits: 1, SL: 2, StaticRate: 7, PortNum: 1}) {
		t.Errorf("IB AH = %+v", a.AH)
	}
	if a.MaxDestRdAtomic != 0 || a.MinRNRTimer != 0 || a.PathMTU != rdma.MTU4096 {
		t.Errorf("UC RTR = %+v", a)
	}

	a, _, _ = RTSAttr(p, RC)
	want = Attr{State: RTS, SQPSN: 0x123456, Timeout: 18, RetryCnt: 6, RNRRetry: 7, MaxRdAtomic: 4}
	if a != want {
		t.Errorf("RC RTS = %+v, want %+v", a, want)
	}
	if a, _, _ := RTSAttr(p, UD); a != (Attr{State: RTS}) {
		t.Errorf("UD RTS = %+v, want PSN 0", a)
	}

	alt := p
	alt.Alt = &CMAltPath{Path: Path{PathRecord: rdma.PathRecord{DLID: 9, SL: 1, MTU: rdma.MTU1024}}, Port: 2, PKeyIndex: 5, AckTimeout: 14}
	a, _, _ = RTRAttr(alt, RC)
	if a.AltPath != (AltPath{AH: AH{DLID: 9, SL: 1, PortNum: 2}, PKeyIndex: 5, PortNum: 2, Timeout: 14}) {
		t.Errorf("alt path = %+v", a.AltPath)
	}
	a, _, _ = RTSAttr(alt, UC)
	if a.PathMigState != Rearm {
		t.Errorf("RTS with alt path: mig state %v, want REARM", a.PathMigState)
	}
}

func TestCMErrors(t *testing.T) {
	type build func(CMParams, QPType) (Attr, Mask, error)
	mod := func(f func(*CMParams)) CMParams {
		p := roceParams()
		f(&p)
		return p
	}
	tests := []struct {
		name string
		f    build
		p    CMParams
		ty   QPType
		want error
	}{
		{"GSI INIT", InitAttr, roceParams(), GSI, ErrUnknownType},
		{"raw RTR", RTRAttr, roceParams(), QPType(8), ErrUnknownType},
		{"GSI RTS", RTSAttr, roceParams(), GSI, ErrUnknownType},
		{"UD before CM GSI", InitAttrBeforeCM, roceParams(), GSI, ErrUnknownType},
		{"UD alt path", AltPathAttr, roceParams(), UD, ErrUnknownType},
		{"no alt path", AltPathAttr, roceParams(), RC, ErrInvalidArgument},
		{"port 0", InitAttr, mod(func(p *CMParams) { p.Port = 0 }), RC, ErrInvalidArgument},
		{"UD port 0", InitAttr, mod(func(p *CMParams) { p.Port = 0 }), UD, ErrInvalidArgument},
		{"wide QPN", RTRAttr, mod(func(p *CMParams) { p.RemoteQPN = 1 << 24 }), RC, ErrInvalidArgument},
		{"wide local PSN", RTRAttr, mod(func(p *CMParams) { p.LocalPSN = 1 << 24 }), UC, ErrInvalidArgument},
		{"no MTU", RTRAttr, mod(func(p *CMParams) { p.Path.MTU = 0 }), RC, ErrInvalidArgument},
		{"SL 16", RTRAttr, mod(func(p *CMParams) { p.Path.SL = 16 }), RC, ErrInvalidArgument},
		{"RNR timer 32", RTRAttr, mod(func(p *CMParams) { p.MinRNRTimer = 32 }), RC, ErrInvalidArgument},
		{"wide remote PSN", RTSAttr, mod(func(p *CMParams) { p.RemotePSN = 1 << 24 }), RC, ErrInvalidArgument},
		{"retry 8", RTSAttr, mod(func(p *CMParams) { p.RetryCount = 8 }), RC, ErrInvalidArgument},
		{"RNR retry 8", RTSAttr, mod(func(p *CMParams) { p.RNRRetryCount = 8 }), RC, ErrInvalidArgument},
		{"timeout 32", RTSAttr, mod(func(p *CMParams) { p.AckTimeout = 32 }), RC, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, m, err := tt.f(tt.p, tt.ty)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if a != (Attr{}) || m != 0 {
				t.Errorf("failed build returned %+v, %v", a, m)
			}
		})
	}
	// Fields a type does not use are not checked: UC ignores the RNR timer.
	if _, _, err := RTRAttr(mod(func(p *CMParams) { p.MinRNRTimer = 32 }), UC); err != nil {
		t.Errorf("UC RTR with unused RNR timer: %v", err)
	}
}

// A QP walks the usual life cycle; every step passes Check.
func TestLifeCycle(t *testing.T) {
	p := roceParams()
	for _, ty := range []QPType{RC, UC, UD} {
		cur := Reset
		step := func(a Attr, m Mask, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%v from %v: %v", ty, cur, err)
			}
			if err := Check(ty, cur, &a, m); err != nil {
				t.Fatalf("%v %v→%v: %v", ty, cur, a.State, err)
			}
			if m&MaskState != 0 {
				cur = a.State
			}
		}
		step(InitAttrBeforeCM(p, ty))
		step(InitAttr(p, ty)) // INIT→INIT refresh, as cma_modify_qp_rtr does
		step(RTRAttr(p, ty))
		step(RTSAttr(p, ty))
		step(Attr{State: SQD, EnSQDAsyncNotify: true}, MaskState|MaskEnSQDAsyncNotify, nil)
		step(Attr{State: RTS}, MaskState, nil)
		step(Attr{State: Err}, MaskState, nil)
		step(Attr{State: Reset}, MaskState, nil)
		if cur != Reset {
			t.Fatalf("%v ended in %v", ty, cur)
		}
	}
}
