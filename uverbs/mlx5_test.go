package uverbs

// The mlx5 ECE logic without hardware: driver data bytes at the offsets of
// mlx5-abi.h (comp_mask at 36 of the context response; ece_options at 48
// of create-QP, 4 of its response, 12 of modify-QP, 8 of its response) and
// the provider-side rules of rdma-core's mlx5_set_ece / mlx5_query_ece.

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/unix"
)

func mlx5TestQP() *QP {
	return &QP{pd: &PD{ctx: &Context{dev: Device{Name: "mlx5_0"}}}, typ: 2}
}

func TestMLX5ContextECEBit(t *testing.T) {
	p := &mlx5Provider{pageSize: 4096}
	ins, out := p.contextData()
	in := ins[0]
	if len(ins) != 6 || len(in) != 32 || len(out) != 72 || ne.Uint32(in[0:]) != 16 || ne.Uint32(in[4:]) != 4 ||
		ne.Uint32(in[8:]) != 1 || in[16] != 1 || ne.Uint64(in[24:]) != 3 {
		t.Fatalf("context request % x (%d-byte response)", in, len(out))
	}
	if len(ins[1]) != 24 || len(ins[2]) != 16 || ne.Uint32(ins[3][8:]) != 0 || len(ins[5]) != 16 {
		t.Fatalf("retry lengths %d %d, no-DEVX flags %#x", len(ins[1]), len(ins[2]), ne.Uint32(ins[3][8:]))
	}
	ne.PutUint32(out[36:], 1<<2|1<<0)
	p.parseContextResp(out)
	if !p.eceSupported {
		t.Fatal("ECE bit not seen")
	}
	if c := p.createQPCmd(); c.ECEOptions != 0x10000000 {
		t.Errorf("create-QP ece_options %#x", c.ECEOptions)
	}
	ne.PutUint32(out[36:], 1<<0)
	p.parseContextResp(out)
	if p.eceSupported || p.createQPCmd().ECEOptions != 0 {
		t.Error("ECE without the bit")
	}
}

func TestMLX5ECEStateMachine(t *testing.T) {
	p := &mlx5Provider{eceSupported: true}
	q := mlx5TestQP()
	// The create response reports the firmware's choice.
	resp := make([]byte, 40)
	ne.PutUint32(resp[4:], 0x30000001)
	p.qpCreated(q, resp)
	if e, err := p.queryECE(q); err != nil || e != (ece.ECE{VendorID: 0x15b3, Options: 0x30000001}) {
		t.Fatalf("query after create: %v %v", e, err)
	}
	// Nothing pending: a modify carries no driver data.
	if in, _, ex := p.modifyQPData(q, nil, 0); in != nil || ex {
		t.Fatal("driver data without a pending set")
	}
	for _, bad := range []ece.ECE{{VendorID: 0x8086, Options: 1}, {VendorID: 0x15b3, Options: 1, CompMask: 1}} {
		if err := p.setECE(q, bad); !errors.Is(err, unix.EINVAL) {
			t.Errorf("set %v: %v", bad, err)
		}
	}
	if err := p.setECE(q, ece.ECE{VendorID: 0x15b3, Options: 0x30000003}); err != nil {
		t.Fatal(err)
	}
	if e, _ := p.queryECE(q); e.Options != 0 {
		t.Errorf("set must clear the reported options, got %#x", e.Options)
	}
	in, out, ex := p.modifyQPData(q, nil, 0)
	if !ex || len(in) != 16 || len(out) != 16 || ne.Uint32(in[12:]) != 0x30000003 || ne.Uint32(in[0:]) != 0 {
		t.Fatalf("modify driver data % x ex=%v", in, ex)
	}
	ne.PutUint32(out[0:], 16)
	ne.PutUint32(out[8:], 0x30000002)
	p.modifyQPDone(q, nil, 0, out)
	if e, _ := p.queryECE(q); e.Options != 0x30000002 {
		t.Errorf("after modify: %v", e)
	}
	if in, _, ex := p.modifyQPData(q, nil, 0); in != nil || ex {
		t.Error("set not cleared by the modify")
	}
}

func TestMLX5WithoutFirmwareECE(t *testing.T) {
	p := &mlx5Provider{}
	err := p.setECE(mlx5TestQP(), ece.ECE{VendorID: 0x15b3, Options: 1})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("set without support: %v", err)
	}
}

func TestGenericProviderHasNoECE(t *testing.T) {
	q := mlx5TestQP()
	if _, err := (genericProvider{}).queryECE(q); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Error(err)
	}
}

// TestHasECE: only mlx5 carries ECE; rxe and the generic provider let
// callers skip the ECE calls (cm does for library QPs).
func TestHasECE(t *testing.T) {
	for _, tc := range []struct {
		p    provider
		want bool
	}{{&mlx5Provider{eceSupported: true}, true}, {&mlx5Provider{}, false}, {&rxeProvider{}, false}, {genericProvider{}, false}} {
		if got := (&Context{prov: tc.p}).HasECE(); got != tc.want {
			t.Errorf("%s: HasECE %v, want %v", tc.p.name(), got, tc.want)
		}
	}
}
