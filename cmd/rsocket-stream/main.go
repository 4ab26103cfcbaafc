// Command rsocket-stream is the Go twin of librdmacm's rstream: a
// ping-pong stream benchmark over rsockets (package rsocket) or, with
// -T s, plain TCP. It takes rstream's flags and prints rstream's header
// and rows with its formulas, so the outputs compare line by line, and it
// interoperates with rstream in either role.
//
//	rsocket-stream                          # server
//	rsocket-stream -s 192.0.2.2             # client: the default latency and bandwidth sets
//	rsocket-stream -s 192.0.2.2 -S 4096 -C 100 -I 1 -T v
//
// Give the server the same -S, -C, -I and -T s as the client, as with
// rstream: a server without them runs the default sets, and the two sides
// then disagree on the transfer sizes (docs/benchmarks.md, "rsocket in the
// guests").
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/go-rdma/rdmacm/rdma"
)

// config is the command line, with rstream.c's defaults.
type config struct {
	server     string // -s: client mode, connect there
	bind       string // -b
	bufferSize int    // -B: SO_SNDBUF and SO_RCVBUF (0: rstream's 512 KiB)
	inlineSize int    // -i: inline size of the latency set
	iterations int    // -I
	count      int    // -C
	size       int    // -S N
	all        bool   // -S all
	custom     bool   // -I, -C or -S N: one "custom" row
	port       string // -p
	keepalive  int    // -k seconds
	tcp        bool   // -T s
	blocking   bool   // -T b (the default is nonblocking, as rstream)
	verify     bool   // -T v
	backend    rdma.Backend
	notes      []string // options accepted but meaningless here
}

const usageText = `usage: rsocket-stream
	[-s server_address]
	[-b bind_address]
	[-f address_format]
	    name, ip, ipv6, or gid (accepted; Go resolves names itself)
	[-B buffer_size]
	[-i inline_size]
	[-I iterations]
	[-C transfer_count]
	[-S transfer_size or all]
	[-p port_number]
	[-k keepalive_time]
	[-T test_option]
	    s|sockets - use standard tcp/ip sockets
	    a|async - asynchronous operation (accepted: Go's calls wait in the netpoller)
	    b|blocking - use blocking calls
	    f|fork - fork server processing (accepted, not done: one connection at a time)
	    n|nonblocking - use nonblocking calls
	    r|resolve - use rdma cm to resolve address (accepted: the CM always resolves)
	    v|verify - verify data
	[-backend kernel|user|auto] - connection manager (default auto)
`

// testOptions is -T, repeatable as with getopt.
type testOptions struct{ c *config }

func (o testOptions) String() string { return "" }

func (o testOptions) Set(arg string) error {
	c := o.c
	long := len(arg) > 1
	has := func(short, name string) bool {
		if !long {
			return arg == short
		}
		return len(arg) >= len(name) && strings.EqualFold(arg[:len(name)], name)
	}
	switch {
	case has("s", "socket"):
		c.tcp = true
	case has("a", "async"):
		c.notes = append(c.notes, "-T a: Go's Read and Write already wait in the netpoller; running the plain loop")
	case has("b", "block"):
		c.blocking = true
	case has("f", "fork"):
		// rstream's fork mode also switches to plain sockets.
		c.tcp = true
		c.notes = append(c.notes, "-T f: no fork in Go; serving the connection in this process (over TCP, as rstream's fork mode)")
	case has("n", "nonblock"):
		c.blocking = false
	case has("r", "resolve"):
		c.notes = append(c.notes, "-T r: the rdma_cm resolves the address on every connection; nothing to select")
	case has("v", "verify"):
		c.verify = true
	default:
		return fmt.Errorf("invalid test option %q", arg)
	}
	return nil
}

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	c := &config{inlineSize: 64, iterations: 1, count: 1000, size: 1000, port: "7471", backend: rdma.BackendAuto}
	fs := flag.NewFlagSet("rsocket-stream", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.server, "s", "", "server address (client mode)")
	fs.StringVar(&c.bind, "b", "", "bind address")
	format := fs.String("f", "", "address format")
	fs.IntVar(&c.bufferSize, "B", 0, "buffer size")
	fs.IntVar(&c.inlineSize, "i", 64, "inline size")
	iters := fs.String("I", "", "iterations")
	count := fs.String("C", "", "transfer count")
	size := fs.String("S", "", "transfer size or all")
	fs.StringVar(&c.port, "p", "7471", "port")
	fs.IntVar(&c.keepalive, "k", 0, "keepalive time (seconds)")
	fs.Var(testOptions{c}, "T", "test option")
	backend := fs.String("backend", "auto", "kernel, user or auto")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	// rstream reads the numbers with atoi.
	atoi := func(name, s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("-%s %q: want a number", name, s)
		}
		return n, nil
	}
	var err error
	if *iters != "" {
		c.custom = true
		if c.iterations, err = atoi("I", *iters); err != nil {
			return nil, err
		}
	}
	if *count != "" {
		c.custom = true
		if c.count, err = atoi("C", *count); err != nil {
			return nil, err
		}
	}
	if *size != "" {
		if len(*size) >= 3 && strings.EqualFold((*size)[:3], "all") {
			c.all = true
		} else {
			c.custom = true
			if c.size, err = atoi("S", *size); err != nil {
				return nil, err
			}
		}
	}
	if c.custom && (c.size == 0 || c.count == 0 || c.iterations == 0) {
		return nil, errors.New("-S, -C and -I must be at least 1")
	}
	switch rdma.Backend(*backend) {
	case rdma.BackendAuto, rdma.BackendKernel, rdma.BackendUser:
		c.backend = rdma.Backend(*backend)
	default:
		return nil, fmt.Errorf("-backend %q: want kernel, user or auto", *backend)
	}
	if c.server != "" && c.bind != "" && !c.tcp {
		c.notes = append(c.notes, "-b on an rsocket client: rsocket.Dial takes no source address; ignored (the route picks it)")
	}
	if *format != "" {
		c.notes = append(c.notes, fmt.Sprintf("-f %s: Go resolves names and numeric addresses itself; ignored", *format))
	}
	return c, nil
}

func main() {
	c, err := parseArgs(os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "rsocket-stream: %v\n", err)
		}
		fmt.Fprint(os.Stderr, usageText)
		os.Exit(1)
	}
	for _, n := range c.notes {
		fmt.Fprintf(os.Stderr, "rsocket-stream: note: %s\n", n)
	}
	if err := run(c, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "rsocket-stream: %v\n", err)
		os.Exit(1)
	}
}
