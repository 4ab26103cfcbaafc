package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rdma/rdmacm"
)

// Datagrams: a UD service answers each message in upper case. The client
// resolves the service's QP and Q_Key with a SIDR request (DialDatagram);
// the server replies to the Peer each message came from. A message longer
// than the path MTU is refused: UD does not fragment. (It needs an RDMA
// device, so it carries no "Output:" comment; TestDatagramInGuest runs it
// in a vmtest guest and checks what it prints.)
func Example_datagram() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := &rdmacm.DatagramOptions{Backend: exampleOptions.Backend}
	srv, err := rdmacm.ListenDatagram(exampleHost+":7475", opts)
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	defer srv.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			d, err := srv.Recv(ctx, buf)
			if err != nil {
				return // Close
			}
			srv.Send(ctx, d.From, bytes.ToUpper(buf[:d.N]))
		}
	}()

	cli, err := rdmacm.DialDatagram(ctx, exampleHost+":7475", opts)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer cli.Close()
	fmt.Printf("client: the service's Q_Key is %#x\n", cli.Peer().QKey)
	buf := make([]byte, cli.MaxMessage())
	for _, msg := range []string{"hello", "datagram"} {
		if err := cli.Send(ctx, cli.Peer(), []byte(msg)); err != nil {
			fmt.Println("send:", err)
			return
		}
		d, err := cli.Recv(ctx, buf)
		if err != nil {
			fmt.Println("recv:", err)
			return
		}
		fmt.Printf("client: %q from the service's QP: %v\n", buf[:d.N], d.From.QPN == cli.Peer().QPN)
	}
	err = cli.Send(ctx, cli.Peer(), make([]byte, cli.MaxMessage()+1))
	fmt.Println("client: one byte over the MTU refused:", errors.Is(err, rdmacm.ErrInvalidArgument))
}
