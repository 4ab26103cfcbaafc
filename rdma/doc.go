// Package rdma is the module's shared vocabulary: the address and path
// types (GID, GUID, MTU, PortSpace, PathRecord) and the error sentinels
// with their errno table and OpError, used by mad, qp, uverbs, cm and
// cm/engine. It imports only the standard library and builds for every
// GOOS.
//
// # Errors
//
// The sentinels' messages are neutral ("not supported"); the error that
// wraps one names its package ("uverbs: open on rxe0: not supported"). A
// kernel errno inside an *OpError matches the sentinel ErrnoSentinel gives
// it, so errors.Is(err, rdma.ErrPermission) and errors.Is(err,
// syscall.EPERM) both hold. The packages re-export the sentinels they
// return (uverbs.ErrNotSupported == rdma.ErrNotSupported), so every
// package's name for a sentinel is the same test.
package rdma
