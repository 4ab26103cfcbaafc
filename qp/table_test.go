package qp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// tableSpec is a second, independent transcription of Linux qp_state_table
// (drivers/infiniband/core/verbs.c) for RC, UC, UD and GSI:
// "FROM TO TYPES [req NAMES...] [opt NAMES...]", TYPES "*" for all four.
// A pair with no line is illegal.
const tableSpec = `
RESET RESET *
RESET INIT  RC,UC  req PKEY_INDEX PORT ACCESS_FLAGS
RESET INIT  UD     req PKEY_INDEX PORT QKEY
RESET INIT  GSI    req PKEY_INDEX QKEY
INIT  RESET *
INIT  ERR   *
INIT  INIT  RC,UC  opt PKEY_INDEX PORT ACCESS_FLAGS
INIT  INIT  UD     opt PKEY_INDEX PORT QKEY
INIT  INIT  GSI    opt PKEY_INDEX QKEY
INIT  RTR   RC     req AV PATH_MTU DEST_QPN RQ_PSN MAX_DEST_RD_ATOMIC MIN_RNR_TIMER opt ALT_PATH ACCESS_FLAGS PKEY_INDEX
INIT  RTR   UC     req AV PATH_MTU DEST_QPN RQ_PSN opt ALT_PATH ACCESS_FLAGS PKEY_INDEX
INIT  RTR   UD,GSI opt PKEY_INDEX QKEY
RTR   RESET *
RTR   ERR   *
RTR   RTS   RC     req TIMEOUT RETRY_CNT RNR_RETRY SQ_PSN MAX_QP_RD_ATOMIC opt CUR_STATE ALT_PATH ACCESS_FLAGS MIN_RNR_TIMER PATH_MIG_STATE
RTR   RTS   UC     req SQ_PSN opt CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE
RTR   RTS   UD,GSI req SQ_PSN opt CUR_STATE QKEY
RTS   RESET *
RTS   ERR   *
RTS   RTS   RC     opt CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE MIN_RNR_TIMER
RTS   RTS   UC     opt CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE
RTS   RTS   UD,GSI opt CUR_STATE QKEY
RTS   SQD   *      opt EN_SQD_ASYNC_NOTIFY
SQD   RESET *
SQD   ERR   *
SQD   RTS   RC     opt CUR_STATE ALT_PATH ACCESS_FLAGS MIN_RNR_TIMER PATH_MIG_STATE
SQD   RTS   UC     opt CUR_STATE ALT_PATH ACCESS_FLAGS PATH_MIG_STATE
SQD   RTS   UD,GSI opt CUR_STATE QKEY
SQD   SQD   RC     opt PORT AV TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC MAX_DEST_RD_ATOMIC ALT_PATH ACCESS_FLAGS PKEY_INDEX MIN_RNR_TIMER PATH_MIG_STATE
SQD   SQD   UC     opt AV ALT_PATH ACCESS_FLAGS PKEY_INDEX PATH_MIG_STATE
SQD   SQD   UD,GSI opt PKEY_INDEX QKEY
SQE   RESET *
SQE   ERR   *
SQE   RTS   RC
SQE   RTS   UC     opt CUR_STATE ACCESS_FLAGS
SQE   RTS   UD,GSI opt CUR_STATE QKEY
ERR   RESET *
ERR   ERR   *
`

type specKey struct {
	t        QPType
	from, to State
}

type specAttrs struct{ req, opt Mask }

func parseSpec(t *testing.T) map[specKey]specAttrs {
	t.Helper()
	types := map[string]QPType{"RC": RC, "UC": UC, "UD": UD, "GSI": GSI}
	spec := map[specKey]specAttrs{}
	for _, line := range strings.Split(strings.TrimSpace(tableSpec), "\n") {
		f := strings.Fields(line)
		from, ok1 := goState[f[0]]
		to, ok2 := goState[f[1]]
		if !ok1 || !ok2 || len(f) < 3 {
			t.Fatalf("bad spec line %q", line)
		}
		var attrs specAttrs
		dst := (*Mask)(nil)
		for _, w := range f[3:] {
			switch w {
			case "req":
				dst = &attrs.req
			case "opt":
				dst = &attrs.opt
			default:
				bit, ok := wantMaskBits[w]
				if !ok || dst == nil {
					t.Fatalf("bad name %q in %q", w, line)
				}
				*dst |= bit
			}
		}
		var ts []QPType
		if f[2] == "*" {
			ts = Types()
		} else {
			for _, name := range strings.Split(f[2], ",") {
				ts = append(ts, types[name])
			}
		}
		for _, ty := range ts {
			k := specKey{ty, from, to}
			if _, dup := spec[k]; dup {
				t.Fatalf("duplicate spec for %v", k)
			}
			spec[k] = attrs
		}
	}
	// Linux's validity is per transition: a legal pair is legal for all types.
	for k := range spec {
		for _, ty := range Types() {
			if _, ok := spec[specKey{ty, k.from, k.to}]; !ok {
				t.Fatalf("spec has %v→%v for %v but not %v", k.from, k.to, k.t, ty)
			}
		}
	}
	return spec
}

// Case filters for forEachCase.
var (
	allCases     = func(bool, specAttrs) bool { return true }
	legalCases   = func(legal bool, _ specAttrs) bool { return legal }
	illegalCases = func(legal bool, _ specAttrs) bool { return !legal }
	requiredSets = func(legal bool, a specAttrs) bool { return legal && a.req != 0 }
)

