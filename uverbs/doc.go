// Package uverbs is a pure-Go (no cgo, no libibverbs) verbs library over
// the Linux RDMA user ABI: /dev/infiniband/uverbsN and sysfs.
//
// Discovery (Devices, Discovery) reads sysfs and /dev: node GUID and type,
// ports with state, link layer, MTU and GID table (type and netdev per
// GID), and the uverbs, umad and rdma_cm character devices. Its roots are
// injectable, so it is tested on the host against a fake tree.
//
// A Context (Open, OpenDevice) is the uverbs fd with its ucontext. It
// creates PDs, MRs over Buffers (anonymous mmap, page-aligned, outside the
// Go heap), completion channels, CQs, QPs (RC, UC, UD) and AHs. Commands
// use the ioctl interface (RDMA_VERBS_IOCTL: native methods for context,
// port, GID table, CQ/QP create and every destroy; other commands wrapped
// in UVERBS_METHOD_INVOKE_WRITE) and fall back per operation to write()
// commands where the kernel lacks a method; Options.Interface can force
// write() only. QP.Modify checks every request with package qp (state
// table and value ranges) before the syscall. Close releases objects
// children first; Context.Close releases everything still open.
//
// Event fds (completion channels and the async event fd) are non-blocking
// and sit in the Go netpoller; waits take a context, Close interrupts them,
// and reads drain the fd until EAGAIN because readiness is edge-triggered.
//
// Providers. The soft-RoCE (rxe) provider is complete: CQs and work queues
// are the rings the kernel shares (mmap of the uverbs fd at the offsets in
// the create responses); PostSend writes WQEs and rings the POST_SEND
// doorbell, PostRecv and Poll make no syscall. Indices are accessed with
// sync/atomic for acquire/release ordering on every architecture.
//
// ECE. QP.QueryECE and QP.SetECE return an error matching ErrNotSupported
// and unix.EOPNOTSUPP on providers without ECE, rxe included, as
// libibverbs does. For mlx5 the provider-side ECE logic (the context's
// MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE capability bit, ece_options in the
// create-QP and modify-QP driver data, set/query rules) is implemented per
// the mlx5 ABI and unit-tested, and its structs are layout-tested against
// /usr/include/rdma/mlx5-abi.h — but it has NOT been run on mlx5 hardware,
// and the mlx5 data path (queue buffers, doorbell records, UAR mapping) is
// not implemented, so CQs and QPs cannot yet be created on mlx5 devices.
//
// Other drivers get a generic provider: control-path commands without
// driver data, no data path.
//
// Other systems. The package builds on every GOOS (its system calls go
// through internal/unix, the module's OS shim), but off Linux every entry
// point (Devices, Discovery.Devices, Open, OpenDevice, AllocBuffer,
// AllocBufferAt) fails with an error matching ErrNotSupported that reads
// "uverbs: OP: not supported on GOOS".
package uverbs
