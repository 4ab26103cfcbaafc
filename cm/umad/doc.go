// Package umad carries the user-space CM engine (cm/engine) over the
// kernel's user MAD interface, /dev/infiniband/umadN: it registers a MAD
// agent for the CM class (0x07, class version 2, method Send) on QP 1 and
// sends and receives 256-byte CM MADs with their address headers. Driver
// runs an engine on a transport: it owns the goroutines, the clock and the
// timer the engine itself does without.
//
// Only one agent per port may own the CM class: while the kernel's ib_cm
// module is loaded it does, and registration fails with EINVAL, reported
// as ErrKernelCM: use the kernel rdma_cm backend there, or unload ib_cm and
// its users (rdma_cm, rdma_ucm, ib_ipoib, ...) to run the user-space CM.
package umad
