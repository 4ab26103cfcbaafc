// Command echo is an RC echo over rdmacm: the client sends -n messages of
// -size bytes, the server sends each back, and the client prints the
// round-trip latency percentiles (-t: and the mean time per round trip).
//
//	echo -s -a 192.0.2.1     # server
//	echo -a 192.0.2.1        # client
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"slices"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/rdma"
)

var (
	server  = flag.Bool("s", false, "server")
	addr    = flag.String("a", "192.0.2.1", "server address")
	port    = flag.String("p", "7471", "port")
	count   = flag.Int("n", 1000, "messages")
	size    = flag.Int("size", 4096, "message size")
	timed   = flag.Bool("t", false, "print the mean time per round trip")
	backend = flag.String("backend", "", "CM backend: auto, kernel, user")
	wait    = flag.String("wait", "thread", "where a wait for a completion sleeps: thread (in the kernel, EndpointOptions.ThreadWait) or netpoll (the Go netpoller, the library's default)")
)

func main() {
	flag.Parse()
	ctx := context.Background()
	// ThreadWait: a wait is one read(2) of the completion channel, as the
	// C twin's ibv_get_cq_event; a program with few connections, whose
	// waits are short, can hold a thread per wait.
	// RecvSlots: both receives are posted before the REQ or REP leaves, as
	// the C twin posts before rdma_accept; a message that finds none waits
	// out an RNR NAK (655 ms: the kernel CM's min_rnr_timer is 0).
	opts := &rdmacm.EndpointOptions{Backend: rdma.Backend(*backend), ThreadWait: *wait == "thread",
		RecvSlots: 2, RecvSlotSize: *size}
	var ep *rdmacm.Endpoint
	var err error
	if *server {
		l, err := rdmacm.Listen(*addr+":"+*port, opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("listening")
		ep, err = l.Accept(ctx)
		if err != nil {
			log.Fatal(err)
		}
		l.Close()
	} else if ep, err = rdmacm.Dial(ctx, *addr+":"+*port, opts); err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	in := ep.RecvMR() // two slots: one stays posted while the other is echoed
	out, err := ep.RegMsgs(*size)
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	lat := make([]time.Duration, 0, *count)
	begin := time.Now()
	for i := 0; *server || i < *count; i++ {
		start := time.Now()
		if !*server {
			if err := ep.PostSend(out, 0, *size); err != nil {
				log.Fatal(err)
			}
			if _, err := ep.WaitSend(ctx); err != nil {
				log.Fatal(err)
			}
		}
		wc, err := ep.WaitRecv(ctx)
		if err == io.EOF {
			fmt.Println("server: echoed", i, "messages")
			return
		} else if err != nil {
			log.Fatal(err)
		}
		if *server {
			if err := ep.PostSend(in, int(wc.ID), int(wc.ByteLen)); err != nil {
				log.Fatal(err)
			}
			if _, err := ep.WaitSend(ctx); err != nil {
				log.Fatal(err)
			}
		}
		if err := ep.PostRecv(in, int(wc.ID), *size); err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	total := time.Since(begin)
	ep.Disconnect(ctx)
	slices.Sort(lat)
	fmt.Printf("client: %d x %d B, p50 %v p99 %v max %v\n", *count, *size,
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	if *timed {
		fmt.Printf("time: %d ops, %.3f us/op\n", *count, float64(total.Nanoseconds())/1e3/float64(*count))
	}
}
