// Package udaddy is the Go twin of librdmacm's udaddy example
// (cmd/rdma-udaddy runs it): a UD client and server over the rdma_cm's
// RDMA_PS_UDP, written on the root package's datagram API. It takes
// udaddy's flags, prints udaddy's lines and speaks its exchange: the
// client resolves each connection's server QP with a SIDR request, sends
// -C messages of -S bytes per connection as SEND_WITH_IMM carrying its own
// QP number, and waits for as many replies; the server answers every SIDR
// request with its QP, receives all messages, then replies -C messages to
// each sender. Port 7174, Q_Key RDMA_UDP_QKEY (0x01234567).
package udaddy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	rdmacm "github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// Port is udaddy's port.
const Port = "7174"

// Config is the parsed command line.
type Config struct {
	Dst, Src    string // -s, -b
	Connections int    // -c
	Count       int    // -C
	Size        int    // -S
	TOS         int    // -t (-1: not set)
	PortSpace   rdma.PortSpace
	Backend     rdma.Backend
}

// Usage is the usage text, udaddy's plus -backend.
const Usage = `usage: rdma-udaddy
	[-s server_address]
	[-b bind_address]
	[-f address_format]
	    name, ip, ipv6, or gid
	[-P port_space]
	    udp or ipoib
	[-c connections]
	[-C message_count]
	[-S message_size]
	[-t type_of_service]
	[-p port_space - 0x111 for UDP (default), 0x2 for IPOIB]
	[-backend kernel|user|auto]`

// Parse parses udaddy's flags.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{Connections: 1, Count: 10, Size: 100, TOS: -1, PortSpace: rdma.PortSpaceUDP}
	fs := flag.NewFlagSet("rdma-udaddy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.Dst, "s", "", "server address")
	fs.StringVar(&c.Src, "b", "", "bind address")
	fs.IntVar(&c.Connections, "c", 1, "connections")
	fs.IntVar(&c.Count, "C", 10, "message count")
	fs.IntVar(&c.Size, "S", 100, "message size")
	tos := fs.String("t", "", "type of service")
	ps := fs.String("p", "", "port space")
	psName := fs.String("P", "", "port space: udp or ipoib")
	format := fs.String("f", "", "address format")
	backend := fs.String("backend", "auto", "CM backend")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *tos != "" {
		v, err := strconv.ParseUint(*tos, 0, 8)
		if err != nil {
			return nil, fmt.Errorf("-t %s: %w", *tos, err)
		}
		c.TOS = int(v)
	}
	if *ps != "" {
		v, err := strconv.ParseInt(*ps, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("-p %s: %w", *ps, err)
		}
		c.PortSpace = rdma.PortSpace(v)
	}
	switch p := strings.ToLower(*psName); {
	case p == "":
	case strings.HasPrefix(p, "ipoib"):
		c.PortSpace = rdma.PortSpaceIPoIB
	case !strings.HasPrefix(p, "udp"):
		fmt.Fprintln(stderr, "Warning: unknown port space format")
	}
	switch f := strings.ToLower(*format); {
	case f == "", strings.HasPrefix(f, "ip"), strings.HasPrefix(f, "name"):
	case strings.HasPrefix(f, "gid"):
		return nil, fmt.Errorf("-f gid: AF_IB addresses: %w", rdma.ErrNotSupported)
	default:
		fmt.Fprintln(stderr, "Warning: unknown address format")
	}
	c.Backend = rdma.Backend(*backend)
	if c.Connections < 1 || c.Count < 0 || c.Size < 0 {
		return nil, errors.New("-c must be at least 1, -C and -S not negative")
	}
	if c.Size == 0 {
		c.Count = 0 // udaddy's create_message
	}
	return c, nil
}

// Run runs udaddy with cfg, printing its lines to out and details of
// errors to errOut; it returns udaddy's return status (0, or the failing
// event's status or a negative errno).
func Run(ctx context.Context, cfg *Config, out, errOut io.Writer) int {
	var ret int
	if cfg.Dst != "" {
		ret = runClient(ctx, cfg, out, errOut)
	} else {
		ret = runServer(ctx, cfg, out, errOut)
	}
	fmt.Fprintln(out, "test complete")
	fmt.Fprintf(out, "return status %d\n", ret)
	return ret
}

