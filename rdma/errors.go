package rdma

import "errors"

// The sentinels. Match them with errors.Is; each package re-exports those
// it returns under the same name.
var (
	// ErrNotSupported: the kernel, the backend, the device or this module
	// lacks the operation (EOPNOTSUPP, ENOTSUP, EPROTONOSUPPORT, ENOSYS).
	ErrNotSupported = errors.New("not supported")
	// ErrNoDevice: no RDMA device, or not the one asked for (ENODEV, ENXIO).
	ErrNoDevice = errors.New("no RDMA device")
	// ErrPermission: a device node or an operation is not permitted
	// (EACCES, EPERM).
	ErrPermission = errors.New("permission denied")
	// ErrInvalidArgument: an argument is out of range (EINVAL).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrInvalidState: the operation is not valid in the object's state.
	ErrInvalidState = errors.New("invalid state")
	// ErrTimeout: an operation timed out (ETIMEDOUT).
	ErrTimeout = errors.New("timed out")
	// ErrClosed: the object was closed or destroyed.
	ErrClosed = errors.New("use of closed object")
	// ErrNoRoute: the address does not route over an RDMA device
	// (EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL).
	ErrNoRoute = errors.New("address does not route over RDMA")
	// ErrRejected: the peer rejected the connection (ECONNREFUSED).
	ErrRejected = errors.New("connection rejected")
	// ErrQueueFull: a work queue has no free slot.
	ErrQueueFull = errors.New("work queue full")
	// ErrABIVersion: the kernel speaks an ABI version this module does not.
	ErrABIVersion = errors.New("unsupported ABI version")
	// ErrBusy: the resource is in use (EBUSY, EADDRINUSE).
	ErrBusy = errors.New("resource busy")
	// ErrDisconnected: the connection ended.
	ErrDisconnected = errors.New("disconnected")
)

// OpError is the error of one operation in package Pkg: what was done, on
// which device or node, and the cause (often a syscall.Errno). It reads
// "PKG: op on dev (path): cause", one sentence with one package prefix:
// a cause that is itself an error of this module (an *OpError, or a text
// that starts with one of its package names and a colon) is printed
// without its own prefix, so a layer that wraps a lower layer's error
// names its operation and keeps the cause's detail without stacking
// prefixes. The cause stays reachable with errors.Is and errors.As, and a
// wrapped errno also matches the sentinel ErrnoSentinel maps it to.
type OpError struct {
	Pkg    string // "uverbs", "cm", …; empty for a clause inside another error
	Op     string // "create QP", "open", …; may be empty
	Device string // "rxe0"; may be empty
	Path   string // device node or file involved; may be empty
	Err    error
}

func (e *OpError) Error() string {
	s := ""
	if e.Pkg != "" {
		s = e.Pkg + ":"
	}
	if e.Op != "" {
		s = spaced(s, e.Op)
	}
	if e.Device != "" {
		s = spaced(s, "on "+e.Device)
	}
	if e.Path != "" {
		s = spaced(s, "("+e.Path+")")
	}
	if e.Err == nil {
		return s
	}
	cause := trimPrefix(e.Err.Error())
	if s == "" || s[len(s)-1] == ':' {
		return spaced(s, cause)
	}
	return s + ": " + cause
}

// spaced joins a and b with a space, or returns b if a is empty.
func spaced(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of the errno e wraps, unless
// the cause names another sentinel itself (ENODEV under ErrNoRoute is not
// also ErrNoDevice).
func (e *OpError) Is(target error) bool {
	s := errnoSentinelOf(e.Err)
	if s == nil || s != target {
		return false
	}
	for _, x := range sentinels {
		if x != s && errors.Is(e.Err, x) {
			return false
		}
	}
	return true
}

// sentinels are the sentinels an errno may map to.
var sentinels = []error{ErrNotSupported, ErrNoDevice, ErrPermission, ErrInvalidArgument, ErrTimeout, ErrNoRoute, ErrRejected, ErrBusy}

// pkgNames are the prefixes the module's packages start their errors with.
var pkgNames = []string{"rdmacm", "rsocket", "cm", "engine", "umad", "uverbs", "mad", "ece", "qp", "rdma"}

// trimPrefix returns msg without the package prefixes ("cm: ",
// "uverbs: ", …) this module's packages start their errors with.
func trimPrefix(msg string) string {
	for {
		rest, ok := trimOne(msg)
		if !ok {
			return msg
		}
		msg = rest
	}
}

func trimOne(msg string) (string, bool) {
	for _, p := range pkgNames {
		if len(msg) > len(p)+2 && msg[:len(p)] == p && msg[len(p)] == ':' && msg[len(p)+1] == ' ' {
			return msg[len(p)+2:], true
		}
	}
	return msg, false
}
