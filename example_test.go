package rdmacm_test

// Runnable examples. They need an RDMA device, so they carry no "Output:"
// comment: `go test` compiles them everywhere and TestExamplesInGuest
// (example_guest_test.go) runs them in a vmtest guest and checks what they
// print. Each runs a server and a client in one process over the local
// RDMA address exampleHost.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// exampleHost is an address of a local RDMA device (in the vmtest guests,
// guest a's address on the soft-RoCE wire).
var exampleHost = "192.0.2.1"

// exampleOptions are the options of every example (the guest test runs
// them on both backends).
var exampleOptions = rdmacm.EndpointOptions{}

// Echo: the server sends back every message until the client disconnects.
func Example_echo() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := exampleOptions
	l, err := rdmacm.Listen(exampleHost+":7401", &opts)
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	defer l.Close()
	go func() {
		ep, err := l.Accept(ctx)
		if err != nil {
			fmt.Println("accept:", err)
			return
		}
		defer ep.Close()
		buf, err := ep.RegMsgs(64)
		if err != nil {
			fmt.Println("server:", err)
			return
		}
		defer buf.Close()
		for {
			if err := ep.PostRecv(buf, 0, 64); err != nil {
				fmt.Println("server:", err)
				return
			}
			wc, err := ep.WaitRecv(ctx)
			if err == io.EOF {
				return // the client disconnected
			} else if err != nil {
				fmt.Println("server:", err)
				return
			}
			if err := ep.PostSend(buf, 0, int(wc.ByteLen)); err != nil {
				fmt.Println("server:", err)
				return
			}
			if _, err := ep.WaitSend(ctx); err != nil {
				fmt.Println("server:", err)
				return
			}
		}
	}()

	ep, err := rdmacm.Dial(ctx, exampleHost+":7401", &opts)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer ep.Close()
	buf, err := ep.RegMsgs(64)
	if err != nil {
		fmt.Println("client:", err)
		return
	}
	defer buf.Close()
	for _, msg := range []string{"hello", "RDMA"} {
		if err := ep.PostRecv(buf, 32, 32); err != nil {
			fmt.Println("client:", err)
			return
		}
		n := copy(buf.Bytes(), msg)
		if err := ep.PostSend(buf, 0, n); err != nil {
			fmt.Println("client:", err)
			return
		}
		if _, err := ep.WaitSend(ctx); err != nil {
			fmt.Println("client:", err)
			return
		}
		wc, err := ep.WaitRecv(ctx)
		if err != nil {
			fmt.Println("client:", err)
			return
		}
		fmt.Printf("echo: %s\n", buf.Bytes()[wc.ID:wc.ID+uint64(wc.ByteLen)])
	}
	if err := ep.Disconnect(ctx); err != nil {
		fmt.Println("disconnect:", err)
		return
	}
	fmt.Println("done")
}

