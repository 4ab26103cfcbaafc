// Package kcall is where this module enters the kernel for RDMA: the
// uverbs ioctl (IoctlCall, with its scratch pages and pins), the write
// commands of uverbs, ucma and umad (Write, the Ucma*Call functions),
// reads of event fds (Read, and Ppoll with an Eventfd that interrupts it), mappings of device memory (Mmap, Munmap),
// the rdma_cm node (UcmaOpen), sysfs device discovery, RDMA netlink
// sockets, and the route and interface-name lookups. The structs these
// calls carry are package internal/abi's. TestDevice is the seam through
// which tests answer these calls in place of the kernel.
//
// The raw-syscall rule: no call that can sleep or run long is issued as
// unix.RawSyscall, which keeps the goroutine's P for the whole call, so
// that no other goroutine runs on it and a stop-the-world waits for the
// call to return. Every call here can sleep (a firmware command, pinning
// the pages of a registration, a mutex, mmap_lock, a GFP_KERNEL
// allocation, a page fault on a user buffer) and goes through
// unix.Syscall, the runtime's entersyscall/exitsyscall path. A call may
// be raw only when the kernel provably returns at once without sleeping,
// with a one-line comment saying why; there is none today.
// cm's TestGuestNoStarve holds this in the guests.
package kcall
