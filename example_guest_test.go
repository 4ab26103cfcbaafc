//go:build linux

package rdmacm_test

import (
	"slices"
	"testing"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/rdma"
)

// guestBackend is the CM the guest offers: the kernel's, or (vmexec
// -nocm-a, without ib_cm) our engine.
func guestBackend() rdma.Backend {
	if slices.Contains(guest.Local().NoMods, "ib_cm") {
		return rdma.BackendUser
	}
	return rdma.BackendKernel
}

// TestExamplesInGuest runs the examples against the real kernel and checks
// their output, which the host cannot (no RDMA device there).
func TestExamplesInGuest(t *testing.T) {
	guest.Require(t)
	exampleOptions.Backend = guestBackend()
	t.Logf("backend %s", exampleOptions.Backend)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"echo", Example_echo, "echo: hello\necho: RDMA\ndone\n"},
		{"write", Example_write, "client: remote buffer of 65536 bytes\nserver: \"written by RDMA\" written, imm 15\n"},
		{"ece", Example_ece, `server: REQ offered vendor=0x15b3 options=0x30000001
server: REP answered vendor=0x15b3 options=0x10000001
client: REP carried vendor=0x15b3 options=0x10000001
server: peer gone: true
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := guest.CaptureStdout(t, tc.f)
			if got != tc.want {
				t.Fatalf("output:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
