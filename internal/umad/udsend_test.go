//go:build linux

package umad

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/uverbs"
)

// A device without a uverbs node gives an error (the user backend then
// keeps sending through umad), naming what is missing.
func TestNewUDSendWithoutVerbsDevice(t *testing.T) {
	_, err := NewUDSend(nil, uverbs.Device{Name: "rxe9"}, 1)
	if !errors.Is(err, uverbs.ErrNoDevice) || !strings.Contains(err.Error(), "UD sends") || !strings.Contains(err.Error(), "rxe9") {
		t.Fatalf("NewUDSend without a uverbs node: %v", err)
	}
	_, err = NewUDSend(nil, uverbs.Device{Name: "rxe9", Verbs: uverbs.CharDev{Name: "uverbs9", Path: "/nonexistent/uverbs9"}}, 1)
	if !errors.Is(err, uverbs.ErrNoDevice) {
		t.Fatalf("NewUDSend on a missing node: %v", err)
	}
}
