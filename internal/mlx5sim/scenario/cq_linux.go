package scenario

import (
	"context"
	"os"
	"time"

	"github.com/go-rdma/rdmacm/qp"
)

// The CQ verbs of the scenario language (README section 4) beyond
// cq/poll/arm:
//
//	setenv NAME=VALUE   # the environment the providers read (MLX5_CQE_SIZE)
//	unsetenv NAME
//	get_event CHANNEL   # ibv_get_cq_event + ibv_ack_cq_events(cq, 1);
//	                    # record: "event cq=NAME"
//	reset QP            # ibv_modify_qp to RESET (the CQs are cleaned of it)
//
// and the device-side line "notify CQ" (a completion event on the CQ's
// channel), which Run sends to the device like "cqe". The runner runs
// in a process of its own, so setenv needs no undoing.

// eventWait bounds get_event: the device wrote the event before the
// line, so it is there at once, or never.
const eventWait = 5 * time.Second

func (r *Runner) cqStep(l Line) error {
	switch l.Verb {
	case "setenv":
		if len(l.KV) != 1 || len(l.Args) != 0 {
			return bad("line %d: setenv NAME=VALUE", l.Num)
		}
		for k, v := range l.KV {
			return os.Setenv(k, v)
		}
	case "unsetenv":
		name, err := l.arg(0)
		if err != nil {
			return bad("%v", err)
		}
		return os.Unsetenv(name)
	case "get_event":
		name, err := l.arg(0)
		if err != nil {
			return bad("%v", err)
		}
		ch := r.channels[name]
		if ch == nil {
			return bad("line %d: no channel %q", l.Num, name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), eventWait)
		defer cancel()
		cqs, err := ch.Wait(ctx)
		if err != nil {
			return err
		}
		for _, cq := range cqs {
			n := "?"
			for k, c := range r.cqs {
				if c == cq {
					n = k
				}
			}
			r.Dev.Record("event cq=" + n)
		}
		return nil
	case "reset":
		q, err := r.qpArg(l, 0)
		if err != nil {
			return err
		}
		return q.Modify(&qp.Attr{State: qp.Reset}, qp.MaskState)
	}
	return bad("line %d: unknown verb %q", l.Num, l.Verb)
}
