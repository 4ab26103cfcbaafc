package main

import (
	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// extQP is the program's own QP (the external-QP flow).
type extQP interface {
	Num() uint32
	QueryECE() (ece.ECE, error)
	SetECE(ece.ECE) error
	Modify(*qp.Attr, qp.Mask) error
	Close() error
}

// ownQP is an external QP with the CQ it needs.
type ownQP struct {
	uverbsQP
	cq *uverbs.CQ
}

func (o ownQP) Close() error {
	err := o.q.Close()
	if cerr := o.cq.Close(); err == nil {
		err = cerr
	}
	return err
}

// newExternalQP creates an RC QP of the program's own on the ID's device
// (for the connect-only mode: no data is sent).
func (a *app) newExternalQP(id *cm.ID) (extQP, error) {
	x, pd, err := id.Verbs()
	if err != nil {
		return nil, err
	}
	cq, err := x.CreateCQ(2, nil, 0)
	if err != nil {
		return nil, err
	}
	v, err := pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq,
		Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		cq.Close()
		return nil, err
	}
	a.dbg("created external QP %#x", v.Num())
	return ownQP{uverbsQP{v}, cq}, nil
}
