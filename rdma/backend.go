package rdma

// Backend selects the connection manager behind package cm (and so behind
// the endpoint layer and rsocket).
type Backend string

// The backends. The zero value means BackendAuto.
const (
	BackendAuto   Backend = "auto"   // the kernel CM where rdma_ucm is loaded, else the user-space engine
	BackendKernel Backend = "kernel" // the kernel rdma_cm through /dev/infiniband/rdma_cm
	BackendUser   Backend = "user"   // this module's CM engine (cm/engine) over umad
)

// String returns "auto", "kernel" or "user" ("auto" for the zero value).
func (b Backend) String() string {
	if b == "" {
		return string(BackendAuto)
	}
	return string(b)
}
