// Package unix is this module's OS shim, after cilium/ebpf's internal/unix:
// the one place outside Linux-only files (_linux.go, //go:build linux) that
// names golang.org/x/sys/unix. Import it instead of x/sys/unix in every
// file that must build on other systems; x/sys/unix does not build on
// windows at all, and lacks Linux's constants and calls elsewhere.
//
// On Linux every name below is golang.org/x/sys/unix's own: constants are
// its constants, types are aliases of its types, functions call it. A file
// can switch its import from x/sys/unix to this package without any other
// change, and its syscalls stay exactly the same.
//
// On every other GOOS the names exist with the same types, so that the
// importing code compiles, and every function fails with ErrNotSupported:
// it reads "not supported on <GOOS>" and matches rdma.ErrNotSupported and
// the errnos ENOTSUP and EOPNOTSUPP (errors.Is). Errno is syscall.Errno
// and the E* constants are that system's own errnos, so rdma.ErrnoSentinel
// and errors.Is(err, unix.EINVAL) keep working. Other constants keep their
// Linux values (the netlink ones are a wire format; the rest are never
// passed to a kernel there).
//
// The raw syscalls (Syscall, RawSyscall, SYS_*) are deliberately absent:
// a uintptr(unsafe.Pointer(p)) argument is kept alive only in a direct
// call to x/sys/unix's assembly stubs, not through a Go wrapper. Such
// calls live in internal/kcall's Linux-only files (IoctlCall.Do, Write,
// Read, Mmap, Munmap, UmadRegisterAgent2Call, ...), whose stubs
// elsewhere return ErrNotSupported.
//
// The API, on every GOOS:
//
//	IsLinux                      const bool: true where the real calls are
//	ErrNotSupported              every function's error off Linux
//	Errno                        x/sys/unix.Errno (Linux), syscall.Errno
//	EACCES EADDRINUSE EADDRNOTAVAIL EAFNOSUPPORT EAGAIN EBADF EBADMSG
//	EBUSY ECONNREFUSED EEXIST EFAULT EHOSTUNREACH EINTR EINVAL EIO EMFILE
//	EMSGSIZE ENETUNREACH ENODEV ENOENT ENOMEM ENOSPC ENOSYS ENOTTY ENXIO
//	EOPNOTSUPP EPERM EPROTONOSUPPORT ETIMEDOUT   Errno constants
//	O_RDWR O_WRONLY O_CREAT O_CLOEXEC O_NONBLOCK
//	PROT_READ PROT_WRITE MAP_SHARED MAP_PRIVATE MAP_ANONYMOUS MADV_DONTFORK
//	S_IFMT S_IFCHR RLIMIT_MEMLOCK RLIM_INFINITY
//	AF_NETLINK SOCK_RAW SOCK_CLOEXEC SOL_NETLINK NETLINK_EXT_ACK
//	MSG_PEEK MSG_TRUNC, NLMSG_* NLM_F_* NLA_* NLMSGERR_ATTR_MSG
//	Stat_t (Mode, Rdev), Rlimit (Cur, Max), Sockaddr, SockaddrNetlink
//	Open Close Dup Read Seek Ftruncate Pipe2 Fstat SetNonblock
//	Mmap Munmap Madvise Getrlimit Setrlimit
//	Socket Bind Getsockname Sendto Recvfrom SetsockoptInt
//	Major Minor ByteSliceToString (pure: they work everywhere)
//
// Add a name when a portable file needs one: the Linux side re-exports
// x/sys/unix's, the other side stubs it in types_other.go.
package unix
