// Command ece runs the rdma_set_local_ece(3) flow: the client offers an
// ECE in the REQ, the server answers in the REP (here the intersection of
// the offer and its own options), and both print what they sent and got,
// and what their QP applied. rdma_set_local_ece(3) is for a QP the
// application makes, so each side gives its own (Setup). On providers
// without ECE (rxe) the QP applies none and the values sent are the ones
// given on the command line.
//
//	ece -s -a 192.0.2.1 -ece 0x15b3:0x10000001   # server
//	ece -a 192.0.2.1 -ece 0x15b3:0x30000001      # client
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

var (
	server  = flag.Bool("s", false, "server")
	addr    = flag.String("a", "192.0.2.1", "server address")
	port    = flag.String("p", "7473", "port")
	local   = flag.String("ece", "0x15b3:0x30000001", "local ECE, vendor:options")
	backend = flag.String("backend", "", "CM backend: auto, kernel, user")
)

func main() {
	flag.Parse()
	ctx := context.Background()
	var e ece.ECE
	if _, err := fmt.Sscanf(*local, "0x%x:0x%x", &e.VendorID, &e.Options); err != nil {
		log.Fatal("-ece: ", err)
	}
	var q *uverbs.QP // this side's QP, with a CQ of its own
	setup := func(ep *rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
		cq, err := ep.PD().Context().CreateCQ(1, nil, 0)
		if err != nil {
			return rdmacm.ConnSetup{}, err
		}
		q, err = ep.PD().CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq,
			Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		return rdmacm.ConnSetup{QP: q}, err
	}
	opts := &rdmacm.EndpointOptions{Backend: rdma.Backend(*backend), ECE: &e, ECEReply: ece.IntersectReply, Setup: setup}
	var ep *rdmacm.Endpoint
	var err error
	if *server {
		l, err := rdmacm.Listen(*addr+":"+*port, opts)
		if err != nil {
			log.Fatal(err)
		}
		defer l.Close()
		fmt.Println("listening")
		if ep, err = l.Accept(ctx); err != nil {
			log.Fatal(err)
		}
	} else if ep, err = rdmacm.Dial(ctx, *addr+":"+*port, opts); err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	fmt.Printf("sent %v, received %v\n", ep.LocalECE(), ep.RemoteECE())
	if applied, err := q.QueryECE(); errors.Is(err, rdma.ErrNotSupported) {
		fmt.Println("applied none: the device has no ECE")
	} else if err != nil {
		log.Fatal(err)
	} else {
		fmt.Println("applied", applied)
	}
	if *server {
		<-ep.Done() // until the client disconnects
	} else {
		ep.Disconnect(ctx)
	}
}
