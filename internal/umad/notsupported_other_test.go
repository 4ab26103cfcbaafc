//go:build !linux

package umad

import (
	"context"
	"errors"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Off Linux every entry point fails with ErrNotSupported, saying so.
func TestNotSupportedOffLinux(t *testing.T) {
	want := "not supported on " + runtime.GOOS
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an ErrNotSupported error saying %q", name, err, want)
		}
	}
	_, err := Open("/dev/infiniband/umad0")
	check("Open", err)
	_, err = FindDevice("rxe0", 1)
	check("FindDevice", err)
	_, _, err = LocalGID("rxe0", 1, netip.MustParseAddr("192.0.2.1"))
	check("LocalGID", err)
	_, err = NewUDSend(nil, uverbs.Device{Name: "rxe0"}, 1)
	check("NewUDSend", err)
	var p Port
	check("Port.Send", p.Send(engine.Addr{}, nil))
	_, _, err = p.Recv(context.Background(), nil)
	check("Port.Recv", err)
	check("Port.Close", p.Close())
}
