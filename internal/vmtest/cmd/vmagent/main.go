// Command vmagent runs inside a vmtest guest (started by the guest init) and
// executes the commands that the host or the other guest drop into its
// directory on the shared folder. See package agent for the protocol.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

func main() {
	dir := flag.String("dir", "", "agent directory on the shared folder")
	name := flag.String("name", "", "guest name")
	poll := flag.Duration("poll", 20*time.Millisecond, "request poll interval")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "vmagent: -dir is required")
		os.Exit(2)
	}
	if err := agent.Serve(context.Background(), *dir, *name, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "vmagent:", err)
		os.Exit(1)
	}
}
