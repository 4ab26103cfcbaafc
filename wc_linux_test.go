package rdmacm

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/uverbs"
)

func TestWCErr(t *testing.T) {
	if err := (WC{}).Err(); err != nil {
		t.Fatalf("success: %v", err)
	}
	for _, c := range []struct {
		s    WCStatus
		want error
	}{
		{WCRetryExcErr, ErrTimeout},
		{WCRNRRetryExcErr, ErrTimeout},
		{WCRemAccessErr, ErrPermission},
		{WCLocProtErr, ErrPermission},
		{WCLocAccessErr, ErrPermission},
		{WCLocLenErr, ErrInvalidArgument},
		{WCRemInvReqErr, ErrInvalidArgument},
		{WCWRFlushErr, ErrDisconnected},
		{WCGeneralErr, nil},
		{WCRemOpErr, nil},
	} {
		wc := wcOf(uverbs.WC{ID: 42, Status: c.s, VendorErr: 0x81})
		err := wc.Err()
		if !errors.Is(err, ErrCompletion) {
			t.Errorf("%v: %v does not match ErrCompletion", c.s, err)
		}
		var we *WCError
		if !errors.As(err, &we) || we.Status != c.s || we.ID != 42 || we.VendorErr != 0x81 {
			t.Errorf("%v: %#v", c.s, err)
		}
		// The error a wait returns and WC.Err match both ways.
		if again := wc.Err(); !errors.Is(err, again) || !errors.Is(again, err) {
			t.Errorf("%v: two WC.Err values do not match each other", c.s)
		}
		if other := (WC{ID: 43, Status: wc.Status}).Err(); errors.Is(err, other) {
			t.Errorf("%v: the error of another work request matches", c.s)
		}
		for _, s := range []error{ErrTimeout, ErrPermission, ErrInvalidArgument, ErrDisconnected, ErrClosed} {
			if got := errors.Is(err, s); got != (s == c.want) {
				t.Errorf("%v: errors.Is(%v) = %v", c.s, s, got)
			}
		}
		if name := c.s.String(); name == "" || strings.HasPrefix(name, "WCStatus(") {
			t.Errorf("%d: String %q", uint32(c.s), name)
		}
	}
	w := wcOf(uverbs.WC{Opcode: WCRecvRDMAWithImm, Flags: uverbs.WCWithImm, Imm: 7, ByteLen: 3, QPNum: 9})
	if !w.HasImm || w.Imm != 7 || w.Opcode != WCRecvRDMAWithImm || w.ByteLen != 3 || w.QPNum != 9 {
		t.Errorf("wcOf: %+v", w)
	}
}
