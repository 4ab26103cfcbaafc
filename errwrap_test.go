package rdmacm

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/internal/errfmt"
)

func TestWrapErr(t *testing.T) {
	inner := errfmt.Wrap("cm", "create QP", errfmt.Wrap("uverbs", "modify QP 0x11 to INIT on rxe0", syscall.EINVAL))
	err := wrapErr("dial 192.0.2.1:7471", inner)
	want := "rdmacm: dial 192.0.2.1:7471: create QP: modify QP 0x11 to INIT on rxe0: invalid argument"
	if err.Error() != want {
		t.Fatalf("got  %q\nwant %q", err, want)
	}
	if !errors.Is(err, syscall.EINVAL) || !errors.Is(err, inner) {
		t.Fatal("the chain is lost")
	}
	if strings.Contains(err.Error(), ": cm: ") || strings.Contains(err.Error(), "uverbs: ") || wrapErr("x", nil) != nil {
		t.Fatal("prefix kept, or nil wrapped")
	}
}
