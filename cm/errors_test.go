package cm

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

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
	// The engine's errors carry their rdma sentinel and the kernel CM's
	// errno for the same case, also once cm has wrapped them.
	for _, tc := range engineErrors(t) {
		for _, err := range []error{tc.err, errnoError("Connect", tc.err)} {
			if !errors.Is(err, tc.errno) || !errors.Is(err, tc.s) {
				t.Errorf("%v: want %v and %v", err, tc.s, tc.errno)
			}
			if s := rdma.ErrnoSentinel(tc.errno); s != nil && s != tc.s && errors.Is(err, s) {
				t.Errorf("%v also matches %v", err, s)
			}
		}
	}
}

type engineError struct {
	err   error
	s     error
	errno syscall.Errno
}

// engineErrors makes an engine refuse: a second listener on a service ID,
// a disconnect of a listener, of an unknown ID, and a listener of an
// unknown QP type.
func engineErrors(t *testing.T) []engineError {
	e, err := engine.New(engine.Config{CAGUID: 1, Source: engine.NewSeededSource(1, 1), ACKDelay: 15})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	l, err := e.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7471})
	if err != nil {
		t.Fatal(err)
	}
	_, busy := e.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7471})
	_, badType := e.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7472, QPType: 99})
	return []engineError{
		{busy, ErrBusy, syscall.EBUSY},
		{badType, ErrInvalidArgument, syscall.EINVAL},
		{e.Disconnect(now, l, nil), ErrInvalidState, syscall.EINVAL},
		{e.Disconnect(now, l+1, nil), engine.ErrUnknownID, syscall.ENOENT},
	}
}

// TestErrorPrefixes checks that a layer wrapping another's error prints one
// package prefix and names its operation in words, and that the
// sentinels and errnos stay reachable.
func TestErrorPrefixes(t *testing.T) {
	state := engineErrors(t)[2].err
	err := errnoError("Connect", state)
	if got, want := err.Error(), "cm: connect: disconnect ID "; !strings.HasPrefix(got, want) || strings.Count(got, ": ") != 3 ||
		!strings.HasSuffix(got, " in state LISTEN: invalid state") {
		t.Errorf("got %q, want %q…in state LISTEN: invalid state", got, want)
	}
	if !errors.Is(err, ErrInvalidState) || !errors.Is(err, syscall.EINVAL) || errors.Is(err, ErrInvalidArgument) {
		t.Errorf("%v: not ErrInvalidState and EINVAL only", err)
	}
	for _, tc := range []struct {
		ev    Event
		want  string
		s     error
		errno syscall.Errno
	}{
		{Event{Type: EventUnreachable, Status: -int32(syscall.ETIMEDOUT)},
			"cm: RDMA_CM_EVENT_UNREACHABLE: " + syscall.ETIMEDOUT.Error(), ErrTimeout, syscall.ETIMEDOUT},
		{Event{Type: EventAddrError, Status: -int32(syscall.ENODEV)},
			"cm: RDMA_CM_EVENT_ADDR_ERROR: address does not route over RDMA: " + syscall.ENODEV.Error(), ErrNoRoute, syscall.ENODEV},
		{Event{Type: EventConnectError, Status: -int32(syscall.ECONNRESET)},
			"cm: RDMA_CM_EVENT_CONNECT_ERROR: connection error: " + syscall.ECONNRESET.Error(), ErrConnect, syscall.ECONNRESET},
		{Event{Type: EventDisconnected}, "cm: RDMA_CM_EVENT_DISCONNECTED: disconnected", ErrDisconnected, 0},
	} {
		err := tc.ev.Err()
		if got := err.Error(); got != tc.want {
			t.Errorf("event error %q, want %q", got, tc.want)
		}
		if !errors.Is(err, tc.s) || (tc.errno != 0 && !errors.Is(err, tc.errno)) {
			t.Errorf("%v: want %v and %v", err, tc.s, tc.errno)
		}
		if tc.errno == syscall.ENODEV && errors.Is(err, ErrNoDevice) {
			t.Errorf("%v: ADDR_ERROR's ENODEV is ErrNoRoute, not ErrNoDevice", err)
		}
	}
}
