//go:build race || !(amd64 || arm64 || ppc64 || ppc64le || riscv64)

package barrier

import "sync/atomic"

// StoreRelease32 stores v at p with (at least) release ordering: here a
// sequentially consistent atomic.StoreUint32, on the GOARCHes without a
// barrier_$GOARCH.s and under the race detector, which sees it as
// synchronisation (see store.go).
func StoreRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
