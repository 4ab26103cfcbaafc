// Command write moves 1 MiB with one RDMA WRITE: the server registers
// memory for remote writes and sends its address and rkey in the REP's
// private data; the client writes into it, with immediate data to tell the
// server it is done. -n repeats the write (the server posts a receive for
// each before it accepts); -t prints the mean time per write.
//
//	write -s -a 192.0.2.1    # server
//	write -a 192.0.2.1       # client
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/rdma"
)

var (
	server  = flag.Bool("s", false, "server")
	addr    = flag.String("a", "192.0.2.1", "server address")
	port    = flag.String("p", "7472", "port")
	count   = flag.Int("n", 1, "writes")
	timed   = flag.Bool("t", false, "print the mean time per write")
	backend = flag.String("backend", "", "CM backend: auto, kernel, user")
	wait    = flag.String("wait", "netpoll", "where a wait for a completion sleeps: netpoll (the Go netpoller, the library's default) or thread (in the kernel, EndpointOptions.ThreadWait)")
)

const size = 1 << 20

func main() {
	flag.Parse()
	ctx := context.Background()
	// The netpoller: a write's wait is long (tens of ms on rxe), and the
	// runtime takes the P of a thread that long in a syscall, which costs
	// more syscalls than the netpoller's wait (docs/benchmarks.md).
	opts := &rdmacm.EndpointOptions{Backend: rdma.Backend(*backend), ThreadWait: *wait == "thread"}
	if *server {
		var rb []byte // the REP's private data: mem's RemoteBuf
		opts.Setup = func(*rdmacm.Endpoint) (rdmacm.ConnSetup, error) { return rdmacm.ConnSetup{PrivateData: rb}, nil }
		opts.RecvSlots = *count // zero-length receives for the immediate data, posted before the REP
		l, err := rdmacm.Listen(*addr+":"+*port, opts)
		if err != nil {
			log.Fatal(err)
		}
		defer l.Close()
		mem, err := l.RegWrite(size)
		if err != nil {
			log.Fatal(err)
		}
		defer mem.Close()
		rb, _ = mem.Remote().MarshalBinary()
		fmt.Println("listening")
		ep, err := l.Accept(ctx)
		if err != nil {
			log.Fatal(err)
		}
		defer ep.Close()
		var wc rdmacm.WC
		for range *count {
			if wc, err = ep.WaitRecv(ctx); err != nil {
				log.Fatal(err)
			}
		}
		fmt.Printf("server: %d bytes written, sha256 %x\n", wc.Imm, sha256.Sum256(mem.Bytes()[:wc.Imm]))
		return
	}
	ep, err := rdmacm.Dial(ctx, *addr+":"+*port, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	dst, _, err := rdmacm.DecodeRemoteBuf(ep.PrivateData())
	if err != nil {
		log.Fatal(err)
	}
	src, err := ep.RegMsgs(size)
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i * 7)
	}
	begin := time.Now()
	for range *count {
		if err := ep.PostWriteImm(src, 0, size, dst, size); err != nil {
			log.Fatal(err)
		}
		if _, err := ep.WaitSend(ctx); err != nil {
			log.Fatal(err)
		}
	}
	total := time.Since(begin)
	fmt.Printf("client: %d bytes written, sha256 %x\n", size, sha256.Sum256(src.Bytes()))
	if *timed {
		fmt.Printf("time: %d ops, %.3f us/op\n", *count, float64(total.Nanoseconds())/1e3/float64(*count))
	}
	ep.Disconnect(ctx)
}
