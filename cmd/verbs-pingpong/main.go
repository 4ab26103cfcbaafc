// Command verbs-pingpong is a Go twin of ibv_rc_pingpong (rdma-core
// libibverbs/examples/rc_pingpong.c) built on package uverbs, without
// libibverbs. It takes the same options, exchanges "LID:QPN:PSN:GID" over
// TCP in the same format, runs the same RC SEND ping-pong and prints the
// same summary, so either side can be the C program:
//
//	verbs-pingpong -d rxe0 -g 1                # server
//	verbs-pingpong -d rxe0 -g 1 192.0.2.1      # client
//
// With -c the received buffer is validated at the end (every byte, against
// the pattern rc_pingpong's -c writes) and the exit status is 1 if it
// differs.
//
// With -srq it is the twin of ibv_srq_pingpong (srq_pingpong.c) instead:
// -q N RC QPs (16) that all receive from one shared receive queue of -r
// receives, the exchange of MAX_QP (256) addresses each way of which the
// first N are the QPs, and the ping-pong of -n exchanges in all, each QP
// sending once its last send and receive completed. -c is not one of that
// program's options; the others are as above.
//
//	verbs-pingpong -srq -q 8 -d rxe0 -g 1              # server
//	verbs-pingpong -srq -q 8 -d rxe0 -g 1 192.0.2.1    # client
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-rdma/rdmacm/internal/unix"
)

func main() { os.Exit(runMain(os.Args, os.Stdout, os.Stderr)) }

func runMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args[1:])
	if err != nil {
		fmt.Fprintln(stderr, err)
		fmt.Fprintf(stderr, usageText, filepath.Base(args[0]))
		return 1
	}
	if !unix.IsLinux {
		fmt.Fprintf(stderr, "%s: %v\n", filepath.Base(args[0]), unix.ErrNotSupported)
		return 1
	}
	res, err := run(o, stdout)
	if err != nil {
		if errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, usageText, filepath.Base(args[0]))
		}
		fmt.Fprintln(stderr, err)
		return 1
	}
	if len(res.bad) > 0 {
		return 1
	}
	return 0
}
