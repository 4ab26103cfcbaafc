//go:build !linux

package uverbs

import (
	"errors"
	"runtime"
	"strings"
	"testing"
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
	_, err := Devices()
	check("Devices", err)
	_, err = Open("")
	check("Open", err)
	_, err = OpenDevice(Device{Name: "rxe0"}, nil)
	check("OpenDevice", err)
	_, err = AllocBuffer(4096)
	check("AllocBuffer", err)
	_, err = AllocBufferAt(1<<40, 4096)
	check("AllocBufferAt", err)
}
