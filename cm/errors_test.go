package cm

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// sentinels are the shared sentinels cm returns.
var sentinels = []error{ErrNotSupported, ErrClosed, ErrNoDevice, ErrPermission, ErrNoRoute, ErrTimeout,
	ErrRejected, ErrInvalidState, ErrInvalidArgument, ErrBusy, ErrDisconnected}

// TestErrnoMappingShared proves that an errno means the same sentinel
// through cm (errnoError and event statuses), uverbs and rdma.ErrnoSentinel,
// and that the errno stays reachable.
func TestErrnoMappingShared(t *testing.T) {
	if ErrNotSupported != uverbs.ErrNotSupported || ErrNoDevice != uverbs.ErrNoDevice || ErrPermission != uverbs.ErrPermission ||
		ErrClosed != uverbs.ErrClosed || ErrInvalidArgument != uverbs.ErrInvalidArgument {
		t.Error("cm and uverbs re-export different sentinels")
	}
	for errno := syscall.Errno(1); errno < 256; errno++ {
		want := rdma.ErrnoSentinel(errno)
		ev := &Event{Type: EventRouteError, Status: -int32(errno)}
		for name, err := range map[string]error{
			"errnoError": errnoError("op", fmt.Errorf("detail: %w", errno)),
			"event":      ev.Err(),
		} {
			if !errors.Is(err, errno) {
				t.Errorf("%s(%v) = %v: errno not reachable", name, errno, err)
			}
			for _, s := range sentinels {
				if got := errors.Is(err, s); got != (s == want) && !(name == "event" && errno == syscall.ENODEV) {
					t.Errorf("%s(%d %v): errors.Is(%v) = %v, table says %v", name, errno, errno, s, got, want)
				}
			}
		}
	}
	// Engine sentinels carry their rdma sentinel and their errno, also
	// once cm has wrapped them.
	for _, tc := range []struct {
		err   error
		s     error
		errno syscall.Errno
	}{
		{engine.ErrInvalidArgument, ErrInvalidArgument, syscall.EINVAL},
		{engine.ErrBusy, ErrBusy, syscall.EBUSY},
		{engine.ErrInvalidState, ErrInvalidState, syscall.EINVAL},
		{engine.ErrUnknownID, nil, syscall.ENOENT},
		{engine.ErrNoResources, nil, syscall.ENOMEM},
		{engine.ErrConnected, nil, syscall.EISCONN},
	} {
		for _, err := range []error{tc.err, errnoError("Connect", fmt.Errorf("engine: Connect 0x1: %w", tc.err))} {
			if !errors.Is(err, tc.errno) || (tc.s != nil && !errors.Is(err, tc.s)) {
				t.Errorf("%v: want %v and %v", err, tc.s, tc.errno)
			}
			if tc.s == nil || tc.s == ErrInvalidArgument {
				continue
			}
			if s := rdma.ErrnoSentinel(tc.errno); s != nil && s != tc.s && errors.Is(err, s) {
				t.Errorf("%v also matches %v", err, s)
			}
		}
	}
}

// TestErrorPrefixes checks each layer adds its prefix once.
func TestErrorPrefixes(t *testing.T) {
	err := errnoError("Connect", fmt.Errorf("engine: Connect 0x1 in state Idle: %w", engine.ErrInvalidState))
	const want = "cm: Connect: engine: Connect 0x1 in state Idle: operation not allowed in this state"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if !errors.Is(err, ErrInvalidState) || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("%v: not ErrInvalidState and EINVAL", err)
	}
	ev := &Event{Type: EventUnreachable, Status: -int32(syscall.ETIMEDOUT)}
	if got := ev.Err().Error(); got != "cm: RDMA_CM_EVENT_UNREACHABLE: timed out: "+syscall.ETIMEDOUT.Error() {
		t.Errorf("event error %q", got)
	}
}
