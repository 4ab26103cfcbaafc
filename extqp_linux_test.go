package rdmacm

import (
	"context"
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/uverbs"
)

// The host half of the caller's QP: argument checks, the option, and
// that an endpoint without its own CQs refuses its own waits.
func TestExternalQPHost(t *testing.T) {
	ctx := context.Background()
	if _, err := DialQP(ctx, "192.0.2.1:1", nil, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DialQP(nil): %v", err)
	}
	if _, err := (&Listener{}).AcceptQP(ctx, nil, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("AcceptQP(nil): %v", err)
	}
	c, err := (&EndpointOptions{ErrorQPOnClose: true}).config()
	if err != nil || !c.errQPOnClose {
		t.Fatalf("config: %v %+v", err, c)
	}
	if c, _ := (*EndpointOptions)(nil).config(); c.errQPOnClose {
		t.Fatal("ErrorQPOnClose on by default")
	}
	// A failing NewQPFunc fails the attach with its error.
	want := errors.New("no QP today")
	ep := &Endpoint{newQP: NewQPFunc(func(*uverbs.PD) (*uverbs.QP, error) { return nil, want }).withData()}
	if err := ep.attachQP(nil, nil); !errors.Is(err, want) || ep.extQP {
		t.Fatalf("attachQP: %v (ext %v)", err, ep.extQP)
	}
	ep.newQP = NewQPFunc(func(*uverbs.PD) (*uverbs.QP, error) { return nil, nil }).withData()
	if err := ep.attachQP(nil, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("attachQP of no QP: %v", err)
	}
}
