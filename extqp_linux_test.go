package rdmacm

import "testing"

// The host half of the caller's QP: the options carry the Setup hook and
// ErrorQPOnClose, and a ConnSetup's private data replaces the options'.
func TestExternalQPHost(t *testing.T) {
	called := false
	setup := func(*Endpoint) (ConnSetup, error) { called = true; return ConnSetup{}, nil }
	c, err := (&EndpointOptions{ErrorQPOnClose: true, Setup: setup, PrivateData: []byte("opts")}).config()
	if err != nil || !c.errQPOnClose || c.setup == nil {
		t.Fatalf("config: %v %+v", err, c)
	}
	if c.setup(nil); !called {
		t.Fatal("config's setup is not the options'")
	}
	if c, _ := (*EndpointOptions)(nil).config(); c.errQPOnClose || c.setup != nil {
		t.Fatal("ErrorQPOnClose or a Setup by default")
	}
	if p := c.connParam(1); string(p.PrivateData) != "opts" {
		t.Fatalf("options' private data: %q", p.PrivateData)
	}
}
