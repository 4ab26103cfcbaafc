// Command rsocket-copy is the Go twin of librdmacm's rcopy: it copies a
// file to a server over rsockets (package rsocket) with rcopy's protocol,
// so either end can be librdmacm's rcopy.
//
//	rsocket-copy [-p port]                          # server: writes what clients send
//	rsocket-copy SOURCE SERVER[:DESTINATION] [-p port]
//
// As rcopy's, the server opens whatever path the client names (relative
// to its working directory) with the client's permissions: run it where
// that is what you want.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/rsocket"
)

type config struct {
	server  bool
	src     string
	host    string
	dst     string
	port    string
	backend rdma.Backend
}

const usageText = `usage 1: rsocket-copy [options]
	     starts the server application
	[-p  port_number]
usage 2: rsocket-copy source server[:destination] [options]
	     source - file name and path
	     server - name or address
	     destination - file name and path
	[-p  port_number]
options of this twin:
	[-backend kernel|user|auto]  connection manager (default auto)
`

// parseArgs follows rcopy's main: no arguments, or a first one starting
// with '-', is the server; otherwise SOURCE SERVER[:DEST] and options
// anywhere after them (getopt permutes).
func parseArgs(args []string) (*config, error) {
	c := &config{port: "7427", backend: rdma.BackendAuto}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-p" || a == "-backend":
			if i+1 == len(args) {
				return nil, fmt.Errorf("%s needs a value", a)
			}
			i++
			if a == "-p" {
				c.port = args[i]
			} else {
				c.backend = rdma.Backend(args[i])
			}
		case strings.HasPrefix(a, "-p") && len(a) > 2:
			c.port = a[2:]
		case strings.HasPrefix(a, "-") && a != "-":
			return nil, fmt.Errorf("unknown option %s", a)
		default:
			pos = append(pos, a)
		}
	}
	switch c.backend {
	case rdma.BackendAuto, rdma.BackendKernel, rdma.BackendUser:
	default:
		return nil, fmt.Errorf("-backend %q: want kernel, user or auto", c.backend)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(pos) != 0 {
			return nil, fmt.Errorf("unexpected argument %q", pos[0])
		}
		c.server = true
		return c, nil
	}
	if len(pos) != 2 {
		return nil, errors.New("want SOURCE SERVER[:DESTINATION]")
	}
	c.src, c.host = pos[0], pos[1]
	// rcopy splits at the first ':'; a bracketed IPv6 address is ours.
	if strings.HasPrefix(c.host, "[") {
		if end := strings.Index(c.host, "]"); end > 0 {
			rest := c.host[end+1:]
			c.host = c.host[1:end]
			c.dst, _ = strings.CutPrefix(rest, ":")
		}
	} else if host, dst, ok := strings.Cut(c.host, ":"); ok {
		c.host, c.dst = host, dst
	}
	if c.dst == "" {
		c.dst = c.src
	}
	if c.host == "" {
		return nil, errors.New("no server address")
	}
	return c, nil
}

func main() {
	c, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "rsocket-copy: %v\n", err)
		fmt.Fprint(os.Stderr, usageText)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.server {
		err = serve(ctx, c, os.Stdout)
	} else {
		err = client(ctx, c, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rsocket-copy: %v\n", err)
		os.Exit(1)
	}
}

// serve is rcopy's server_run: one client at a time, until a signal.
func serve(ctx context.Context, c *config, out io.Writer) error {
	l, err := rsocket.Listen(net.JoinHostPort("", c.port), &rsocket.Options{Backend: c.backend, ThreadWait: true})
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		fmt.Fprint(out, "waiting for connection...")
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(out)
				return nil
			}
			return err
		}
		ip := ""
		if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
			ip = a.IP.String()
		}
		fmt.Fprintf(out, "client: %s\n", ip)
		if err := serveConn(conn, openFile, out); err != nil {
			fmt.Fprintf(out, "\n%v\n", err)
		}
		conn.Close()
	}
}

// client is rcopy's client_run.
func client(ctx context.Context, c *config, out io.Writer) error {
	src, err := os.Open(c.src)
	if err != nil {
		return err
	}
	defer src.Close()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := rsocket.Dial(dctx, net.JoinHostPort(c.host, c.port), &rsocket.Options{Backend: c.backend, ThreadWait: true})
	if err != nil {
		return err
	}
	stopClose := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopClose()
	bytes, elapsed, err := clientCopy(conn, src, c.dst, out)
	if cerr := conn.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	printPerf(out, bytes, elapsed)
	return nil
}

// printPerf is rcopy's show_perf (usec a C float there).
func printPerf(out io.Writer, bytes int64, elapsed time.Duration) {
	usec := float32(elapsed.Microseconds())
	fmt.Fprintf(out, "%d bytes in %.2f seconds = %.2f Gb/sec\n",
		bytes, float64(usec)/1000000., float64(bytes*8)/(1000.*float64(usec)))
}
