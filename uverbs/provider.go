package uverbs

import (
	"fmt"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/qp"
)

// provider is the user-space half of a driver: the driver data it adds
// to commands and the data path it runs (rdma-core's providers/*). rxe
// and mlx5 are complete; any other driver gets the generic provider
// (control path only).
type provider interface {
	name() string
	// checkABI validates the driver ABI version (uverbsN/abi_version).
	checkABI(dev Device) error
	// contextData returns the GET_CONTEXT driver inputs to try in order
	// (the next one after any failure; mlx5_cmd_get_context) and a
	// buffer for the driver output; contextCreated parses the output
	// and runs the provider's own open-time commands.
	contextData() (ins [][]byte, out []byte)
	contextCreated(x *Context, out []byte) error
	close() error

	// cqData prepares a CQ of at least cqe entries: driver data and the
	// entry count the command carries. cqAbort undoes it when the
	// command fails.
	cqData(cq *CQ, cqe int) (in, out []byte, cmdCQE int, err error)
	cqAbort(cq *CQ)
	newCQ(cq *CQ, out []byte) (cqOps, error)
	// allocQP returns a zero QP for CreateQP to fill; a provider may
	// allocate its own QP state with it, in one object (rxe). newQP and
	// qpData are given only QPs that allocQP returned.
	allocQP() *QP
	// qpData may change init.Cap (mlx5 sends the computed inline size);
	// qpAbort undoes it when the command fails.
	qpData(q *QP, init *QPInit) (in, out []byte, err error)
	qpAbort(q *QP)
	newQP(q *QP, out []byte) (qpOps, error)
	// pdData returns a buffer for ALLOC_PD's driver output (nil: none).
	pdData() (out []byte)
	// ahData checks an AH as the provider does before the command and
	// returns a buffer for the driver output.
	ahData(attr qp.AH) (out []byte, err error)
	ahCreated(ah *AH, out []byte)
	// modifyQPData returns driver data for a modify; ex asks for
	// EX_MODIFY_QP even without RATE_LIMIT. modifyQPDone follows a
	// successful modify.
	modifyQPData(q *QP, attr *qp.Attr, mask qp.Mask) (in, out []byte, ex bool)
	modifyQPDone(q *QP, attr *qp.Attr, mask qp.Mask, out []byte)
	// hasECE reports whether the provider carries ECE (mlx5, when the
	// context reports firmware support). A method, not an interface
	// assertion: a failed interface assertion takes the runtime's itab
	// lock on every call.
	hasECE() bool
	queryECE(q *QP) (ece.ECE, error)
	setECE(q *QP, e ece.ECE) error
}

// cqOps is a provider's CQ data path. poll returns a negative count
// when a completion could not be parsed (libmlx5 CQ_POLL_ERR).
type cqOps interface {
	poll(wc []WC) int
	close() error
}

// cqArmer is a CQ data path armed without a command (mlx5_arm_cq).
type cqArmer interface {
	arm(solicitedOnly bool) error
}

// cqEventer counts completion events per CQ (the provider's cq_event,
// called by ibv_get_cq_event for every event read).
type cqEventer interface{ event() }

// qpCapQuerier corrects the capacity QUERY_QP reports (mlx5_query_qp).
type qpCapQuerier interface{ queryCap(c *qp.Cap) }

// qpOps is a provider's QP data path.
type qpOps interface {
	postSend(wrs []SendWR) error
	postRecv(wrs []RecvWR) error
	close() error
}

func newProvider(driverID uint32) provider {
	switch driverID {
	case abi.RDMADriverRXE:
		return &rxeProvider{}
	case abi.RDMADriverMLX5:
		return &mlx5Provider{}
	}
	return genericProvider{}
}

// genericProvider serves drivers this package has no provider for: every
// control-path command works as far as the driver accepts it without
// driver data; there is no data path and no ECE.
type genericProvider struct{}

func (genericProvider) name() string                            { return "generic" }
func (genericProvider) checkABI(Device) error                   { return nil }
func (genericProvider) contextData() (ins [][]byte, out []byte) { return [][]byte{nil}, nil }
func (genericProvider) contextCreated(*Context, []byte) error   { return nil }
func (genericProvider) close() error                            { return nil }
func (genericProvider) cqData(_ *CQ, cqe int) (in, out []byte, cmdCQE int, err error) {
	return nil, nil, cqe, nil
}
func (genericProvider) cqAbort(*CQ)                                 {}
func (genericProvider) qpAbort(*QP)                                 {}
func (genericProvider) allocQP() *QP                                { return new(QP) }
func (genericProvider) newCQ(*CQ, []byte) (cqOps, error)            { return nil, nil }
func (genericProvider) pdData() []byte                              { return nil }
func (genericProvider) ahData(qp.AH) ([]byte, error)                { return nil, nil }
func (genericProvider) ahCreated(*AH, []byte)                       {}
func (genericProvider) modifyQPDone(*QP, *qp.Attr, qp.Mask, []byte) {}
func (genericProvider) newQP(*QP, []byte) (qpOps, error)            { return nil, nil }
func (genericProvider) qpData(*QP, *QPInit) (in, out []byte, err error) {
	return nil, nil, nil
}
func (genericProvider) modifyQPData(*QP, *qp.Attr, qp.Mask) (in, out []byte, ex bool) {
	return nil, nil, false
}
func (genericProvider) hasECE() bool { return false }
func (genericProvider) queryECE(q *QP) (ece.ECE, error) {
	return ece.ECE{}, notSupported("query ECE", q.pd.ctx.dev.Name, "provider has no ECE")
}
func (genericProvider) setECE(q *QP, _ ece.ECE) error {
	return notSupported("set ECE", q.pd.ctx.dev.Name, "provider has no ECE")
}

// abiRange checks a driver ABI version against what a provider accepts.
func abiRange(dev Device, prov string, lo, hi int) error {
	v := dev.Verbs.ABIVersion
	if v == 0 || (v >= lo && v <= hi) {
		return nil
	}
	return fmt.Errorf("%w: %s driver ABI %d (/sys/class/infiniband_verbs/%s/abi_version); the %s provider speaks %d..%d",
		ErrABIVersion, dev.Name, v, dev.Verbs.Name, prov, lo, hi)
}

// HasECE reports whether the device's provider carries ECE at all. Where
// it does not (rxe, and every provider but mlx5), QP.QueryECE and
// QP.SetECE always fail with ErrNotSupported, so callers can skip them,
// as libibverbs providers without ECE answer without a syscall.
func (x *Context) HasECE() bool { return x.prov.hasECE() }
