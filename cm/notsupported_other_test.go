//go:build !linux

package cm

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// Off Linux, Open fails with ErrNotSupported on every backend, with or
// without a trace, saying so.
func TestNotSupportedOffLinux(t *testing.T) {
	want := "not supported on " + runtime.GOOS
	for _, b := range []Backend{BackendAuto, BackendKernel, BackendUser} {
		for _, o := range []*Options{nil, {Backend: b}, {Backend: b, Trace: io.Discard}} {
			ch, err := Open(o)
			if ch != nil || !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), want) {
				t.Errorf("Open(%+v): %v, %v: want an ErrNotSupported error saying %q", o, ch, err, want)
			}
		}
	}
}
