// Package umad carries the user-space CM engine (cm/engine) over the
// kernel's user MAD interface, /dev/infiniband/umadN. It is internal
// because package cm is its only user: cm's user-space backend runs on it.
// It has three parts, one file each:
//
//   - Port (port_linux.go), the umad device: it registers a MAD agent for
//     the CM class (0x07, class version 2, method Send) on QP 1 and sends
//     and receives 256-byte CM MADs with their address headers.
//   - UDSend (udsend_linux.go), a Transport that receives through a Port
//     but sends from a UD QP of its own, with one address handle per
//     destination instead of one per MAD.
//   - Driver (driver.go), the engine runner: it runs an engine on a
//     Transport and owns the goroutine, the clock and the timer the
//     engine itself does without.
//
// Only one agent per port may own the CM class: while the kernel's ib_cm
// module is loaded it does, and registration fails with EINVAL, reported
// as ErrKernelCM: use the kernel rdma_cm backend there, or unload ib_cm and
// its users (rdma_cm, rdma_ucm, ib_ipoib, ...) to run the user-space CM.
//
// Off Linux the package builds, and Driver works on any Transport, but
// Open, FindDevice, LocalGID and NewUDSend fail with an error matching
// ErrNotSupported that reads "umad: not supported on GOOS".
package umad
