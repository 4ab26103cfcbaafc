package engine_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestSentinelsAreRDMAs: the names the engine shares with package rdma are
// rdma's values, so == and errors.Is agree.
func TestSentinelsAreRDMAs(t *testing.T) {
	for _, tc := range []struct{ eng, r error }{
		{engine.ErrInvalidState, rdma.ErrInvalidState},
		{engine.ErrInvalidArgument, rdma.ErrInvalidArgument},
		{engine.ErrBusy, rdma.ErrBusy},
	} {
		if tc.eng != tc.r || !errors.Is(tc.eng, tc.r) {
			t.Errorf("engine's %v is not rdma's", tc.eng)
		}
	}
}

// TestErrorsMatchSentinelAndErrno drives real failures and checks their
// text, their sentinel and the kernel CM's errno for the same case.
func TestErrorsMatchSentinelAndErrno(t *testing.T) {
	w, a, b := newWire(t)
	act, _ := establish(t, w, a, b)
	_, busy := b.e.Listen(w.now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: testPort})
	_, noSource := engine.New(engine.Config{})
	_, badRetries := engine.New(engine.Config{Source: engine.NewSeededSource(1, 2), MaxCMRetries: 16})
	_, port0 := engine.New(engine.Config{Source: engine.NewSeededSource(1, 2), InfiniBandPorts: []uint8{0}})
	for _, tc := range []struct {
		err   error
		want  string
		s     error
		errno syscall.Errno
		not   error
	}{
		{busy, "engine: listen: service ID 0x106", rdma.ErrBusy, syscall.EBUSY, rdma.ErrInvalidArgument},
		{a.e.Establish(w.now, act, nil), "engine: establish ID ", rdma.ErrInvalidState, syscall.EINVAL, rdma.ErrInvalidArgument},
		{a.e.Disconnect(w.now, 0x7777, nil), "engine: disconnect ID 0x00007777: unknown ID", engine.ErrUnknownID, syscall.ENOENT, rdma.ErrInvalidState},
		{noSource, "engine: Config.Source is nil", rdma.ErrInvalidArgument, syscall.EINVAL, rdma.ErrInvalidState},
		{badRetries, "engine: Config timeout or retry count out of range", rdma.ErrInvalidArgument, syscall.EINVAL, rdma.ErrInvalidState},
		{port0, "engine: Config.InfiniBandPorts names port 0", rdma.ErrInvalidArgument, syscall.EINVAL, rdma.ErrInvalidState},
	} {
		if tc.err == nil {
			t.Errorf("want an error like %q, got nil", tc.want)
			continue
		}
		msg := tc.err.Error()
		if len(msg) < len(tc.want) || msg[:len(tc.want)] != tc.want {
			t.Errorf("error %q does not start with %q", msg, tc.want)
		}
		if !errors.Is(tc.err, tc.s) || !errors.Is(tc.err, tc.errno) {
			t.Errorf("%v: want errors.Is %v and %v", tc.err, tc.s, tc.errno)
		}
		if errors.Is(tc.err, tc.not) {
			t.Errorf("%v also matches %v", tc.err, tc.not)
		}
		// Wrapped by cm, the errno still matches and, being matched by
		// Is rather than unwrapped, maps to no second sentinel.
		wrapped := &rdma.OpError{Pkg: "cm", Op: "connect", Err: tc.err}
		if !errors.Is(wrapped, tc.s) || !errors.Is(wrapped, tc.errno) || errors.Is(wrapped, tc.not) {
			t.Errorf("%v: matches changed once wrapped", wrapped)
		}
	}
}
