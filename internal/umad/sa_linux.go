//go:build linux

package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/mad/sa"
	"github.com/go-rdma/rdmacm/rdma"
)

// SA is a umad agent of the SubnAdm class (0x03, version 2) that asks the
// subnet administrator for path records, as ib_sa does for the rdma_cm.
// It registers with RMPP version 1, so the kernel reassembles a table
// answer of several segments and acknowledges them. The kernel's MAD
// layer resends a query and matches the answer to it: umad refuses a
// second send of a TID still waiting (is_duplicate), and ib_mad drops an
// answer no waiting send expects. Queries run one at a time.
type SA struct {
	p       *Port
	timeout time.Duration
	retries int
	mu      sync.Mutex // one query at a time: r, next and rbuf
	r       *sa.Resolver
	next    uint64
	rbuf    []byte
}

// OpenSA opens a umad device and registers the SA client agent on it.
// cfg sets the resend timeout and count (sa.ResolverConfig's defaults:
// one second, three resends).
func OpenSA(dev string, cfg sa.ResolverConfig) (*SA, error) {
	req := abi.UmadRegReq2{QPN: 1, MgmtClass: sa.MgmtClass, MgmtClassVersion: sa.ClassVersion, RMPPVersion: 1}
	p, err := openAgent(dev, &req)
	if err != nil {
		return nil, fmt.Errorf("umad: register SA agent on %s: %w", dev, err)
	}
	cfg = cfg.Defaulted()
	s := &SA{p: p, timeout: cfg.Timeout, retries: cfg.Retries, rbuf: make([]byte, abi.UmadHdrSize+maxMAD)}
	// The resolver matches and parses answers; its one deadline only
	// backs up the kernel's, which hands back a query it gave up on.
	if cfg.FirstTID == 0 {
		cfg.FirstTID = rand.Uint32()
	}
	s.r = sa.NewResolver(sa.ResolverConfig{FirstTID: cfg.FirstTID, Retries: -1,
		Timeout: s.timeout*time.Duration(s.retries+1) + time.Second})
	return s, nil
}

// Close unregisters the agent; a query under way returns ErrClosed.
func (s *SA) Close() error { return s.p.Close() }

// PathRecords sends q to the SA at sm (the port's SM LID and SL; a GID
// adds a GRH, which a RoCE port needs) and returns the records it
// answers. It ends with rdma.ErrTimeout when the kernel has sent it
// Retries+1 times unanswered, with rdma.ErrNoRoute for an answer without
// records, and early when ctx ends.
func (s *SA) PathRecords(ctx context.Context, sm engine.Addr, q sa.Query) ([]sa.PathRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := s.next
	start := time.Now()
	o, err := s.r.Query(time.Now(), id, q)
	if err != nil {
		return nil, fmt.Errorf("umad: %w", err)
	}
	defer s.r.Cancel(id)
	sm.QPN = 1
	if err := s.send(sm, o.MAD[:]); err != nil {
		return nil, err
	}
	tid := binary.BigEndian.Uint32(o.MAD[12:16])
	for {
		dl, _ := s.r.Deadline()
		m, err := s.recv(ctx, dl, tid)
		switch {
		case err == nil:
			if res, ok := s.r.Receive(m); ok && res.Context == id {
				return res.Paths, res.Err
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The kernel should have handed the query back by now.
			_, done := s.r.Advance(time.Now(), nil, nil)
			for _, d := range done {
				if d.Context == id {
					return nil, fmt.Errorf("umad: SA query: no answer and no timeout from the MAD layer in %v: %w",
						time.Since(start).Round(time.Millisecond), rdma.ErrTimeout)
				}
			}
		default:
			return nil, err
		}
	}
}

// send writes one query with the MAD layer's timeout and resends.
func (s *SA) send(to engine.Addr, m []byte) error {
	p := s.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	h := sendHeader(p.agent, to)
	h.TimeoutMs = uint32(s.timeout / time.Millisecond)
	h.Retries = uint32(s.retries)
	binary.BigEndian.PutUint32(h.QKey[:], sa.GSIQKey)
	copy(p.wbuf[:], abi.Bytes(&h))
	copy(p.wbuf[abi.UmadHdrSize:], m[:sa.MADSize])
	if err := p.write(p.wbuf[:]); err != nil {
		if err == errClosed {
			return err
		}
		return fmt.Errorf("umad: send SA query: %w", err)
	}
	return nil
}

// recv reads the next answer until dl or ctx's end. A table answer can
// be longer than rbuf: the read then fails with ENOSPC and leaves the
// MAD queued, and the header says how long it is. A send the kernel hands
// back ends the query when it is the query's (tid) and timed out; others
// are earlier queries'.
func (s *SA) recv(ctx context.Context, dl time.Time, tid uint32) ([]byte, error) {
	p := s.p
	if cd, ok := ctx.Deadline(); ok && cd.Before(dl) {
		dl = cd
	}
	_ = p.f.SetReadDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = p.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		var n int
		var rerr error
		err := p.rc.Read(func(fd uintptr) bool {
			n, rerr = kcall.Read(int(fd), s.rbuf)
			return rerr != unix.EAGAIN
		})
		if err == nil && rerr == unix.ENOSPC {
			h := abi.Decode[abi.UmadHdr](s.rbuf[:abi.UmadHdrSize])
			if int(h.Length) <= len(s.rbuf) || h.Length > 1<<20 {
				return nil, fmt.Errorf("umad: receive: a %d-byte answer", h.Length)
			}
			s.rbuf = make([]byte, h.Length)
			continue
		}
		if err == nil {
			err = rerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, os.ErrClosed) {
				return nil, errClosed
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, err
			}
			return nil, fmt.Errorf("umad: receive: %w", err)
		}
		_, m, err := parseRecv(s.rbuf[:n], p.port)
		var se *SendError
		if errors.As(err, &se) {
			if n >= abi.UmadHdrSize+16 && binary.BigEndian.Uint32(s.rbuf[abi.UmadHdrSize+12:]) == tid {
				if se.Status == uint32(unix.ETIMEDOUT) {
					return nil, fmt.Errorf("umad: SA query: no answer from the SA after %d sends: %w", s.retries+1, rdma.ErrTimeout)
				}
				return nil, fmt.Errorf("umad: SA query: the kernel failed the send: %w", unix.Errno(se.Status))
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return m, nil
	}
}
