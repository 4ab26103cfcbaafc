package cm

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/errfmt"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// Sentinel errors. Errors returned by this package wrap one of them (when
// one applies) and, for kernel failures, the errno (a unix.Errno), so both
// errors.Is(err, cm.ErrNoDevice) and errors.Is(err, unix.ENODEV) work. The
// shared ones are package rdma's, the same values as uverbs' and
// cm/engine's; the package doc lists them all.
var (
	// ErrNotSupported: the backend or the device does not implement the
	// operation (EOPNOTSUPP, ENOSYS).
	ErrNotSupported = rdma.ErrNotSupported
	// ErrClosed: the channel or ID was closed or destroyed.
	ErrClosed = rdma.ErrClosed
	// ErrNoDevice: no RDMA device serves the address (ENODEV), or the
	// rdma_cm device is missing.
	ErrNoDevice = rdma.ErrNoDevice
	// ErrPermission: a device node (/dev/infiniband/rdma_cm, uverbsN)
	// may not be opened (EACCES, EPERM).
	ErrPermission = rdma.ErrPermission
	// ErrNoRoute: the address does not route over an RDMA device
	// (EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL).
	ErrNoRoute = rdma.ErrNoRoute
	// ErrTimeout: an address, route or connection step timed out
	// (ETIMEDOUT, UNREACHABLE) or the context's deadline passed.
	ErrTimeout = rdma.ErrTimeout
	// ErrRejected: the peer rejected the connection; the error is a
	// *RejectError.
	ErrRejected = rdma.ErrRejected
	// ErrInvalidState: the operation is not valid in the ID's state; the
	// error is a *StateError, or the CM engine's refusal.
	ErrInvalidState = rdma.ErrInvalidState
	// ErrInvalidArgument: an argument is out of range (private data too
	// long, a bad option value; EINVAL).
	ErrInvalidArgument = rdma.ErrInvalidArgument
	// ErrBusy: the address or service ID is in use (EBUSY, EADDRINUSE).
	ErrBusy = rdma.ErrBusy
	// ErrDisconnected: the connection ended while waiting.
	ErrDisconnected = rdma.ErrDisconnected

	// ErrECEOrder: an ECE step came too late or was skipped; the error is
	// an *ECEOrderError or *ECEUnansweredError.
	ErrECEOrder = errors.New("ECE ordering")
	// ErrLibraryQP: the ID's QP was created by CreateQP, which manages ECE
	// itself; SetLocalECE, RemoteECE and Establish are for external QPs
	// (librdmacm answers EINVAL).
	ErrLibraryQP = errors.New("the ID has a library-created QP")
	// ErrQPExists: CreateQP on an ID that already has one.
	ErrQPExists = errors.New("the ID already has a QP")
	// ErrDeclineWithLocalECE: Accept was asked to decline ECE although
	// SetLocalECE was called.
	ErrDeclineWithLocalECE = errors.New("DeclineECE conflicts with SetLocalECE")
	// ErrECEVendorMismatch: a REP answered the REQ's ECE with another
	// vendor (librdmacm turns this into CONNECT_ERROR).
	ErrECEVendorMismatch = errors.New("ECE vendor mismatch")
	// ErrConnect: the connection failed (CONNECT_ERROR).
	ErrConnect = errors.New("connection error")
)

// StateError reports an operation refused because of the ID's state.
type StateError struct {
	Op    string
	State State
}

func (e *StateError) Error() string {
	return fmt.Sprintf("cm: %s: not valid in state %s", words(e.Op), e.State)
}

// Is matches ErrInvalidState.
func (e *StateError) Is(target error) bool { return target == ErrInvalidState }

// ECEOrderError reports an ECE operation after the message that carries
// the local ECE has left: the REQ (active side, from Connect on) or the
// REP (passive side, from Accept on).
type ECEOrderError struct {
	Op    string
	State State
	Role  Role
}

func (e *ECEOrderError) Error() string {
	msg := "the connection handshake"
	switch e.Role {
	case RoleActive:
		msg = "the REQ"
	case RolePassive:
		msg = "the REP"
	case RoleListener:
		return fmt.Sprintf("cm: %s: a listening ID carries no ECE (state %s)", words(e.Op), e.State)
	}
	return fmt.Sprintf("cm: %s: %s carrying the local ECE has already been sent (state %s)", words(e.Op), msg, e.State)
}

// Is matches ErrECEOrder.
func (e *ECEOrderError) Is(target error) bool { return target == ErrECEOrder }

// ECEUnansweredError reports an Accept on an ID with an external QP whose
// REQ offered ECE while the application neither set its local ECE nor
// declined: the REP would claim options the QP may not have applied.
type ECEUnansweredError struct {
	// Remote is the ECE the REQ carried.
	Remote ece.ECE
}