func (c *Config) opts() (*rdmacm.DatagramOptions, error) {
	if c.PortSpace != rdma.PortSpaceUDP {
		return nil, fmt.Errorf("port space %#x: the datagram endpoints are RDMA_PS_UDP (%#x): %w",
			uint16(c.PortSpace), uint16(rdma.PortSpaceUDP), rdma.ErrNotSupported)
	}
	if c.TOS >= 0 {
		return nil, fmt.Errorf("-t: type of service on datagram endpoints: %w", rdma.ErrNotSupported)
	}
	return &rdmacm.DatagramOptions{Backend: c.Backend, MaxSendWR: max(c.Count, 1), MaxRecvWR: max(c.Count, 1)}, nil
}

// mtuLine is udaddy's verify_test_params message.
func mtuLine(out io.Writer, size, mtu int) {
	fmt.Fprintf(out, "udaddy: message_size %d is larger than active mtu %d\n", size, mtu)
}

// status is the rdma_cm event status udaddy prints and returns for a
// failed connection, with the event's name.
func status(err error) (string, int) {
	var se *cm.SIDRError
	var errno unix.Errno
	switch {
	case errors.As(err, &se):
		return "RDMA_CM_EVENT_UNREACHABLE", int(se.Status)
	case errors.As(err, new(*cm.RejectError)):
		var re *cm.RejectError
		errors.As(err, &re)
		return "RDMA_CM_EVENT_REJECTED", int(re.Reason)
	case errors.Is(err, rdma.ErrTimeout):
		return "RDMA_CM_EVENT_UNREACHABLE", -int(unix.ETIMEDOUT)
	case errors.As(err, &errno):
		return "RDMA_CM_EVENT_ADDR_ERROR", -int(errno)
	}
	return "RDMA_CM_EVENT_CONNECT_ERROR", -int(unix.EINVAL)
}

func runServer(ctx context.Context, cfg *Config, out, errOut io.Writer) int {
	fmt.Fprintln(out, "udaddy: starting server")
	o, err := cfg.opts()
	if err != nil {
		fmt.Fprintf(errOut, "udaddy: listen request failed: %v\n", err)
		return -int(unix.EOPNOTSUPP)
	}
	o.MaxRecvWR = max(cfg.Connections*cfg.Count, 1)
	var (
		mu       sync.Mutex
		accepted int
		ep       *rdmacm.DatagramEndpoint
		ready    = make(chan struct{})
		allIn    = make(chan struct{})
		left     = cfg.Connections
	)
	done := func() { // connects_left reached 0
		left--
		if left == 0 {
			close(allIn)
		}
	}
	o.OnRequest = func(rdmacm.DatagramRequest) error {
		<-ready
		mu.Lock()
		defer mu.Unlock()
		if accepted == cfg.Connections {
			fmt.Fprintln(out, "udaddy: failing connection request")
			return errors.New("all connections taken")
		}
		if cfg.Count > 0 && cfg.Size > ep.MaxMessage() {
			mtuLine(out, cfg.Size, ep.MaxMessage())
			fmt.Fprintln(out, "udaddy: failing connection request")
			done()
			return errors.New("message size over the MTU")
		}
		accepted++
		done()
		return nil
	}
	host := cfg.Src
	ep, err = rdmacm.ListenDatagram(net.JoinHostPort(host, Port), o)
	close(ready)
	if err != nil {
		fmt.Fprintf(errOut, "udaddy: bind address failed: %v\n", err)
		return errnoStatus(err)
	}
	defer ep.Close()
	select {
	case <-allIn:
	case <-ctx.Done():
		fmt.Fprintf(errOut, "udaddy: %v\n", ctx.Err())
		return -int(unix.EINTR)
	}
	if cfg.Count == 0 {
		return 0
	}
	mu.Lock()
	total := accepted * cfg.Count
	mu.Unlock()
	fmt.Fprintln(out, "receiving data transfers")
	buf := make([]byte, ep.MaxMessage())
	var peers []*rdmacm.Peer
	seen := map[*rdmacm.Peer]bool{}
	for range total {
		d, err := ep.Recv(ctx, buf)
		if err != nil {
			fmt.Fprintf(out, "udaddy: failed polling CQ: %d\n", errnoStatus(err))
			fmt.Fprintf(errOut, "udaddy: %v\n", err)
			return errnoStatus(err)
		}
		if !seen[d.From] {
			seen[d.From] = true
			peers = append(peers, d.From)
		}
	}
	fmt.Fprintln(out, "sending replies")
	msg := make([]byte, cfg.Size)
	for _, p := range peers {
		for range cfg.Count {
			if err := ep.SendImm(ctx, p, msg, ep.QPNum()); err != nil {
				fmt.Fprintf(out, "failed to post sends: %d\n", errnoStatus(err))
				fmt.Fprintf(errOut, "udaddy: %v\n", err)
				return errnoStatus(err)
			}
		}
	}
	if err := ep.Flush(ctx); err != nil {
		fmt.Fprintf(out, "udaddy: failed polling CQ: %d\n", errnoStatus(err))
		fmt.Fprintf(errOut, "udaddy: %v\n", err)
		return errnoStatus(err)
	}
	fmt.Fprintln(out, "data transfers complete")
	return 0
}

