//go:build arm64 || ppc64 || ppc64le || riscv64

package barrier

// storeRelease32 is StoreRelease32's assembly (barrier_$GOARCH.s).
//
//go:noescape
func storeRelease32(p *uint32, v uint32)
