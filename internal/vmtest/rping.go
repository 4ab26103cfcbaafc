package vmtest

import (
	"strings"

	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

// RpingTeardownRace reports whether r, the result of cmd, is rping's
// known false failure at exit. rping's CM thread loops on
// rdma_get_cm_event with no way to stop it. After the last event the main
// thread destroys the event channel, and if the CM thread calls again in
// between, it gets EBADF, prints "rdma_get_cm_event: Bad file descriptor"
// and exits 255, after a run that succeeded. rdma-core fixed this after
// v44, the version the guests run (PR #1622, "rping: Fix spurious failure
// return codes"). A run whose data check failed ("data mismatch", also
// exit 255) is never taken for it.
func RpingTeardownRace(cmd string, r *agent.Result) bool {
	if r == nil || r.ExitCode != 255 || !strings.HasPrefix(strings.TrimSpace(cmd), "rping ") {
		return false
	}
	out := r.Stdout + r.Stderr
	return strings.Contains(out, "DISCONNECT EVENT") && !strings.Contains(out, "mismatch") &&
		strings.HasSuffix(strings.TrimSpace(out), "rdma_get_cm_event: Bad file descriptor")
}
