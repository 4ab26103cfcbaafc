package cm

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/mad"
)

// TestSIDRStatusError: UNREACHABLE on a UD ID with a positive status is
// a SIDR_REP's status (cma_sidr_rep_handler), not an errno: a
// *SIDRError matching ErrRejected and ECONNREFUSED, never ErrTimeout;
// a negative status (no answer) stays ErrTimeout, and on a connected ID
// nothing changes.
func TestSIDRStatusError(t *testing.T) {
	dst := netip.MustParseAddrPort("192.0.2.2:7174")
	for st := mad.SIDRUnsupported; st <= mad.SIDRUnsupportedVersion; st++ {
		ev := &Event{Type: EventUnreachable, Status: int32(st), ID: &ID{udp: true}, peer: dst}
		ev.UD.PrivateData = []byte("why")
		err := ev.Err()
		var se *SIDRError
		if !errors.As(err, &se) || se.Status != st || string(se.PrivateData) != "why" || se.Addr != dst {
			t.Fatalf("status %d: %#v", st, err)
		}
		if !errors.Is(err, ErrRejected) || !errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, ErrTimeout) {
			t.Errorf("status %d: %v matches the wrong sentinels", st, err)
		}
		if !strings.HasPrefix(err.Error(), "cm: resolve UD service 192.0.2.2:7174: ") || !strings.Contains(err.Error(), st.String()) {
			t.Errorf("status %d: %q", st, err)
		}
	}
	if err := (&Event{Type: EventUnreachable, Status: 1, ID: &ID{udp: true}}).Err(); !strings.Contains(err.Error(), "connection refused: no listener") {
		t.Errorf("unsupported service: %q", err)
	}
	timeout := &Event{Type: EventUnreachable, Status: -int32(unix.ETIMEDOUT), ID: &ID{udp: true}}
	if err := timeout.Err(); !errors.Is(err, ErrTimeout) || errors.As(err, new(*SIDRError)) {
		t.Errorf("no SIDR answer: %v", err)
	}
	rc := &Event{Type: EventUnreachable, Status: 1, ID: &ID{}}
	if err := rc.Err(); !errors.Is(err, ErrTimeout) || errors.As(err, new(*SIDRError)) {
		t.Errorf("UNREACHABLE on an RC ID: %v", err)
	}
}