func (e *ECEUnansweredError) Error() string {
	return fmt.Sprintf("cm: accept: the REQ offered ECE %v; apply it to the QP and call SetLocalECE, or set ConnParam.DeclineECE", e.Remote)
}

// Is matches ErrECEOrder.
func (e *ECEUnansweredError) Is(target error) bool { return target == ErrECEOrder }

// RejectError is a connection rejected by the peer (REJECTED event): the
// CM REJ reason (IBTA vol. 1 §12.6.7.2), its name, the additional reject
// information, the private data and, on the active side, the address
// connected to. It matches ErrRejected and, as librdmacm's rdma_connect
// reports every REJECTED, ECONNREFUSED (errors.Is, errors.As). Reason 8,
// invalid service ID, is the peer's CM saying nothing listens on the port:
// it reads "connection refused", as a TCP connect to a closed port does.
type RejectError struct {
	// Reason is the REJ reason; Reason.String() is its name, e.g.
	// "vendor option is not supported" for 35.
	Reason      mad.RejectReason
	ARI         []byte
	PrivateData []byte
	// Addr is the destination of the active ID that was rejected (the one
	// ResolveAddr resolved); zero on a passive ID.
	Addr netip.AddrPort
}

func (e *RejectError) Error() string {
	s := "cm: "
	if e.Addr.IsValid() {
		s += "connect to " + e.Addr.String() + ": "
	}
	if e.Reason == mad.RejectInvalidServiceID {
		return s + fmt.Sprintf("connection refused: no listener (reason %d, %s)", uint16(e.Reason), e.Reason)
	}
	return s + fmt.Sprintf("connection rejected: reason %d (%s)", uint16(e.Reason), e.Reason)
}

// Is matches ErrRejected.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// Unwrap returns ECONNREFUSED, the errno librdmacm gives a rejected
// connect.
func (e *RejectError) Unwrap() error { return unix.ECONNREFUSED }

// opWords names the operations (the methods' names, as StateError.Op
// holds them) in the words the messages use.
var opWords = map[string]string{
	"Bind":           "bind",
	"ResolveAddr":    "resolve address",
	"ResolveRoute":   "resolve route",
	"Listen":         "listen",
	"GetRequest":     "get request",
	"Notify":         "notify",
	"InitQPAttr":     "get QP attributes",
	"CreateQP":       "create QP",
	"CreateSRQ":      "create SRQ",
	"Connect":        "connect",
	"Accept":         "accept",
	"Reject":         "reject",
	"RejectECE":      "reject ECE",
	"Establish":      "establish",
	"Disconnect":     "disconnect",
	"SetLocalECE":    "set local ECE",
	"RemoteECE":      "get remote ECE",
	"CreateID":       "create ID",
	"Destroy":        "destroy ID",
	"Query":          "query address",
	"Route":          "query route",
	"GetEvent":       "get event",
	"JoinMulticast":  "join multicast group",
	"LeaveMulticast": "leave multicast group",
}

// words returns op in the words of a message.
func words(op string) string {
	if w, ok := opWords[op]; ok {
		return w
	}
	return op
}

// eventError is an error event's status (without the event's name): its
// sentinel and its errno, both reachable. It reads as the errno when the
// errno already stands for the sentinel.
type eventError struct {
	sentinel error      // may be nil
	errno    unix.Errno // may be 0
}

func (e *eventError) Error() string {
	switch {
	case e.errno == 0:
		return e.sentinel.Error()
	case e.sentinel == nil || rdma.ErrnoSentinel(e.errno) == e.sentinel:
		return e.errno.Error()
	}
	return e.sentinel.Error() + ": " + e.errno.Error()
}

func (e *eventError) Unwrap() []error {
	switch {
	case e.errno == 0:
		return []error{e.sentinel}
	case e.sentinel == nil:
		return []error{e.errno}
	}
	return []error{e.sentinel, e.errno}
}

// errnoError wraps a backend's error (an errno, an engine error) with the
// operation, a method name or words; the *rdma.OpError prints the cause
// without its package prefix and matches the errno's sentinel
// (rdma.ErrnoSentinel).
func errnoError(op string, err error) error {
	return errfmt.Wrap("cm", words(op), err)
}

// statusErrno turns an event status (a negative errno) into an errno.
func statusErrno(status int32) unix.Errno {
	if status < 0 {
		return unix.Errno(-status)
	}
	return unix.Errno(status)
}

// errKernelTrace: Options.Trace asks for MADs the kernel builds.
var errKernelTrace = fmt.Errorf("cm: trace MADs: the kernel backend's MADs are built by the kernel's CM; capture them with tcpdump on the RoCE netdev (udp port 4791): %w", ErrNotSupported)
