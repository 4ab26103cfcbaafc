//go:build linux

package rdmacm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// envFanInClient makes the test binary a fan-in client process (see
// fanInClient) instead of running tests: "address first conns msgs size".
const envFanInClient = "RDMACM_FANIN_CLIENT"

// A package init, not a TestMain: the client processes run before the
// testing package sees their command line.
func init() {
	if spec := os.Getenv(envFanInClient); spec != "" {
		if err := fanInClient(spec); err != nil {
			fmt.Fprintln(os.Stderr, "fan-in client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// fanInMsg is message seq of client c, size bytes: a header, then a
// pattern of both, so that a byte in the wrong slot shows.
func fanInMsg(b []byte, c, seq int) {
	n := copy(b, fmt.Sprintf("fanin %d %d\n", c, seq))
	for i := n; i < len(b); i++ {
		b[i] = byte(c*7 + seq + i)
	}
}

// parseFanInMsg checks a message and returns its client and sequence.
func parseFanInMsg(b []byte) (c, seq int, err error) {
	line, _, ok := bytes.Cut(b, []byte("\n"))
	if _, err := fmt.Sscanf(string(line), "fanin %d %d", &c, &seq); err != nil || !ok {
		return 0, 0, fmt.Errorf("bad header %q", line)
	}
	want := make([]byte, len(b))
	fanInMsg(want, c, seq)
	if !bytes.Equal(b, want) {
		return c, seq, fmt.Errorf("client %d message %d: payload differs", c, seq)
	}
	return c, seq, nil
}

// fanInClient dials conns connections (clients first..first+conns-1),
// sends msgs messages of size bytes on each, one at a time, and keeps
// every connection until the server ends it.
func fanInClient(spec string) error {
	f := strings.Fields(spec)
	if len(f) != 5 {
		return fmt.Errorf("%s=%q: want address first conns msgs size", envFanInClient, spec)
	}
	var n [4]int
	for i := range n {
		var err error
		if n[i], err = strconv.Atoi(f[i+1]); err != nil {
			return err
		}
	}
	addr, first, conns, msgs, size := f[0], n[0], n[1], n[2], n[3]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 8) // dials at once
	errs := make(chan error, conns)
	for i := range conns {
		go func() {
			sem <- struct{}{}
			ep, err := rdmacm.Dial(ctx, addr, &rdmacm.EndpointOptions{MaxSendWR: 1, MaxRecvWR: 1})
			<-sem
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", first+i, err)
				return
			}
			defer ep.Close()
			errs <- fanInSend(ctx, ep, first+i, msgs, size)
		}()
	}
	var all []error
	for range conns {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	fmt.Printf("fan-in client: %d connections, %d messages each, all sent and ended by the server\n", conns, msgs)
	return nil
}

func fanInSend(ctx context.Context, ep *rdmacm.Endpoint, c, msgs, size int) error {
	buf, err := ep.RegMsgs(size)
	if err != nil {
		return err
	}
	defer buf.Close()
	for seq := range msgs {
		fanInMsg(buf.Bytes(), c, seq)
		if err := ep.PostSend(buf, 0, size); err != nil {
			return fmt.Errorf("client %d message %d: %w", c, seq, err)
		}
		if _, err := ep.WaitSend(ctx); err != nil {
			return fmt.Errorf("client %d message %d: %w", c, seq, err)
		}
	}
	select { // connected until the server has all and disconnects
	case <-ep.Done():
		if err := ep.Err(); err != io.EOF {
			return fmt.Errorf("client %d: connection ended by %w", c, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client %d: the server never ended the connection: %w", c, ctx.Err())
	}
}

// TestSRQFanInInGuest: one server endpoint set on one shared receive queue
// and one CQ, fanInConns clients connected at once from fanInProcs
// processes in guest b, each sending fanInMsgs messages. Every message
// arrives once, intact, on the connection it was sent on, and the
// server's registered memory is the SRQ's, whatever the number of
// connections; the log compares it with one receive ring per connection.
func TestSRQFanInInGuest(t *testing.T) {
	guest.Require(t)
	const (
		procs, perProc = 4, 50
		conns          = procs * perProc
		msgs, size     = 4, 512
		slots          = 256 // above the clients' one message in flight each: no RNR
		port           = "7420"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	backend := guestBackend()
	t0 := time.Now()

	srq, err := rdmacm.NewSRQ(slots, size)
	if err != nil {
		t.Fatal(err)
	}
	defer srq.Close()
	cq, err := rdmacm.NewCQ(2 * slots)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	l, err := rdmacm.Listen(exampleHost+":"+port, &rdmacm.EndpointOptions{Backend: backend, SRQ: srq, RecvCQ: cq, SendCQ: cq, MaxSendWR: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	var (
		mu      sync.Mutex
		eps     = map[uint32]*rdmacm.Endpoint{}
		tickets atomic.Int32
		accErr  = make(chan error, 8)
		accWG   sync.WaitGroup
		first   = make(chan struct{}) // closed on the first Accept: CQ.Next needs an endpoint
		once    sync.Once
	)
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ep := range eps {
			ep.Close()
		}
	}
	defer closeAll()
	for range 8 { // Accepts at once
		accWG.Add(1)
		go func() {
			defer accWG.Done()
			for tickets.Add(1) <= conns {
				ep, err := l.Accept(ctx)
				if err != nil {
					accErr <- err
					return
				}
				mu.Lock()
				eps[ep.QPNum()] = ep
				mu.Unlock()
				once.Do(func() { close(first) })
			}
		}()
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var clients []*guest.Process
	for p := range procs {
		cmd := fmt.Sprintf("%s='%s:%s %d %d %d %d' %s", envFanInClient, exampleHost, port, p*perProc, perProc, msgs, size, self)
		proc, err := guest.Peer().Start(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer proc.Stop(context.Background())
		clients = append(clients, proc)
	}

	select {
	case <-first:
	case err := <-accErr:
		t.Fatalf("Accept: %v\n%s", err, clientOutput(clients))
	case <-ctx.Done():
		t.Fatalf("no connection: %v\n%s", ctx.Err(), clientOutput(clients))
	}
	// Receive every message from the one CQ, giving each slot back.
	type key struct{ client, seq int }
	seen := map[key]uint32{} // to the QP it came on
	for len(seen) < conns*msgs {
		wc, err := cq.Next(ctx)
		if err != nil {
			select {
			case e := <-accErr:
				err = fmt.Errorf("%w (Accept: %w)", err, e)
			default:
			}
			t.Fatalf("after %d messages: %v\n%s", len(seen), err, clientOutput(clients))
		}
		if wc.Opcode != rdmacm.WCRecv {
			t.Fatalf("completion %+v: not a receive", wc)
		}
		c, seq, err := parseFanInMsg(srq.Data(wc))
		if err != nil {
			t.Fatalf("QP %d slot %d: %v", wc.QPNum, wc.ID, err)
		}
		k := key{c, seq}
		if _, dup := seen[k]; dup || c < 0 || c >= conns || seq < 0 || seq >= msgs {
			t.Fatalf("client %d message %d: received twice or unknown", c, seq)
		}
		seen[k] = wc.QPNum
		if err := srq.PostRecv(int(wc.ID)); err != nil {
			t.Fatalf("repost slot %d: %v", wc.ID, err)
		}
	}
	accWG.Wait()
	close(accErr)
	for err := range accErr {
		t.Fatalf("Accept: %v", err)
	}
	elapsed := time.Since(t0)

	// Every connection is up at once, and each carried one client's
	// messages only. (The acceptors are done: eps is the test's alone.)
	if len(eps) != conns {
		t.Fatalf("%d endpoints accepted, want %d", len(eps), conns)
	}
	for qpn, ep := range eps {
		select {
		case <-ep.Done():
			t.Fatalf("endpoint of QP %d gone before the end: %v", qpn, ep.Err())
		default:
		}
	}
	clientOf := map[uint32]int{}
	for k, qpn := range seen {
		if eps[qpn] == nil {
			t.Fatalf("client %d message %d came on QP %d, no accepted endpoint's", k.client, k.seq, qpn)
		}
		if c, ok := clientOf[qpn]; ok && c != k.client {
			t.Fatalf("QP %d carried clients %d and %d", qpn, c, k.client)
		}
		clientOf[qpn] = k.client
	}

	// The server's registered memory: the SRQ's, as the device reports it
	// for this process, against one receive ring per connection (the
	// endpoint's default of DefaultMaxWR receives, and the least, one).
	srqBytes := srq.MR().Len()
	measured, nMR, raw := processMRBytes(ctx, t)
	ring := conns * rdmacm.DefaultMaxWR * size
	t.Logf("fan-in: %d connections from %d processes, %d messages of %d bytes each, all delivered in %v (backend %s)",
		conns, procs, conns*msgs, size, elapsed.Round(time.Millisecond), backend)
	t.Logf("fan-in: server registered memory: SRQ %d slots x %d B = %d KiB (device: %d MRs, %d KiB for this process); "+
		"one receive ring per connection: %d x %d x %d B = %d KiB (%.1fx), or %d KiB with rings of one receive",
		slots, size, srqBytes>>10, nMR, measured>>10, conns, rdmacm.DefaultMaxWR, size, ring>>10, float64(ring)/float64(srqBytes), conns*size>>10)
	if srqBytes != slots*size || measured != srqBytes {
		t.Errorf("server registered %d bytes (device: %d), want the SRQ's %d only; pid %d, rdma resource show mr:\n%s", srqBytes, measured, slots*size, os.Getpid(), raw)
	}

	// Disconnect them all; every client process then exits 0.
	closeAll()
	for p, proc := range clients {
		res, err := proc.Wait(ctx)
		if err != nil {
			t.Fatalf("client process %d: %v\n%s%s", p, err, proc.Stdout(), proc.Stderr())
		}
		if !strings.Contains(res.Stdout, "all sent") {
			t.Errorf("client process %d: %s%s", p, res.Stdout, res.Stderr)
		}
	}
	if err := cq.Close(); err != nil {
		t.Errorf("CQ Close: %v", err)
	}
	if err := srq.Close(); err != nil {
		t.Errorf("SRQ Close: %v", err)
	}
	t.Logf("fan-in: whole test %v", time.Since(t0).Round(time.Millisecond))
}

func clientOutput(procs []*guest.Process) string {
	var b strings.Builder
	for p, proc := range procs {
		fmt.Fprintf(&b, "client process %d:\n%s%s", p, proc.Stdout(), proc.Stderr())
	}
	return b.String()
}

// processMRBytes sums the lengths of this process's MRs as the kernel
// reports them (rdma resource show mr). The kernel names the thread that
// registered an MR, so every thread of the process counts.
func processMRBytes(ctx context.Context, t *testing.T) (bytes, n int, raw string) {
	t.Helper()
	r, err := guest.Local().Run(ctx, "rdma -j resource show mr")
	if err != nil {
		t.Fatalf("rdma resource show mr: %v", err)
	}
	var mrs []struct {
		MRLen int `json:"mrlen"`
		PID   int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &mrs); err != nil {
		t.Fatalf("rdma resource show mr: %v\n%s", err, r.Stdout)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	ours := map[int]bool{}
	for _, d := range tasks {
		tid, _ := strconv.Atoi(d.Name())
		ours[tid] = true
	}
	for _, m := range mrs {
		if ours[m.PID] {
			bytes += m.MRLen
			n++
		}
	}
	return bytes, n, r.Stdout
}

// TestSRQBadInputInGuest: an SRQ of more slots than the device allows
// fails the Accept that would make it, with an error that says so, and
// the client's Dial is rejected; an endpoint with the caller's QP is
// refused on an SRQ.
func TestSRQBadInputInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	backend := guestBackend()
	dev, err := uverbs.DefaultDiscovery.Device("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	x, err := uverbs.OpenDevice(dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	da, err := x.QueryDevice()
	x.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		slots int
		setup rdmacm.SetupFunc
		want  string
	}{
		{"beyond the device", da.MaxSRQWR + 1, nil, "max_srq_wr"},
		{"the caller's QP", 4, func(ep *rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
			cq, err := ep.PD().Context().CreateCQ(4, nil, 0)
			if err != nil {
				return rdmacm.ConnSetup{}, err
			}
			q, err := ep.PD().CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq, Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				cq.Close()
				return rdmacm.ConnSetup{}, err
			}
			return rdmacm.ConnSetup{QP: q, Abort: func() { q.Close(); cq.Close() }}, nil
		}, "caller's QP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srq, err := rdmacm.NewSRQ(c.slots, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer srq.Close()
			cq, err := rdmacm.NewCQ(c.slots)
			if err != nil {
				t.Fatal(err)
			}
			defer cq.Close()
			l, err := rdmacm.Listen(exampleHost+":7421", &rdmacm.EndpointOptions{Backend: backend, SRQ: srq, RecvCQ: cq, Setup: c.setup})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			accErr := make(chan error, 1)
			go func() {
				ep, err := l.Accept(ctx)
				if err == nil {
					ep.Close()
				}
				accErr <- err
			}()
			ep, dialErr := rdmacm.Dial(ctx, exampleHost+":7421", &rdmacm.EndpointOptions{Backend: backend})
			if dialErr == nil {
				ep.Close()
			}
			err = <-accErr
			t.Logf("Accept: %v; Dial: %v", err, dialErr)
			if !errors.Is(err, rdmacm.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Accept: %v, want ErrInvalidArgument naming %q", err, c.want)
			}
			if !errors.Is(dialErr, rdmacm.ErrRejected) {
				t.Errorf("Dial: %v, want ErrRejected", dialErr)
			}
		})
	}
}

// TestSRQDialInGuest: the active side on an SRQ. Two dialed endpoints
// receive from one SRQ of 4 slots through one CQ; the server sends 3
// messages on each (the last with immediate data), more than the slots,
// so the test gives slots back as it goes.
func TestSRQDialInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	backend := guestBackend()
	const conns, msgs = 2, 3
	l, err := rdmacm.Listen(exampleHost+":7422", &rdmacm.EndpointOptions{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, conns)
	go func() {
		for range conns {
			ep, err := l.Accept(ctx)
			if err != nil {
				served <- err
				return
			}
			go func() {
				defer ep.Close()
				served <- func() error {
					buf, err := ep.RegMsgs(64)
					if err != nil {
						return err
					}
					defer buf.Close()
					for i := range msgs {
						n := copy(buf.Bytes(), fmt.Sprintf("to %d: %d", ep.RemoteAddr().Port(), i))
						if i == msgs-1 {
							err = ep.PostSendImm(buf, 0, n, uint32(i))
						} else {
							err = ep.PostSend(buf, 0, n)
						}
						if err != nil {
							return err
						}
						if _, err := ep.WaitSend(ctx); err != nil {
							return err
						}
					}
					<-ep.Done()
					return nil
				}()
			}()
		}
	}()

	srq, err := rdmacm.NewSRQ(4, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer srq.Close()
	cq, err := rdmacm.NewCQ(8)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	eps := map[uint32]*rdmacm.Endpoint{}
	for range conns {
		ep, err := rdmacm.Dial(ctx, exampleHost+":7422", &rdmacm.EndpointOptions{Backend: backend, SRQ: srq, RecvCQ: cq})
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		eps[ep.QPNum()] = ep
	}
	got := map[uint32][]string{}
	for range conns * msgs {
		wc, err := cq.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v (got %v)", err, got)
		}
		ep := eps[wc.QPNum]
		if ep == nil {
			t.Fatalf("completion %+v of no dialed endpoint", wc)
		}
		msg := string(srq.Data(wc))
		if wc.HasImm {
			msg += fmt.Sprintf(" imm %d", wc.Imm)
		}
		got[wc.QPNum] = append(got[wc.QPNum], msg)
		if err := srq.PostRecv(int(wc.ID)); err != nil {
			t.Fatal(err)
		}
	}
	for qpn, ep := range eps {
		p := ep.LocalAddr().Port()
		want := []string{fmt.Sprintf("to %d: 0", p), fmt.Sprintf("to %d: 1", p), fmt.Sprintf("to %d: 2 imm 2", p)}
		if !slices.Equal(got[qpn], want) {
			t.Errorf("QP %d received %q, want %q", qpn, got[qpn], want)
		}
		ep.Close()
	}
	for range conns {
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
	}
	if srq.MR().Len() != 4*64 {
		t.Errorf("SRQ memory %d bytes", srq.MR().Len())
	}
}
