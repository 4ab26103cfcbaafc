//go:build linux

package cm_test

import (
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// TestExamplesInGuest runs the examples against the real kernel and checks
// their output, which the host cannot (no RDMA device there).
func TestExamplesInGuest(t *testing.T) {
	guest.Require(t)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"libraryQP", Example_libraryQP, `SetLocalECE refused: the library manages ECE
client state: established QP state: RTS
done
`},
		{"externalQP", Example_externalQP, `client: attempt 1 rejected: reason 35 (vendor option is not supported)
server: REQ offered vendor=0x15b3 options=0x30000001
server: Accept before SetLocalECE refused
client: REP answered vendor=0x15b3 options=0x10000000
server: SetLocalECE after the REP refused
client: established (QP RTS), disconnected
done
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := guest.CaptureStdout(t, tc.f)
			if got != tc.want {
				t.Fatalf("output:\n%s\nwant:\n%s", got, tc.want)
			}
			if strings.Contains(got, ":") && strings.Contains(got, "error") {
				t.Fatal("example reported an error")
			}
		})
	}
}
