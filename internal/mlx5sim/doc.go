// Package mlx5sim is a simulated ConnectX (mlx5) device for differential
// tests: a scripted kernel that answers the uverbs commands, mmaps and
// CQE injections of both rdma-core (libibverbs + libmlx5 v44, in a child
// process behind an LD_PRELOAD shim, see server.go) and this module's
// uverbs package (in-process through kcall.SetTestDevice, see install.go),
// and records a normalised trace of both so that they can be compared
// (compare.go). README.md is the contract between the parts.
//
// The answers follow the kernel: uverbs_ioctl.c and uverbs_main.c for
// the command framing and their errors, ib_uverbs_cmd.c and the
// uverbs_std_types_*.c methods for the core verbs, and mlx5_ib (main.c,
// cq.c, qp.c) for the driver data, bfreg allocation, dynamic UARs and
// mmap offsets. The firmware is a ConnectX-5 without DEVX, with ECE
// (profile ece=1) and with the core clock pages.
//
// The simulator, its tests and the differential harness are Linux only
// (process_vm_readv, eventfd, LD_PRELOAD of the C shim in c/); on other
// systems the package is this comment.
package mlx5sim