func runClient(ctx context.Context, cfg *Config, out, errOut io.Writer) int {
	fmt.Fprintln(out, "udaddy: starting client")
	o, err := cfg.opts()
	if err != nil {
		fmt.Fprintf(errOut, "udaddy: %v\n", err)
		return -int(unix.EOPNOTSUPP)
	}
	if cfg.Src != "" {
		a, err := netip.ParseAddr(cfg.Src)
		if err != nil {
			ips, lerr := net.DefaultResolver.LookupNetIP(ctx, "ip", cfg.Src)
			if lerr != nil || len(ips) == 0 {
				fmt.Fprintf(errOut, "udaddy: -b %s: %v\n", cfg.Src, err)
				return -int(unix.EINVAL)
			}
			a = ips[0]
		}
		o.Source = a.Unmap()
	}
	fmt.Fprintln(out, "udaddy: connecting")
	eps := make([]*rdmacm.DatagramEndpoint, 0, cfg.Connections)
	defer func() {
		for _, ep := range eps {
			ep.Close()
		}
	}()
	for range cfg.Connections {
		ep, err := rdmacm.DialDatagram(ctx, net.JoinHostPort(cfg.Dst, Port), o)
		if err != nil {
			name, st := status(err)
			fmt.Fprintf(out, "udaddy: event: %s, error: %d\n", name, st)
			fmt.Fprintf(errOut, "udaddy: %v\n", err)
			return st
		}
		eps = append(eps, ep)
		if cfg.Count > 0 && cfg.Size > ep.MaxMessage() {
			mtuLine(out, cfg.Size, ep.MaxMessage())
			return -int(unix.EINVAL)
		}
	}
	if cfg.Count == 0 {
		return 0
	}
	fmt.Fprintln(out, "initiating data transfers")
	msg := make([]byte, cfg.Size)
	for _, ep := range eps {
		for range cfg.Count {
			if err := ep.SendImm(ctx, ep.Peer(), msg, ep.QPNum()); err != nil {
				fmt.Fprintf(out, "failed to post sends: %d\n", errnoStatus(err))
				fmt.Fprintf(errOut, "udaddy: %v\n", err)
				return errnoStatus(err)
			}
		}
	}
	fmt.Fprintln(out, "receiving data transfers")
	for _, ep := range eps {
		buf := make([]byte, ep.MaxMessage())
		for range cfg.Count {
			if _, err := ep.Recv(ctx, buf); err != nil {
				fmt.Fprintf(out, "udaddy: failed polling CQ: %d\n", errnoStatus(err))
				fmt.Fprintf(errOut, "udaddy: %v\n", err)
				return errnoStatus(err)
			}
		}
	}
	fmt.Fprintln(out, "data transfers complete")
	return 0
}

// errnoStatus is err's errno as a negative status, or -EIO.
func errnoStatus(err error) int {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return -int(errno)
	}
	if errors.Is(err, rdma.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return -int(unix.ETIMEDOUT)
	}
	return -int(unix.EIO)
}
