package scenario

import (
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/uverbs"
)

// The SRQ verbs of the scenario language (README section 4):
//
//	srq NAME max_wr=N max_sge=N          # record: "srq max_wr=.. max_sge=.." (what the provider granted)
//	srq_recv SRQ id=N sge=... [count=K]  # post receives to the SRQ
//	arm_srq SRQ limit=N                  # modify the SRQ's limit
//	query_srq SRQ                        # record: "srq max_wr=.. max_sge=.. limit=.."
//
// and qp ... srq=NAME for a QP that receives from it.

func (r *Runner) srqStep(l Line) error {
	switch l.Verb {
	case "srq":
		name, err := l.arg(0)
		if err != nil {
			return bad("%v", err)
		}
		wr, err1 := l.u64("max_wr", 0)
		sge, err2 := l.u64("max_sge", 0)
		if err := errors.Join(err1, err2); err != nil {
			return bad("%v", err)
		}
		if r.pd == nil {
			return bad("line %d: srq before pd", l.Num)
		}
		s, err := r.pd.CreateSRQ(uverbs.SRQInit{MaxWR: int(wr), MaxSGE: int(sge)})
		if err != nil {
			return err
		}
		r.srqs[name] = s
		c := s.Cap()
		r.Dev.Record(fmt.Sprintf("srq max_wr=%d max_sge=%d", c.MaxWR, c.MaxSGE))
		return nil
	case "srq_recv":
		s, err := r.srqArg(l, 0)
		if err != nil {
			return err
		}
		wrs, err := r.recvWRs(l)
		if err != nil {
			return err
		}
		return s.PostRecv(wrs)
	case "arm_srq":
		s, err := r.srqArg(l, 0)
		if err != nil {
			return err
		}
		limit, err := l.u64("limit", 0)
		if err != nil {
			return bad("%v", err)
		}
		return s.Arm(int(limit))
	case "query_srq":
		s, err := r.srqArg(l, 0)
		if err != nil {
			return err
		}
		a, err := s.Query()
		if err != nil {
			return err
		}
		r.Dev.Record(fmt.Sprintf("srq max_wr=%d max_sge=%d limit=%d", a.MaxWR, a.MaxSGE, a.Limit))
		return nil
	}
	return bad("line %d: unknown verb %q", l.Num, l.Verb)
}

func (r *Runner) srqArg(l Line, i int) (*uverbs.SRQ, error) {
	name, err := l.arg(i)
	if err != nil {
		return nil, bad("%v", err)
	}
	s := r.srqs[name]
	if s == nil {
		return nil, bad("line %d: no SRQ %q", l.Num, name)
	}
	return s, nil
}

// srqOpt is the srq=NAME option of a qp line (nil without one).
func (r *Runner) srqOpt(l Line) (*uverbs.SRQ, error) {
	name, ok := l.KV["srq"]
	if !ok {
		return nil, nil
	}
	s := r.srqs[name]
	if s == nil {
		return nil, bad("line %d: no SRQ %q", l.Num, name)
	}
	return s, nil
}
