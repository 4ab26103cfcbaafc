package hwtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
	"golang.org/x/sys/unix"
)

// skipError makes a check SKIP with its reason.
type skipError struct{ reason string }

func (e skipError) Error() string { return e.reason }

func skipf(format string, args ...any) error { return skipError{fmt.Sprintf(format, args...)} }

// target is the device under test and how to reach it.
type target struct {
	dev      uverbs.Device
	provider string
	hasECE   bool
	ioctl    bool
	gid      uverbs.GIDEntry // port 1's GID for loopback
	lid      uint16
	mtu      rdma.MTU // port 1
	ib       bool     // InfiniBand link layer (AH needs the DLID)
	ip       netip.Addr
	ipErr    error // why there is no IPv4 address
}

// runner runs checks one after another, each bounded by a timeout.
type runner struct {
	cfg Config
	rep *Report
	// abandoned: a check timed out and its goroutine may still run.
	abandoned bool
}

// check runs f in its own goroutine, bounded by the timeout: a check that
// hangs in a syscall is abandoned and reported, and the run goes on.
func (r *runner) check(ctx context.Context, name string, f func(ctx context.Context) (string, error)) Result {
	return r.checkFor(ctx, name, r.cfg.Timeout, f)
}

// checkFor is check with its own timeout.
func (r *runner) checkFor(ctx context.Context, name string, timeout time.Duration, f func(ctx context.Context) (string, error)) Result {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type out struct {
		detail string
		err    error
	}
	done := make(chan out, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- out{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		d, err := f(cctx)
		done <- out{d, err}
	}()
	res := Result{Name: name}
	select {
	case o := <-done:
		var skip skipError
		switch {
		case errors.As(o.err, &skip):
			res.Status, res.Detail = Skip, skip.reason
		case o.err != nil:
			res.Status, res.Detail = Fail, joinDetail(o.detail, o.err.Error())
		default:
			res.Status, res.Detail = Pass, o.detail
		}
	case <-time.After(timeout + 5*time.Second):
		// f ignored its context (a blocked syscall): leave it behind.
		r.abandoned = true
		res.Status, res.Detail = Fail, fmt.Sprintf("timed out after %v (check abandoned)", timeout)
	}
	res.Duration = time.Since(start)
	r.rep.Add(res)
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "hwtest: %-32s %s %s\n", name, res.Status, FormatDuration(res.Duration))
	}
	return res
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + ": " + b
}

// Run runs every check on the device and returns the report. It never
// fails as a whole: what goes wrong is a FAIL row.
func Run(ctx context.Context, cfg Config) *Report {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	rep := &Report{}
	r := &runner{cfg: cfg, rep: rep}
	rep.Set("date", time.Now().UTC().Format(time.RFC3339))
	rep.Set("kernel", kernelVersion())
	rep.Set("host arch", runtime.GOOS+"/"+runtime.GOARCH)
	rep.Set("Go", runtime.Version())
	rep.Set("module", moduleVersion(ctx))

	tg, err := probe(cfg.Device)
	if tg != nil {
		describe(rep, tg)
	}
	if err != nil {
		if tg == nil {
			rep.Set("device", valueOr(cfg.Device, "(first)"))
		}
		r.check(ctx, "open device", func(context.Context) (string, error) { return "", err })
		return rep
	}
	r.verbsChecks(ctx, tg)
	r.eceCheck(ctx, tg)
	r.cmChecks(ctx, tg)
	r.commandChecks(ctx, tg)
	return rep
}

// probe finds the device, opens it once for what only a context knows and
// picks the loopback GID and the IPv4 address.
func probe(name string) (*target, error) {
	dev, err := uverbs.DefaultDiscovery.Device(name)
	if err != nil {
		return nil, err
	}
	tg := &target{dev: dev}
	x, err := uverbs.OpenDevice(dev, nil)
	if err != nil {
		return tg, fmt.Errorf("open %s: %w", dev.Name, err)
	}
	defer x.Close()
	tg.provider, tg.hasECE, tg.ioctl = x.Provider(), x.HasECE(), x.UsesIoctl()
	if len(dev.Ports) == 0 {
		return tg, fmt.Errorf("%s has no ports in sysfs", dev.Name)
	}
	pa, err := x.QueryPort(1)
	if err != nil {
		return tg, fmt.Errorf("query port 1: %w", err)
	}
	tg.mtu, tg.lid, tg.ib = pa.ActiveMTU, pa.LID, pa.LinkLayer == uverbs.LinkInfiniBand
	gids := dev.Ports[0].GIDs
	if len(gids) == 0 {
		if gids, err = x.QueryGIDTable(); err != nil {
			return tg, fmt.Errorf("GID table: %w", err)
		}
	}
	var ok bool
	if tg.gid, ok = pickGID(gids); !ok {
		return tg, fmt.Errorf("port 1 of %s has no GID", dev.Name)
	}
	tg.ip, tg.ipErr = netdevIPv4(tg.gid)
	return tg, nil
}

