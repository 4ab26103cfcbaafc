// Command hwtest runs this module's checks on the host's own RDMA device
// and prints a Markdown report to paste into an issue (docs/hardware.md):
//
//	sudo make hwtest RDMA_DEV=mlx5_0
//	go run ./internal/hwtest/cmd/hwtest -dev mlx5_0 -json report.json
//
// It exits 1 when a check failed, 2 on bad usage or a host that is not
// Linux.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/internal/hwtest"
)

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("hwtest", flag.ContinueOnError)
	dev := fs.String("dev", os.Getenv("RDMA_DEV"), "RDMA device (default $RDMA_DEV, else the first device)")
	bin := fs.String("bin", "", "folder with prebuilt verbs-pingpong and rdmacm-ping (default: go build them)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	timeout := fs.Duration("timeout", hwtest.DefaultTimeout, "bound for each check")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "hwtest: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if runtime.GOOS != "linux" {
		fmt.Fprintf(os.Stderr, "hwtest: not supported on %s: %v\n", runtime.GOOS, hwtest.ErrUnsupported)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := hwtest.Config{Device: *dev, BinDir: *bin, Timeout: *timeout}
	if !*quiet {
		cfg.Log = os.Stderr
	}
	start := time.Now()
	rep := hwtest.Run(ctx, cfg)
	fmt.Print(rep.Markdown())
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err == nil {
			err = rep.WriteJSON(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "hwtest: -json: %v\n", err)
			return 1
		}
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "hwtest: done in %v\n", time.Since(start).Round(time.Second))
	}
	return rep.ExitCode()
}