// forEachCase runs f as a subtest for every QP type and every ordered pair
// of states that the filter keeps, and fails if it keeps none.
func forEachCase(t *testing.T, keep func(bool, specAttrs) bool, f func(t *testing.T, k specKey, a specAttrs, legal bool)) {
	spec := parseSpec(t)
	n := 0
	for _, ty := range Types() {
		for _, from := range States() {
			for _, to := range States() {
				k := specKey{ty, from, to}
				a, ok := spec[k]
				if !keep(ok, a) {
					continue
				}
				n++
				t.Run(fmt.Sprintf("%v/%v-%v", ty, from, to), func(t *testing.T) { f(t, k, a, ok) })
			}
		}
	}
	if n == 0 {
		t.Fatal("no cases")
	}
}

func TestLegalPairs(t *testing.T) {
	spec := parseSpec(t)
	n := 0
	for _, from := range States() {
		for _, to := range States() {
			_, want := spec[specKey{RC, from, to}]
			if got := Legal(from, to); got != want {
				t.Errorf("Legal(%v, %v) = %v, want %v", from, to, got, want)
			}
			if want {
				n++
			}
		}
	}
	if n != 22 {
		t.Errorf("%d legal transitions, want 22", n)
	}
	for _, s := range []State{7, 255} {
		if Legal(s, Reset) || Legal(Reset, s) {
			t.Errorf("Legal with state %d", s)
		}
	}
}

func TestParams(t *testing.T) {
	forEachCase(t, allCases, func(t *testing.T, k specKey, a specAttrs, legal bool) {
		req, opt, ok := Params(k.t, k.from, k.to)
		if ok != legal || req != a.req || opt != a.opt {
			t.Fatalf("Params = %v / %v / %v, want %v / %v / %v", req, opt, ok, a.req, a.opt, legal)
		}
	})
	if _, _, ok := Params(QPType(8), Reset, Init); ok {
		t.Error("Params accepted raw packet QP type")
	}
}

func TestValidateLegal(t *testing.T) {
	forEachCase(t, legalCases, func(t *testing.T, k specKey, a specAttrs, _ bool) {
		for _, m := range []Mask{a.req, a.req | a.opt} {
			if err := Validate(k.t, k.from, k.to, MaskState|m); err != nil {
				t.Errorf("Validate(%v) = %v", MaskState|m, err)
			}
			// Without STATE the QP stays put: only same-state rows allow it.
			err := Validate(k.t, k.from, k.to, m)
			switch {
			case k.from == k.to && err != nil:
				t.Errorf("Validate(%v) without STATE = %v", m, err)
			case k.from != k.to:
				var te *TransitionError
				if !errors.As(err, &te) || te.Missing != MaskState || !errors.Is(err, ErrMissingAttr) {
					t.Errorf("Validate(%v) without STATE = %v, want missing STATE", m, err)
				}
			}
		}
	})
}

func TestValidateMissingOneAtATime(t *testing.T) {
	forEachCase(t, requiredSets, func(t *testing.T, k specKey, a specAttrs, _ bool) {
		for _, bit := range bitsOf(a.req) {
			mask := MaskState | (a.req|a.opt)&^bit
			err := Validate(k.t, k.from, k.to, mask)
			var te *TransitionError
			if !errors.As(err, &te) {
				t.Fatalf("drop %v: err = %v, want TransitionError", bit, err)
			}
			if te.Missing != bit || te.Forbidden != 0 || te.Illegal {
				t.Errorf("drop %v: %+v", bit, te)
			}
			if !errors.Is(err, ErrMissingAttr) || errors.Is(err, ErrForbiddenAttr) || errors.Is(err, ErrIllegalTransition) {
				t.Errorf("drop %v: sentinels wrong for %v", bit, err)
			}
			if !strings.Contains(err.Error(), "missing "+bit.String()) {
				t.Errorf("drop %v: message %q does not name it", bit, err)
			}
		}
	})
}

func TestValidateForbidden(t *testing.T) {
	forEachCase(t, legalCases, func(t *testing.T, k specKey, a specAttrs, _ bool) {
		allowed := a.req | a.opt | MaskState
		for b := range 32 {
			bit := Mask(1) << b
			if allowed&bit != 0 {
				continue
			}
			err := Validate(k.t, k.from, k.to, MaskState|a.req|bit)
			var te *TransitionError
			if !errors.As(err, &te) || te.Forbidden != bit || te.Missing != 0 {
				t.Fatalf("add %v: err = %v", bit, err)
			}
			if !errors.Is(err, ErrForbiddenAttr) || errors.Is(err, ErrMissingAttr) {
				t.Errorf("add %v: sentinels wrong for %v", bit, err)
			}
			if !strings.Contains(err.Error(), "not allowed "+bit.Names()[0]) {
				t.Errorf("add %v: message %q", bit, err)
			}
		}
	})
}

func TestValidateIllegal(t *testing.T) {
	forEachCase(t, illegalCases, func(t *testing.T, k specKey, _ specAttrs, _ bool) {
		for _, m := range []Mask{MaskState, ^Mask(0)} {
			err := Validate(k.t, k.from, k.to, m)
			if !errors.Is(err, ErrIllegalTransition) || errors.Is(err, ErrMissingAttr) || errors.Is(err, ErrForbiddenAttr) {
				t.Errorf("Validate(%v) = %v, want only ErrIllegalTransition", m, err)
			}
			want := fmt.Sprintf("qp: %v %v→%v: illegal transition", k.t, k.from, k.to)
			if err == nil || err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
		}
	})
}

// bitsOf splits m into its single-bit masks.
func bitsOf(m Mask) []Mask {
	var out []Mask
	for v := m; v != 0; v &= v - 1 {
		out = append(out, v&-v)
	}
	return out
}
