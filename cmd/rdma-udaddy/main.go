// Command rdma-udaddy is a Go twin of librdmacm's udaddy: a UD (RDMA_PS_UDP)
// client and server that resolve each other with SIDR and exchange
// messages, on the kernel CM or on this module's own CM engine
// (-backend user). It takes udaddy's flags, prints udaddy's lines and
// interoperates with udaddy in both roles:
//
//	rdma-udaddy [-b bind_address] [-c connections] [-C message_count] [-S message_size]     (server)
//	rdma-udaddy -s server_address [-c connections] [-C message_count] [-S message_size]     (client)
//
// Like udaddy it listens and connects on port 7174, exits with the return
// status it prints (0 on success), and prints details of a failure on
// stderr.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-rdma/rdmacm/internal/udaddy"
)

func main() {
	cfg, err := udaddy.Parse(os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdma-udaddy: %v\n%s\n", err, udaddy.Usage)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(udaddy.Run(ctx, cfg, os.Stdout, os.Stderr) & 0xff)
}
