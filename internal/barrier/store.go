//go:build !race && (arm64 || ppc64 || ppc64le || riscv64)

package barrier

// StoreRelease32 stores v at p with release ordering: loads and stores
// before it are visible to another CPU before it is (what the Go
// runtime's internal StoreRel compiles to; sync/atomic offers only
// sequentially consistent stores, a locked XCHG on amd64). amd64: a
// plain store (store_amd64.go); arm64: STLRW; ppc64:
// LWSYNC then a store; riscv64: FENCE RW,W then a store. Readers load p
// with sync/atomic. Being assembly, the call is also a compiler barrier.
// Under the race detector it is atomic.StoreUint32, which the detector
// sees as synchronisation (store_other.go).
func StoreRelease32(p *uint32, v uint32) { storeRelease32(p, v) }