// pickGID takes port 1's RoCE v2 GID holding an IPv4-mapped address, else
// index 0.
func pickGID(gids []uverbs.GIDEntry) (uverbs.GIDEntry, bool) {
	var first *uverbs.GIDEntry
	for i, g := range gids {
		if g.Port != 1 && g.Port != 0 {
			continue
		}
		if g.Type == uverbs.GIDTypeRoCEv2 && isV4Mapped(g.GID) {
			return g, true
		}
		if g.Index == 0 && first == nil {
			first = &gids[i]
		}
	}
	if first != nil {
		return *first, true
	}
	return uverbs.GIDEntry{}, false
}

func isV4Mapped(g rdma.GID) bool {
	a := netip.AddrFrom16(g)
	return a.Is4In6()
}

// netdevIPv4 is the IPv4 address of the GID's netdev: the GID's own when it
// is one of the netdev's, else the netdev's first.
func netdevIPv4(g uverbs.GIDEntry) (netip.Addr, error) {
	if g.Netdev == "" {
		return netip.Addr{}, fmt.Errorf("GID %d has no netdev", g.Index)
	}
	ifc, err := net.InterfaceByName(g.Netdev)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	want := netip.AddrFrom16(g.GID).Unmap()
	var first netip.Addr
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil || !pfx.Addr().Is4() {
			continue
		}
		if pfx.Addr() == want {
			return want, nil
		}
		if !first.IsValid() {
			first = pfx.Addr()
		}
	}
	if !first.IsValid() {
		return netip.Addr{}, fmt.Errorf("no IPv4 address on %s", g.Netdev)
	}
	return first, nil
}

// describe fills the header and the port and GID tables.
func describe(rep *Report, tg *target) {
	d := tg.dev
	rep.Set("device", d.Name)
	rep.Set("driver", valueOr(tg.provider, "unknown"))
	rep.Set("node GUID", d.NodeGUID.String())
	rep.Set("fw_ver", valueOr(d.FWVersion, "-"))
	pci := "-"
	if v, dv := sysfsString(d.SysPath, "device/vendor"), sysfsString(d.SysPath, "device/device"); v != "" && dv != "" {
		pci = strings.TrimPrefix(v, "0x") + ":" + strings.TrimPrefix(dv, "0x")
	}
	rep.Set("PCI vendor:device", pci)
	rep.Set("board_id", valueOr(sysfsString(d.SysPath, "board_id"), "-"))
	if d.Parent != "" {
		rep.Set("parent netdev", d.Parent)
	}
	rep.Set("HasECE", yesNo(tg.hasECE))
	iface := "write"
	if tg.ioctl {
		iface = "ioctl"
	}
	if tg.provider == "" {
		iface = "unknown"
	}
	rep.Set("interface", iface)
	if tg.gid.GID != (rdma.GID{}) {
		rep.Set("loopback GID", fmt.Sprintf("port 1 index %d (%v, %s)", tg.gid.Index, tg.gid.Type, valueOr(tg.gid.Netdev, "no netdev")))
	}
	if tg.ip.IsValid() {
		rep.Set("IPv4 address", tg.ip.String())
	} else if tg.ipErr != nil {
		rep.Set("IPv4 address", "none: "+tg.ipErr.Error())
	}
	for _, p := range d.Ports {
		mtu := "-"
		if p.ActiveMTU != 0 {
			mtu = fmt.Sprint(p.ActiveMTU.Bytes())
		}
		if p.Num == 1 && tg.mtu != 0 {
			mtu = fmt.Sprint(tg.mtu.Bytes())
		}
		rep.Ports = append(rep.Ports, PortInfo{Port: p.Num, State: p.State.String(), LinkLayer: p.LinkLayer.String(), ActiveMTU: mtu})
		for _, g := range p.GIDs {
			rep.GIDs = append(rep.GIDs, GIDInfo{Port: p.Num, Index: g.Index, GID: g.GID.String(), Type: g.Type.String(), Netdev: valueOr(g.Netdev, "-")})
		}
	}
}

func sysfsString(dir, name string) string {
	if dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func valueOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func kernelVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown: " + err.Error()
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " +
		unix.ByteSliceToString(u.Version[:]) + " " + unix.ByteSliceToString(u.Machine[:])
}

// moduleVersion is the build's vcs.revision, else git's view of the
// module, else "unknown".
func moduleVersion(ctx context.Context) string {
	bi, ok := debug.ReadBuildInfo()
	if ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			if modified == "true" {
				rev += " (modified)"
			}
			return bi.Main.Path + " " + rev
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		if ok && bi.Main.Version != "" {
			return bi.Main.Path + " " + bi.Main.Version + " (no vcs.revision)"
		}
		return "unknown (no vcs.revision)"
	}
	rev := strings.TrimSpace(string(out)) + " (from git"
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += ", modified"
	}
	return "github.com/go-rdma/rdmacm " + rev + ")"
}
