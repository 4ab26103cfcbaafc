//go:build linux

package unix

import linux "golang.org/x/sys/unix"

// IsLinux reports whether the functions of this package reach a kernel.
const IsLinux = true

// Errno is golang.org/x/sys/unix.Errno (syscall.Errno).
type Errno = linux.Errno

const (
	EACCES          = linux.EACCES
	EADDRINUSE      = linux.EADDRINUSE
	EADDRNOTAVAIL   = linux.EADDRNOTAVAIL
	EAFNOSUPPORT    = linux.EAFNOSUPPORT
	EAGAIN          = linux.EAGAIN
	EBADF           = linux.EBADF
	EBADMSG         = linux.EBADMSG
	EBUSY           = linux.EBUSY
	ECONNREFUSED    = linux.ECONNREFUSED
	EEXIST          = linux.EEXIST
	EFAULT          = linux.EFAULT
	EHOSTUNREACH    = linux.EHOSTUNREACH
	EINTR           = linux.EINTR
	EINVAL          = linux.EINVAL
	EIO             = linux.EIO
	EMFILE          = linux.EMFILE
	EMSGSIZE        = linux.EMSGSIZE
	ENETUNREACH     = linux.ENETUNREACH
	ENODEV          = linux.ENODEV
	ENOENT          = linux.ENOENT
	ENOMEM          = linux.ENOMEM
	ENOSPC          = linux.ENOSPC
	ENOSYS          = linux.ENOSYS
	ENOTTY          = linux.ENOTTY
	ENXIO           = linux.ENXIO
	EOPNOTSUPP      = linux.EOPNOTSUPP
	EPERM           = linux.EPERM
	EPROTONOSUPPORT = linux.EPROTONOSUPPORT
	ETIMEDOUT       = linux.ETIMEDOUT
)

const (
	O_RDWR     = linux.O_RDWR
	O_WRONLY   = linux.O_WRONLY
	O_CREAT    = linux.O_CREAT
	O_CLOEXEC  = linux.O_CLOEXEC
	O_NONBLOCK = linux.O_NONBLOCK

	PROT_READ     = linux.PROT_READ
	PROT_WRITE    = linux.PROT_WRITE
	MAP_SHARED    = linux.MAP_SHARED
	MAP_PRIVATE   = linux.MAP_PRIVATE
	MAP_ANONYMOUS = linux.MAP_ANONYMOUS
	MADV_DONTFORK = linux.MADV_DONTFORK

	S_IFMT  = linux.S_IFMT
	S_IFCHR = linux.S_IFCHR

	RLIMIT_MEMLOCK = linux.RLIMIT_MEMLOCK
	RLIM_INFINITY  = linux.RLIM_INFINITY
)

// Netlink.
const (
	AF_NETLINK      = linux.AF_NETLINK
	SOCK_RAW        = linux.SOCK_RAW
	SOCK_CLOEXEC    = linux.SOCK_CLOEXEC
	SOL_NETLINK     = linux.SOL_NETLINK
	NETLINK_EXT_ACK = linux.NETLINK_EXT_ACK
	MSG_PEEK        = linux.MSG_PEEK
	MSG_TRUNC       = linux.MSG_TRUNC

	NLMSG_ALIGNTO     = linux.NLMSG_ALIGNTO
	NLMSG_HDRLEN      = linux.NLMSG_HDRLEN
	NLMSG_NOOP        = linux.NLMSG_NOOP
	NLMSG_ERROR       = linux.NLMSG_ERROR
	NLMSG_DONE        = linux.NLMSG_DONE
	NLMSG_OVERRUN     = linux.NLMSG_OVERRUN
	NLMSG_MIN_TYPE    = linux.NLMSG_MIN_TYPE
	NLM_F_REQUEST     = linux.NLM_F_REQUEST
	NLM_F_MULTI       = linux.NLM_F_MULTI
	NLM_F_DUMP        = linux.NLM_F_DUMP
	NLM_F_CAPPED      = linux.NLM_F_CAPPED
	NLM_F_ACK_TLVS    = linux.NLM_F_ACK_TLVS
	NLMSGERR_ATTR_MSG = linux.NLMSGERR_ATTR_MSG

	NLA_ALIGNTO         = linux.NLA_ALIGNTO
	NLA_HDRLEN          = linux.NLA_HDRLEN
	NLA_F_NESTED        = linux.NLA_F_NESTED
	NLA_F_NET_BYTEORDER = linux.NLA_F_NET_BYTEORDER
)

type (
	Stat_t          = linux.Stat_t
	Rlimit          = linux.Rlimit
	Sockaddr        = linux.Sockaddr
	SockaddrNetlink = linux.SockaddrNetlink
)

func Open(path string, mode int, perm uint32) (int, error) { return linux.Open(path, mode, perm) }
func Close(fd int) error                                   { return linux.Close(fd) }
func Dup(fd int) (int, error)                              { return linux.Dup(fd) }
func Read(fd int, p []byte) (int, error)                   { return linux.Read(fd, p) }
func Seek(fd int, offset int64, whence int) (int64, error) { return linux.Seek(fd, offset, whence) }
func Ftruncate(fd int, length int64) error                 { return linux.Ftruncate(fd, length) }
func Pipe2(p []int, flags int) error                       { return linux.Pipe2(p, flags) }
func Fstat(fd int, stat *Stat_t) error                     { return linux.Fstat(fd, stat) }
func SetNonblock(fd int, nonblocking bool) error           { return linux.SetNonblock(fd, nonblocking) }

func Mmap(fd int, offset int64, length int, prot int, flags int) ([]byte, error) {
	return linux.Mmap(fd, offset, length, prot, flags)
}
func Munmap(b []byte) error                      { return linux.Munmap(b) }
func Madvise(b []byte, advice int) error         { return linux.Madvise(b, advice) }
func Getrlimit(resource int, rlim *Rlimit) error { return linux.Getrlimit(resource, rlim) }
func Setrlimit(resource int, rlim *Rlimit) error { return linux.Setrlimit(resource, rlim) }
func Socket(domain, typ, proto int) (int, error) { return linux.Socket(domain, typ, proto) }
func Bind(fd int, sa Sockaddr) error             { return linux.Bind(fd, sa) }
func Getsockname(fd int) (Sockaddr, error)       { return linux.Getsockname(fd) }
func SetsockoptInt(fd, level, opt, value int) error {
	return linux.SetsockoptInt(fd, level, opt, value)
}
func Sendto(fd int, p []byte, flags int, to Sockaddr) error {
	return linux.Sendto(fd, p, flags, to)
}
func Recvfrom(fd int, p []byte, flags int) (int, Sockaddr, error) {
	return linux.Recvfrom(fd, p, flags)
}

func Major(dev uint64) uint32           { return linux.Major(dev) }
func Minor(dev uint64) uint32           { return linux.Minor(dev) }
func ByteSliceToString(s []byte) string { return linux.ByteSliceToString(s) }
