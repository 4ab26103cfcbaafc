package rdmacm

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/uverbs"
)

func TestWCErr(t *testing.T) {
	if err := (WC{}).Err(); err != nil {
		t.Fatalf("success: %v", err)
	}
	for _, c := range []struct {
		s    uverbs.WCStatus
		want error
	}{
		{uverbs.WCRetryExcErr, ErrTimeout},
		{uverbs.WCRNRRetryExcErr, ErrTimeout},
		{uverbs.WCRemAccessErr, ErrPermission},
		{uverbs.WCLocProtErr, ErrPermission},
		{uverbs.WCLocAccessErr, ErrPermission},
		{uverbs.WCLocLenErr, ErrInvalidArgument},
		{uverbs.WCRemInvReqErr, ErrInvalidArgument},
		{uverbs.WCWRFlushErr, ErrDisconnected},
		{uverbs.WCGeneralErr, nil},
		{uverbs.WCRemOpErr, nil},
	} {
		err := WC{uverbs.WC{ID: 42, Status: c.s, VendorErr: 0x81}}.Err()
		if !errors.Is(err, ErrCompletion) {
			t.Errorf("%v: %v does not match ErrCompletion", c.s, err)
		}
		var we *WCError
		if !errors.As(err, &we) || we.Status != c.s || we.ID != 42 || we.VendorErr != 0x81 {
			t.Errorf("%v: %#v", c.s, err)
		}
		for _, s := range []error{ErrTimeout, ErrPermission, ErrInvalidArgument, ErrDisconnected, ErrClosed} {
			if got := errors.Is(err, s); got != (s == c.want) {
				t.Errorf("%v: errors.Is(%v) = %v", c.s, s, got)
			}
		}
	}
}
