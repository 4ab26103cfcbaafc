// Command rdmacm-ping is an rping-compatible RDMA CM ping written on
// package cm: it speaks rping's protocol (the client advertises a buffer,
// the server RDMA-reads it and RDMA-writes it back) against rping itself,
// and adds ECE, connect-only and cmtime-style timing modes.
//
//	rdmacm-ping -s [-a addr] [-p port] [-vVd] [-P] [-q] [-ece V:O] [-reject-ece] [-connect-only]
//	rdmacm-ping -c -a addr [-p port] [-C count] [-S size] [-vVd] [-q] [-ece V:O] [-connect-only]
//	rdmacm-ping -c -a addr -cmtime N        (against `cmtime` or `rdmacm-ping -s -cmtime`)
//
// Errors are one line on stderr and exit status 1.
package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// minSize is rping's RPING_MIN_BUFSIZE: room for "rdma-ping-%d: " with the
// largest int.
const minSize = len("2147483647") + 1 + len("rdma-ping-%d: ") + 1

func main() {
	cfg, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmacm-ping: %v\n%s\n", err, usageText)
		os.Exit(2)
	}
	if !unix.IsLinux {
		fmt.Fprintf(os.Stderr, "rdmacm-ping: %v\n", unix.ErrNotSupported)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Let os/signal's watcher goroutine start and park now. It blocks in
	// the runtime (signal_recv) with an immediate handoff of the P to
	// another thread; left for later, it first ran when sysmon preempted
	// the -cmtime create id step, which then moved to a new thread in the
	// middle of the step (docs/benchmarks.md, create id).
	runtime.Gosched()
	if cfg.cpuprofile != "" {
		f, err := os.Create(cfg.cpuprofile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rdmacm-ping: %v\n", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(ctx, cfg); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintf(os.Stderr, "rdmacm-ping: %v\n", err)
		os.Exit(1)
	}
}

// app carries what every mode needs.
type app struct {
	cfg *config
	ch  *cm.Channel
	dbg func(format string, args ...any)
}

func run(ctx context.Context, cfg *config) error {
	opts := &cm.Options{Backend: cm.Backend(cfg.backend), UMADSends: cfg.umadSends}
	if cfg.pcap != "" {
		f, err := os.Create(cfg.pcap)
		if err != nil {
			return fmt.Errorf("-pcap: %w", err)
		}
		defer f.Close()
		opts.Trace = f
	}
	ch, err := cm.Open(opts)
	if err != nil {
		return err
	}
	defer ch.Close()
	a := &app{cfg: cfg, ch: ch, dbg: func(string, ...any) {}}
	if cfg.debug {
		a.dbg = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "debug: "+format+"\n", args...)
		}
		a.dbg("backend %s", ch.Backend())
	}
	switch {
	case cfg.cmtime > 0 && cfg.client:
		return a.cmtimeClient(ctx)
	case cfg.cmtime > 0:
		return a.cmtimeServer(ctx)
	case cfg.connectOnly && cfg.client:
		return a.connectOnlyClient(ctx)
	case cfg.connectOnly || cfg.rejectECE && !cfg.persistent:
		return a.connectOnlyServer(ctx)
	case cfg.client:
		return a.pingClient(ctx)
	}
	return a.pingServer(ctx)
}

// step bounds one blocking step by the -t timeout.
func (a *app) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(a.cfg.timeout)*time.Second)
}

// lookup resolves a host name or address literal (rping uses getaddrinfo).
func lookup(host string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			return a.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s: no address", host)
}

// dst is the server address and port of a client.
func (a *app) dst() (netip.AddrPort, error) {
	ip, err := lookup(a.cfg.addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ip, uint16(a.cfg.port)), nil
}

// src is the client's optional source address (-I).
func (a *app) src() (netip.AddrPort, error) {
	if a.cfg.source == "" {
		return netip.AddrPort{}, nil
	}
	ip, err := lookup(a.cfg.source)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ip, 0), nil
}

// bindAddr is the server's listening address.
func (a *app) bindAddr() (netip.AddrPort, error) {
	ip := netip.IPv4Unspecified()
	if a.cfg.addr != "" {
		var err error
		if ip, err = lookup(a.cfg.addr); err != nil {
			return netip.AddrPort{}, err
		}
	}
	return netip.AddrPortFrom(ip, uint16(a.cfg.port)), nil
}

// resolve runs the client's address and route resolution on a
// synchronous ID.
func (a *app) resolve(ctx context.Context, id *cm.ID) error {
	dst, err := a.dst()
	if err != nil {
		return err
	}
	src, err := a.src()
	if err != nil {
		return err
	}
	sctx, cancel := a.step(ctx)
	defer cancel()
	if err := id.ResolveAddr(sctx, src, dst, 2*time.Second); err != nil {
		return err
	}
	a.dbg("address resolved")
	if err := id.ResolveRoute(sctx, 2*time.Second); err != nil {
		return err
	}
	a.dbg("route resolved")
	return nil
}

// listen creates a synchronous listening ID.
func (a *app) listen() (*cm.ID, error) {
	addr, err := a.bindAddr()
	if err != nil {
		return nil, err
	}
	l, err := a.ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		return nil, err
	}
	if err := l.Bind(addr); err != nil {
		l.Destroy()
		return nil, err
	}
	if err := l.Listen(0); err != nil {
		l.Destroy()
		return nil, err
	}
	a.dbg("listening on %v", addr)
	return l, nil
}
