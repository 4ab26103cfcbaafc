package sa

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
)

// ResolverConfig tunes a Resolver.
type ResolverConfig struct {
	// Timeout is how long one send waits for the SA's answer; 0 means
	// one second.
	Timeout time.Duration
	// Retries is how many times an unanswered query is sent again; a
	// negative value means none, 0 means 3.
	Retries int
	// FirstTID is the low 32 bits of the first transaction ID. umad
	// replaces the high 32 bits with the agent's, so answers are matched
	// on the low 32 bits.
	FirstTID uint32
}

// Defaulted returns cfg with its defaults filled in: a Timeout of one
// second for 0, 3 Retries for 0, and none (0) for a negative value.
func (cfg ResolverConfig) Defaulted() ResolverConfig {
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = 3
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	return cfg
}

// Outbound is a MAD the driver sends to the SM's LID, QP1, with Q_Key
// GSIQKey.
type Outbound struct {
	MAD [MADSize]byte
	// Retry counts earlier sends of the same query (0: first send).
	Retry uint8
}

// Result is the end of a query: the paths the SA returned, or why there
// are none.
type Result struct {
	Context uint64
	Paths   []PathRecord
	Err     error
}

type pending struct {
	context  uint64
	tid      uint32
	sends    int
	deadline time.Time
	mad      [MADSize]byte
}

// Resolver runs PathRecord queries without I/O, goroutines or clocks:
// Query returns the MAD to send, Receive consumes the SA's answers,
// Advance resends or gives up at the deadlines the driver's clock
// reaches. It is not safe for concurrent use.
type Resolver struct {
	timeout time.Duration
	retries int
	next    uint32
	q       []pending
}

// NewResolver returns a Resolver with cfg's settings.
func NewResolver(cfg ResolverConfig) *Resolver {
	cfg = cfg.Defaulted()
	return &Resolver{timeout: cfg.Timeout, retries: cfg.Retries, next: cfg.FirstTID}
}

// Query starts q (its TransactionID is the Resolver's to choose) and
// returns the MAD to send. context comes back in the Result.
func (r *Resolver) Query(now time.Time, context uint64, q Query) (Outbound, error) {
	var o Outbound
	tid := r.next
	r.next++
	q.TransactionID = uint64(tid)
	if _, err := q.MarshalTo(o.MAD[:]); err != nil {
		return Outbound{}, err
	}
	r.q = append(r.q, pending{context: context, tid: tid, sends: 1, deadline: now.Add(r.timeout), mad: o.MAD})
	return o, nil
}

// Pending is the number of queries without a result.
func (r *Resolver) Pending() int { return len(r.q) }

// Deadline is the earliest time Advance has work to do.
func (r *Resolver) Deadline() (time.Time, bool) {
	var d time.Time
	for i := range r.q {
		if d.IsZero() || r.q[i].deadline.Before(d) {
			d = r.q[i].deadline
		}
	}
	return d, !d.IsZero()
}

// Cancel forgets the queries started with context; a late answer to
// them is ignored.
func (r *Resolver) Cancel(context uint64) (n int) {
	k := 0
	for _, p := range r.q {
		if p.context == context {
			n++
			continue
		}
		r.q[k] = p
		k++
	}
	r.q = r.q[:k]
	return n
}

func (r *Resolver) remove(i int) pending {
	p := r.q[i]
	r.q = append(r.q[:i], r.q[i+1:]...)
	return p
}

// Receive consumes a MAD from the SA. It reports false for a MAD that
// answers no pending query (another agent's, a duplicate, a late answer,
// or one that does not parse) and for a busy answer, which the next
// resend retries.
func (r *Resolver) Receive(b []byte) (Result, bool) {
	v, err := ParseResponse(b)
	var st *StatusError
	if err != nil && !errors.As(err, &st) {
		return Result{}, false
	}
	tid := uint32(v.TransactionID())
	for i := range r.q {
		if r.q[i].tid != tid {
			continue
		}
		if st != nil && st.Status&1 != 0 {
			return Result{}, false
		}
		p := r.remove(i)
		res := Result{Context: p.context}
		if err != nil {
			res.Err = fmt.Errorf("sa: path query: %w", err)
			return res, true
		}
		if v.Len() == 0 {
			res.Err = fmt.Errorf("sa: path query: the SA answered no path: %w", rdma.ErrNoRoute)
			return res, true
		}
		res.Paths = make([]PathRecord, v.Len())
		for k := range res.Paths {
			v.Record(k).Decode(&res.Paths[k])
		}
		return res, true
	}
	return Result{}, false
}

// Advance resends every query whose deadline now has reached and ends
// with rdma.ErrTimeout those sent Retries+1 times. It appends to out and
// done and returns them.
func (r *Resolver) Advance(now time.Time, out []Outbound, done []Result) ([]Outbound, []Result) {
	for i := 0; i < len(r.q); {
		p := &r.q[i]
		if now.Before(p.deadline) {
			i++
			continue
		}
		if p.sends > r.retries {
			q := r.remove(i)
			done = append(done, Result{Context: q.context,
				Err: fmt.Errorf("sa: path query: no answer from the SA after %d sends: %w", q.sends, rdma.ErrTimeout)})
			continue
		}
		out = append(out, Outbound{MAD: p.mad, Retry: uint8(min(p.sends, 255))})
		p.sends++
		p.deadline = now.Add(r.timeout)
		i++
	}
	return out, done
}