// RDMA WRITE with the rkey in private data: the server registers memory
// for remote writes and sends its RemoteBuf in the REP; the client writes
// into it with immediate data, which completes a receive at the server.
// The server's zero-length receive for the immediate data is posted
// before the REP leaves (RecvSlots), so the client may write at once.
func Example_write() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rb []byte // the REP's private data: dst's RemoteBuf
	opts := exampleOptions
	opts.RecvSlots = 1 // of 0 bytes: for the immediate data
	opts.Setup = func(*rdmacm.Endpoint) (rdmacm.ConnSetup, error) { return rdmacm.ConnSetup{PrivateData: rb}, nil }
	l, err := rdmacm.Listen(exampleHost+":7402", &opts)
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	defer l.Close()
	dst, err := l.RegWrite(1 << 16)
	if err != nil {
		fmt.Println("server:", err)
		return
	}
	defer dst.Close()
	rb, _ = dst.Remote().MarshalBinary()
	served := make(chan string, 1)
	go func() {
		ep, err := l.Accept(ctx)
		if err != nil {
			served <- "accept: " + err.Error()
			return
		}
		defer ep.Close()
		wc, err := ep.WaitRecv(ctx)
		if err != nil {
			served <- err.Error()
			return
		}
		served <- fmt.Sprintf("server: %q written, imm %d", dst.Bytes()[:wc.Imm], wc.Imm)
	}()

	client := exampleOptions
	ep, err := rdmacm.Dial(ctx, exampleHost+":7402", &client)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer ep.Close()
	remote, _, err := rdmacm.DecodeRemoteBuf(ep.PrivateData())
	if err != nil {
		fmt.Println("client:", err)
		return
	}
	fmt.Println("client: remote buffer of", remote.Len, "bytes")
	src, err := ep.RegMsgs(64)
	if err != nil {
		fmt.Println("client:", err)
		return
	}
	defer src.Close()
	n := copy(src.Bytes(), "written by RDMA")
	if err := ep.PostWriteImm(src, 0, n, remote, uint32(n)); err != nil {
		fmt.Println("client:", err)
		return
	}
	if _, err := ep.WaitSend(ctx); err != nil {
		fmt.Println("client:", err)
		return
	}
	fmt.Println(<-served)
}

// The ECE flow of rdma_set_local_ece(3): the client offers an ECE, the
// server answers with the ECE reply policy, both read the peer's value.
// rdma_set_local_ece(3) is for QPs the application makes, so both sides
// give their own (callerQPs); the endpoint's own QP sends only what its
// provider applies, and on rxe, which has no ECE, Dial and Accept would
// refuse these options with ErrNotSupported. What a caller's QP applied
// is its QueryECE (on rxe: ErrNotSupported, none).
func Example_ece() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var qps callerQPs
	server := exampleOptions
	server.ECE = &ece.ECE{VendorID: ece.VendorMellanox, Options: 0x10000001}
	server.ECEReply = ece.IntersectReply
	server.Setup = qps.setup
	l, err := rdmacm.Listen(exampleHost+":7403", &server)
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	defer l.Close()
	defer qps.close() // after the endpoints, before the listener
	accepted := make(chan *rdmacm.Endpoint, 1)
	go func() {
		ep, err := l.Accept(ctx)
		if err != nil {
			fmt.Println("accept:", err)
		}
		accepted <- ep
	}()
	client := exampleOptions
	client.ECE = &ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000001}
	client.Setup = qps.setup
	ep, err := rdmacm.Dial(ctx, exampleHost+":7403", &client)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer ep.Close()
	sep := <-accepted
	if sep == nil {
		return
	}
	defer sep.Close()
	fmt.Println("server: REQ offered", sep.RemoteECE())
	fmt.Println("server: REP answered", sep.LocalECE())
	fmt.Println("client: REP carried", ep.RemoteECE())
	if err := ep.Disconnect(ctx); err != nil {
		fmt.Println("disconnect:", err)
		return
	}
	select {
	case <-sep.Done():
		fmt.Println("server: peer gone:", errors.Is(sep.Err(), io.EOF))
	case <-ctx.Done():
		fmt.Println("server:", ctx.Err())
	}
}

// callerQPs makes the caller's QPs of Example_ece, each with its own CQ,
// and closes them all.
type callerQPs struct {
	mu   sync.Mutex
	objs []interface{ Close() error } // a QP before its CQ
}

func (c *callerQPs) setup(ep *rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
	cq, err := ep.PD().Context().CreateCQ(4, nil, 0)
	if err != nil {
		return rdmacm.ConnSetup{}, err
	}
	q, err := ep.PD().CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq,
		Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		cq.Close()
		return rdmacm.ConnSetup{}, err
	}
	c.mu.Lock()
	c.objs = append(c.objs, q, cq)
	c.mu.Unlock()
	return rdmacm.ConnSetup{QP: q}, nil
}

func (c *callerQPs) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.objs {
		o.Close()
	}
}
