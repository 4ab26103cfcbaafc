package rdmacm

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func TestWrapErr(t *testing.T) {
	inner := fmt.Errorf("cm: CreateQP: modify QP to INIT: uverbs: modify QP 0x11 on rxe0: %w", syscall.EINVAL)
	err := wrapErr("dial 192.0.2.1:7471", fmt.Errorf("rdmacm: %w", inner))
	want := "rdmacm: dial 192.0.2.1:7471: CreateQP: modify QP to INIT: modify QP 0x11 on rxe0: invalid argument"
	if err.Error() != want {
		t.Fatalf("got  %q\nwant %q", err, want)
	}
	if !errors.Is(err, syscall.EINVAL) || !errors.Is(err, inner) {
		t.Fatal("the chain is lost")
	}
	if strings.Count(err.Error(), ": cm: ") != 0 || wrapErr("x", nil) != nil {
		t.Fatal("prefix kept, or nil wrapped")
	}
	// A word that ends in a prefix is not one.
	if got := stripPrefixes("rdmacm: state: rdmacm: x"); got != "state: x" {
		t.Fatalf("stripPrefixes: %q", got)
	}
}
