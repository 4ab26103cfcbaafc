package vmtest

import (
	"testing"

	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

func TestRpingTeardownRace(t *testing.T) {
	// From a CI run on 29 Nov 2026 (TestIPv6Interop, rping -c against
	// rdmacm-ping -s): three pings, then the race.
	const pings = "ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\n" +
		"ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs\n" +
		"ping data: rdma-ping-2: CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst\n" +
		"client DISCONNECT EVENT...\n"
	const race = "rdma_get_cm_event: Bad file descriptor\n"
	for _, c := range []struct {
		name string
		cmd  string
		r    *agent.Result
		want bool
	}{
		{"the race", "rping -c -v -V -a fd00::2 -C 3", &agent.Result{ExitCode: 255, Stdout: pings, Stderr: race}, true},
		{"the race, one stream", "rping -s -a 192.0.2.2 -C 1", &agent.Result{ExitCode: 255, Stdout: pings + race}, true},
		{"data mismatch, then the race", "rping -c -v -V -a 192.0.2.2 -C 3", &agent.Result{ExitCode: 255, Stdout: pings, Stderr: "data mismatch!\n" + race}, false},
		{"success", "rping -c -a 192.0.2.2 -C 3", &agent.Result{ExitCode: 0, Stdout: pings}, false},
		{"EBADF before any disconnect", "rping -c -a 192.0.2.2 -C 3", &agent.Result{ExitCode: 255, Stderr: race}, false},
		{"another error after the disconnect", "rping -c -a 192.0.2.2 -C 3", &agent.Result{ExitCode: 255, Stdout: pings, Stderr: "rdma_get_cm_event: Connection reset by peer\n"}, false},
		{"another exit code", "rping -c -a 192.0.2.2 -C 3", &agent.Result{ExitCode: 1, Stdout: pings, Stderr: race}, false},
		{"not rping", "/host/bin/rdmacm-ping -c -a 192.0.2.2", &agent.Result{ExitCode: 255, Stdout: pings, Stderr: race}, false},
		{"no result", "rping -c -a 192.0.2.2", nil, false},
	} {
		if got := RpingTeardownRace(c.cmd, c.r); got != c.want {
			t.Errorf("%s: RpingTeardownRace = %v, want %v", c.name, got, c.want)
		}
	}
}
