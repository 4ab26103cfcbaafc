//go:build !race

package barrier

// StoreRelease32 stores v at p with release ordering (see
// store.go). amd64: a plain store, inlined. x86-TSO makes every
// store a release store: no load or store before it becomes visible
// after it. The compiler keeps it after them too: stores are never
// reordered among themselves (each takes the memory state the one
// before it made), a load that reads the memory state a store replaces
// is scheduled before that store ("any load must come before the
// following store"), and a load moves to another block only if that
// block starts with the memory state it reads, past no store
// (cmd/compile/internal/ssa: schedule.go, tighten.go; Go 1.26). The assembly call this replaces cost 9
// instructions at each call site (arguments on the stack, and the ABI0
// wrapper's reloads of X15 and R14 after it), for one MOVL.
func StoreRelease32(p *uint32, v uint32) { *p = v }
