//go:build !linux

package unix

import "syscall"

// IsLinux reports whether the functions of this package reach a kernel.
const IsLinux = false

// Errno is syscall.Errno: this system's errnos, which rdma.ErrnoSentinel
// maps.
type Errno = syscall.Errno

// This system's own errnos.
const (
	EACCES          = syscall.EACCES
	EADDRINUSE      = syscall.EADDRINUSE
	EADDRNOTAVAIL   = syscall.EADDRNOTAVAIL
	EAFNOSUPPORT    = syscall.EAFNOSUPPORT
	EAGAIN          = syscall.EAGAIN
	EBADF           = syscall.EBADF
	EBADMSG         = syscall.EBADMSG
	EBUSY           = syscall.EBUSY
	ECONNREFUSED    = syscall.ECONNREFUSED
	EEXIST          = syscall.EEXIST
	EFAULT          = syscall.EFAULT
	EHOSTUNREACH    = syscall.EHOSTUNREACH
	EINTR           = syscall.EINTR
	EINVAL          = syscall.EINVAL
	EIO             = syscall.EIO
	EMFILE          = syscall.EMFILE
	EMSGSIZE        = syscall.EMSGSIZE
	ENETUNREACH     = syscall.ENETUNREACH
	ENODEV          = syscall.ENODEV
	ENOENT          = syscall.ENOENT
	ENOMEM          = syscall.ENOMEM
	ENOSPC          = syscall.ENOSPC
	ENOSYS          = syscall.ENOSYS
	ENOTTY          = syscall.ENOTTY
	ENXIO           = syscall.ENXIO
	EOPNOTSUPP      = syscall.EOPNOTSUPP
	EPERM           = syscall.EPERM
	EPROTONOSUPPORT = syscall.EPROTONOSUPPORT
	ETIMEDOUT       = syscall.ETIMEDOUT
)

// Linux's values (linux/amd64); no kernel sees them here.
const (
	O_RDWR     = 0x2
	O_WRONLY   = 0x1
	O_CREAT    = 0x40
	O_CLOEXEC  = 0x80000
	O_NONBLOCK = 0x800

	PROT_READ     = 0x1
	PROT_WRITE    = 0x2
	MAP_SHARED    = 0x1
	MAP_PRIVATE   = 0x2
	MAP_ANONYMOUS = 0x20
	MADV_DONTFORK = 0xa

	S_IFMT  = 0xf000
	S_IFCHR = 0x2000

	RLIMIT_MEMLOCK = 0x8
	RLIM_INFINITY  = 0xffffffffffffffff
)

// Netlink: a wire format, so Linux's values on every system (the message
// codecs built on them work, and are tested, everywhere).
const (
	AF_NETLINK      = 0x10
	SOCK_RAW        = 0x3
	SOCK_CLOEXEC    = 0x80000
	SOL_NETLINK     = 0x10e
	NETLINK_EXT_ACK = 0xb
	MSG_PEEK        = 0x2
	MSG_TRUNC       = 0x20

	NLMSG_ALIGNTO     = 0x4
	NLMSG_HDRLEN      = 0x10
	NLMSG_NOOP        = 0x1
	NLMSG_ERROR       = 0x2
	NLMSG_DONE        = 0x3
	NLMSG_OVERRUN     = 0x4
	NLMSG_MIN_TYPE    = 0x10
	NLM_F_REQUEST     = 0x1
	NLM_F_MULTI       = 0x2
	NLM_F_DUMP        = 0x300
	NLM_F_CAPPED      = 0x100
	NLM_F_ACK_TLVS    = 0x200
	NLMSGERR_ATTR_MSG = 0x1

	NLA_ALIGNTO         = 0x4
	NLA_HDRLEN          = 0x4
	NLA_F_NESTED        = 0x8000
	NLA_F_NET_BYTEORDER = 0x4000
)

// Stat_t has the fields this module reads.
type Stat_t struct {
	Dev  uint64
	Ino  uint64
	Mode uint32
	Rdev uint64
	Size int64
}

// Rlimit is a resource limit.
type Rlimit struct {
	Cur uint64
	Max uint64
}

// Sockaddr is a socket address; only this package's types implement it.
type Sockaddr interface{ sockaddr() }

// SockaddrNetlink is a netlink socket address.
type SockaddrNetlink struct {
	Family uint16
	Pad    uint16
	Pid    uint32
	Groups uint32
}

func (*SockaddrNetlink) sockaddr() {}

func Open(path string, mode int, perm uint32) (int, error) { return -1, ErrNotSupported }
func Close(fd int) error                                   { return ErrNotSupported }
func Dup(fd int) (int, error)                              { return -1, ErrNotSupported }
func Read(fd int, p []byte) (int, error)                   { return 0, ErrNotSupported }
func Seek(fd int, offset int64, whence int) (int64, error) { return 0, ErrNotSupported }
func Ftruncate(fd int, length int64) error                 { return ErrNotSupported }
func Pipe2(p []int, flags int) error                       { return ErrNotSupported }
func Fstat(fd int, stat *Stat_t) error                     { return ErrNotSupported }
func SetNonblock(fd int, nonblocking bool) error           { return ErrNotSupported }
func Mmap(fd int, offset int64, length, prot, flags int) ([]byte, error) {
	return nil, ErrNotSupported
}
func Munmap(b []byte) error                                       { return ErrNotSupported }
func Madvise(b []byte, advice int) error                          { return ErrNotSupported }
func Getrlimit(resource int, rlim *Rlimit) error                  { return ErrNotSupported }
func Setrlimit(resource int, rlim *Rlimit) error                  { return ErrNotSupported }
func Socket(domain, typ, proto int) (int, error)                  { return -1, ErrNotSupported }
func Bind(fd int, sa Sockaddr) error                              { return ErrNotSupported }
func Getsockname(fd int) (Sockaddr, error)                        { return nil, ErrNotSupported }
func SetsockoptInt(fd, level, opt, value int) error               { return ErrNotSupported }
func Sendto(fd int, p []byte, flags int, to Sockaddr) error       { return ErrNotSupported }
func Recvfrom(fd int, p []byte, flags int) (int, Sockaddr, error) { return 0, nil, ErrNotSupported }

// Major is Linux's major number of a device number.
func Major(dev uint64) uint32 {
	return uint32((dev&0x00000000000fff00)>>8) | uint32((dev&0xfffff00000000000)>>32)
}

// Minor is Linux's minor number of a device number.
func Minor(dev uint64) uint32 {
	return uint32((dev&0x00000000000000ff)>>0) | uint32((dev&0x00000ffffff00000)>>12)
}

// ByteSliceToString returns s up to its first NUL byte.
func ByteSliceToString(s []byte) string {
	for i, b := range s {
		if b == 0 {
			return string(s[:i])
		}
	}
	return string(s)
}
