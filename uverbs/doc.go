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
// Go heap; or the caller's own mapping, UserBuffer, which refuses Go-heap
// memory), at an IOVA of the caller's (RegMRIOVA) or over a dma-buf
// (RegDmabufMR), re-registered in place (MR.Rereg), completion channels,
// CQs, QPs (RC, UC, UD), shared receive queues and AHs. Commands
// use the ioctl interface (RDMA_VERBS_IOCTL: native methods for context,
// port, GID table, CQ/QP/SRQ create and every destroy; other commands wrapped
// in UVERBS_METHOD_INVOKE_WRITE) and fall back per operation to write()
// commands where the kernel lacks a method; Options.Interface can force
// write() only. QP.Modify checks every request with package qp (state
// table and value ranges) before the syscall. Close releases objects
// children first; Context.Close releases everything still open.
//
// Shared receive queues. PD.CreateSRQ makes one receive pool (SRQInit:
// MaxWR and MaxSGE, refused beyond the device's MaxSRQWR and MaxSRQSGE)
// that any number of QPs created with QPInit.SRQ consume from; receive
// completions still go to each QP's receive CQ and name the QP. Post to
// SRQ.PostRecv (QP.PostRecv on such a QP fails). SRQ.Arm sets the limit:
// once fewer WRs than it remain, the async event fd reports one
// EventSRQLimitReached whose Element is SRQ.Handle, and the SRQ is
// disarmed until the next Arm. SRQ.Query reads the kernel's view (mlx5
// counts the WQEs libmlx5 keeps for its wait queue there; Cap is what the
// caller can post), and SRQ.Close fails with ErrBusy while QPs use it.
// Both providers post without a syscall: rxe writes the ring the kernel
// shares, mlx5 takes WQEs off a free list linked through their next
// segments and publishes the count posted in the doorbell record, as
// libmlx5 does; completions return the WQEs to the list.
//
// Event fds (completion channels and the async event fd) are non-blocking
// and sit in the Go netpoller; waits take a context, Close interrupts them,
// and reads drain the fd until EAGAIN because readiness is edge-triggered.
//
// Providers. The soft-RoCE (rxe) provider: CQs and work queues are the
// rings the kernel shares (mmap of the uverbs fd at the offsets in the
// create responses); PostSend writes WQEs and rings the POST_SEND
// doorbell, PostRecv and Poll make no syscall. Indices are accessed with
// sync/atomic for acquire/release ordering on every architecture.
//
// The mlx5 provider (ConnectX, BlueField) has the whole data path, after
// libmlx5 from rdma-core v44 with its default settings: CQ and work queue
// buffers and doorbell records mmap'd off the Go heap, static or dynamic
// UARs, RC, UC and UD QPs, SRQs, PostSend with inline data and BlueFlame
// doorbells, PostRecv, Poll with error syndromes and scatter-to-CQE, and
// CQ arming through the UAR; none of them makes a syscall. It is proven
// byte for byte, barriers included, against NVIDIA's libmlx5 on a
// simulated ConnectX (internal/mlx5sim), not yet on silicon
// (docs/hardware.md).
//
// ECE. QP.QueryECE and QP.SetECE return an error matching ErrNotSupported
// and unix.EOPNOTSUPP on providers without ECE, rxe included, as
// libibverbs does. For mlx5 the provider's ECE logic follows
// mlx5_set_ece: the context's MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE
// capability bit (Context.HasECE), ece_options in the create-QP and
// modify-QP driver data, and the set/query rules; its structs are
// layout-tested against /usr/include/rdma/mlx5-abi.h.
//
// Atomics. Both providers post 8-byte compare-and-swap and fetch-and-add
// (OpAtomicCompareSwap, OpAtomicFetchAdd; SendWR.CompareAdd and Swap) on
// RC QPs; DeviceAttr.AtomicCap reports the device's capability, and
// PostSend refuses an atomic the device, the QP or the WR cannot carry
// before it reaches the queue (AtomicCap's documentation says when). The mlx5
// WQEs are compared with libmlx5's in the simulated device's atomic
// scenarios.
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
