package uverbs

import (
	"fmt"
	"unsafe"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/qp"
	"golang.org/x/sys/unix"
)

// The mlx5 provider, as far as this package goes: the context request and
// response (which carries the ECE capability bit), and ECE per the mlx5
// ABI, following rdma-core's providers/mlx5 (mlx5_set_ece,
// mlx5_query_ece, and the ece_options of create-QP and modify-QP). Its
// data path (WQ buffers, doorbell records, UAR mapping) is not
// implemented, so CQs and QPs cannot be created on mlx5 yet. None of this
// has run on mlx5 hardware; the encodings are layout-tested against
// /usr/include/rdma/mlx5-abi.h and the ECE state machine is unit-tested.

type mlx5Provider struct {
	resp abi.MLX5AllocUcontextResp
	// eceSupported mirrors MLX5_CTX_FLAGS_ECE_SUPPORTED: the kernel set
	// MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE in the context response.
	eceSupported bool
}

// mlx5QPState is the provider-side ECE state of one QP (rdma-core
// struct mlx5_qp get_ece/set_ece).
type mlx5QPState struct {
	getECE uint32 // options the kernel/firmware reported
	setECE uint32 // options to send with the next modify
}

func (*mlx5Provider) name() string { return "mlx5" }

// The mlx5 driver ABI (MLX5_IB_UVERBS_ABI_VERSION) is 1.
func (*mlx5Provider) checkABI(dev Device) error { return abiRange(dev, "mlx5", 1, 1) }

func (p *mlx5Provider) contextData() (in, out []byte) {
	req := abi.MLX5AllocUcontextReqV2{TotalNumBfregs: 8, NumLowLatencyBfregs: 0, MaxCQEVersion: 1}
	return append([]byte(nil), abi.Bytes(&req)...), make([]byte, unsafe.Sizeof(abi.MLX5AllocUcontextResp{}))
}

func (p *mlx5Provider) contextCreated(_ *Context, out []byte) error {
	p.parseContextResp(out)
	return nil
}

func (p *mlx5Provider) parseContextResp(out []byte) {
	p.resp = abi.Decode[abi.MLX5AllocUcontextResp](out)
	p.eceSupported = p.resp.CompMask&abi.MLX5AllocUcontextRespMaskECE != 0
}

func (*mlx5Provider) close() error { return nil }

func (*mlx5Provider) cqData() (in, out []byte)         { return nil, nil }
func (*mlx5Provider) ahData() []byte                   { return nil }
func (*mlx5Provider) ahCreated(*AH, []byte)            {}
func (*mlx5Provider) newQP(*QP, []byte) (qpOps, error) { return nil, nil }

func (*mlx5Provider) newCQ(cq *CQ, _ []byte) (cqOps, error) {
	return nil, notSupported("create CQ", cq.ctx.dev.Name, "the mlx5 data path (CQ buffer, doorbell record) is not implemented")
}

// createQPCmd is the create-QP driver input mlx5 needs for ECE: with ECE
// supported, ece_options asks for ECE version 1 (rdma-core
// create_qp: MLX5_CTX_FLAGS_ECE_SUPPORTED → ece_options = 0x10000000).
func (p *mlx5Provider) createQPCmd() abi.MLX5CreateQP {
	var c abi.MLX5CreateQP
	if p.eceSupported {
		c.ECEOptions = abi.MLX5ECEVersion1
	}
	return c
}

func (p *mlx5Provider) qpData(q *QP, _ *QPInit) (in, out []byte, err error) {
	return nil, nil, notSupported("create QP", q.pd.ctx.dev.Name, "the mlx5 data path (WQ buffers, doorbell records, UAR) is not implemented")
}

// qpCreated records the firmware's ECE choice from the create response.
func (p *mlx5Provider) qpCreated(q *QP, out []byte) {
	resp := abi.Decode[abi.MLX5CreateQPResp](out)
	q.drv = &mlx5QPState{getECE: resp.ECEOptions}
}

func mlx5State(q *QP) *mlx5QPState {
	s, _ := q.drv.(*mlx5QPState)
	if s == nil {
		s = &mlx5QPState{}
		q.drv = s
	}
	return s
}

// modifyQPData sends EX_MODIFY_QP with mlx5_ib_modify_qp.ece_options when
// SetECE left options to apply (rdma-core mlx5_modify_qp).
func (p *mlx5Provider) modifyQPData(q *QP, _ *qp.Attr, _ qp.Mask) (in, out []byte, ex bool) {
	s := mlx5State(q)
	if s.setECE == 0 {
		return nil, nil, false
	}
	req := abi.MLX5ModifyQP{ECEOptions: s.setECE}
	return append([]byte(nil), abi.Bytes(&req)...), make([]byte, unsafe.Sizeof(abi.MLX5ModifyQPResp{})), true
}

// modifyQPDone takes the options the kernel reports (the response is
// copied only when the driver output is at least response_length long)
// and clears the pending set.
func (p *mlx5Provider) modifyQPDone(q *QP, out []byte) {
	if len(out) == 0 {
		return
	}
	s := mlx5State(q)
	resp := abi.Decode[abi.MLX5ModifyQPResp](out)
	s.getECE = resp.ECEOptions
	s.setECE = 0
}

// queryECE returns {0x15b3, options the device reported, 0}.
func (p *mlx5Provider) queryECE(q *QP) (ece.ECE, error) {
	return ece.ECE{VendorID: abi.MLX5VendorID, Options: mlx5State(q).getECE}, nil
}

// setECE requires comp_mask 0 and the Mellanox vendor id (EINVAL
// otherwise) and a context with ECE support (EOPNOTSUPP otherwise); it
// stores the options for the next modify and clears the reported ones.
func (p *mlx5Provider) setECE(q *QP, e ece.ECE) error {
	dev := q.pd.ctx.dev.Name
	if e.CompMask != 0 || e.VendorID != abi.MLX5VendorID {
		return &OpError{Op: "set ECE", Device: dev, Err: fmt.Errorf("vendor %#x comp_mask %#x (mlx5 takes vendor %#x, comp_mask 0): %w", e.VendorID, e.CompMask, abi.MLX5VendorID, unix.EINVAL)}
	}
	if !p.eceSupported {
		return notSupported("set ECE", dev, "the device firmware has no ECE (context comp_mask lacks MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE)")
	}
	s := mlx5State(q)
	s.setECE = e.Options
	s.getECE = 0
	return nil
}
