package rdma

// Plan 9 has no errnos (package syscall has no Errno), so OpError matches
// no sentinel through one and there is no ErrnoSentinel.
func errnoSentinelOf(error) error { return nil }
