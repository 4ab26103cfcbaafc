package vmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

// Guest addresses on the wire between the guests (TEST-NET-1, RFC 5737; it
// exists only inside the guests).
const (
	AddrA = "192.0.2.1"
	AddrB = "192.0.2.2"
)

// PairOptions configure BootPair. The zero value boots both guests with all
// modules, in a temporary share, with the detected accelerator.
type PairOptions struct {
	Image *Image // nil: Prepare with default options
	// Share is the host folder both guests mount at /host. Empty: a new
	// temporary folder, removed by Close unless Keep.
	Share string
	Keep  bool
	// SkipModulesA/B leave modules (and their dependents) out of a guest,
	// e.g. CMModules so that our own CM engine owns the CM class over umad.
	SkipModulesA, SkipModulesB []string
	Accel                      string        // "kvm", "tcg"; empty: $VMTEST_ACCEL or DetectAccel
	BootTimeout                time.Duration // per guest; default DefaultBootTimeout
	Lifetime                   time.Duration // per guest; default DefaultLifetime
	MemoryMiB                  int
	Log                        io.Writer // progress; default os.Stderr
	Debug                      bool      // kernel messages on the consoles
	// ArchA and ArchB pick each guest's architecture: ArchAMD64 (or empty)
	// or ArchARM64, e.g. an x86-64 guest a and an arm64 guest b on one
	// wire. An arm64 guest always runs under TCG.
	ArchA, ArchB string
	// Arm64Image is the arm64 guests' image (nil: Prepare with ArchARM64).
	Arm64Image *Image
}

// image returns the image for a guest of arch, preparing it if the
// options carry none.
func (o *PairOptions) image(ctx context.Context, arch string, log io.Writer) (*Image, error) {
	switch arch {
	case "", ArchAMD64:
		if o.Image == nil {
			img, err := Prepare(ctx, PrepareOptions{Log: log})
			if err != nil {
				return nil, err
			}
			o.Image = img
		}
		return o.Image, nil
	case ArchARM64:
		if o.Arm64Image == nil {
			img, err := Prepare(ctx, PrepareOptions{Log: log, Arch: ArchARM64})
			if err != nil {
				return nil, err
			}
			o.Arm64Image = img
		}
		return o.Arm64Image, nil
	}
	return nil, fmt.Errorf("vmtest: no guest architecture %q (amd64, arm64)", arch)
}

// agentFor installs the agent built for img's architecture in the share
// and returns its host path.
func agentFor(ctx context.Context, share string, img *Image) (string, error) {
	path := filepath.Join(share, ".vmtest", "vmagent")
	if img.ArchName() != ArchAMD64 {
		path += "-" + img.ArchName()
	}
	return path, InstallAgentArch(ctx, path, img.ArchName())
}

// accelFor is the accelerator of the x86-64 guests (an arm64 guest is
// always TCG): amd64 is their image, nil if there are none.
func accelFor(ctx context.Context, opts PairOptions, amd64 *Image, log io.Writer) string {
	if opts.Accel != "" {
		return opts.Accel
	}
	if amd64 == nil {
		return "tcg"
	}
	return DetectAccel(ctx, amd64, log)
}

// Pair is two running guests joined by a virtual wire.
type Pair struct {
	A, B  *Machine
	Share string // host folder, /host in both guests
	Image *Image
	Accel string
	keep  bool
	temp  bool
}

// BootPair boots guest a (AddrA) and guest b (AddrB) in parallel, joined by
// a wire carried in UDP datagrams over loopback, each with rxe0 on eth0 and
// a command agent. Close the pair when done.
func BootPair(ctx context.Context, opts PairOptions) (*Pair, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	imgA, err := opts.image(ctx, opts.ArchA, log)
	if err != nil {
		return nil, err
	}
	imgB, err := opts.image(ctx, opts.ArchB, log)
	if err != nil {
		return nil, err
	}
	imgs := []*Image{imgA, imgB}
	var amd64 *Image
	for _, img := range imgs {
		if img.ArchName() == ArchAMD64 {
			amd64 = img
		}
	}
	p := &Pair{Image: imgA, Share: opts.Share, keep: opts.Keep}
	if p.Share == "" {
		d, err := os.MkdirTemp("", "vmtest-share-")
		if err != nil {
			return nil, err
		}
		p.Share, p.temp = d, true
	} else if err := os.MkdirAll(p.Share, 0o755); err != nil {
		return nil, err
	}
	p.Share, _ = filepath.Abs(p.Share)
	fail := func(err error) (*Pair, error) {
		p.Close()
		return nil, err
	}
	var agents [2]string
	for i, img := range imgs {
		if i == 1 && img.ArchName() == imgs[0].ArchName() {
			agents[1] = agents[0]
		} else if agents[i], err = agentFor(ctx, p.Share, img); err != nil {
			return fail(err)
		}
	}
	accel := accelFor(ctx, opts, amd64, log)
	ports, err := freeUDPPorts(2)
	if err != nil {
		return fail(err)
	}
	cfg := func(name, addr, mac string, local, peer int, skip []string, agentPath string) MachineConfig {
		return MachineConfig{
			Name: name, Addr: addr, MAC: mac, SkipModules: skip, Share: p.Share,
			LocalPort: local, PeerPort: peer, Accel: accel, MemoryMiB: opts.MemoryMiB,
			BootTimeout: opts.BootTimeout, Lifetime: opts.Lifetime, AgentPath: agentPath,
			Log: log, Debug: opts.Debug,
		}
	}
	cfgs := []MachineConfig{
		cfg("a", AddrA, "52:54:00:00:00:01", ports[0], ports[1], opts.SkipModulesA, agents[0]),
		cfg("b", AddrB, "52:54:00:00:00:02", ports[1], ports[0], opts.SkipModulesB, agents[1]),
	}
	start := time.Now()
	ms, err := bootAll(ctx, imgs, cfgs)
	if err != nil && accel == "kvm" && errors.Is(err, ErrBootTimeout) {
		fmt.Fprintf(log, "vmtest: KVM boot failed; retrying under TCG\n%v\n", err)
		recordAccel(amd64, "tcg")
		for i := range cfgs {
			cfgs[i].Accel = "tcg"
		}
		accel = "tcg"
		ms, err = bootAll(ctx, imgs, cfgs)
	}
	if err != nil {
		return fail(err)
	}
	p.A, p.B, p.Accel = ms[0], ms[1], accel
	fmt.Fprintf(log, "vmtest: guests a (%s, %s) and b (%s, %s) up in %v, share %s\n", p.A.Arch, p.A.Accel, p.B.Arch, p.B.Accel,
		time.Since(start).Round(time.Millisecond), p.Share)
	return p, nil
}

// bootAll boots the guests in parallel; on any failure it kills them all.
func bootAll(ctx context.Context, imgs []*Image, cfgs []MachineConfig) ([]*Machine, error) {
	ms := make([]*Machine, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, c := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = startMachine(ctx, imgs[i], c)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, m := range ms {
			if m != nil {
				m.Kill()
			}
		}
		return nil, err
	}
	return ms, nil
}

// Boot boots a single guest (its wire leads nowhere) with the same options
// as BootPair (ArchA its architecture); it is guest "a" at AddrA. Close the
// returned pair; B is nil.
func Boot(ctx context.Context, opts PairOptions) (*Pair, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	img, err := opts.image(ctx, opts.ArchA, log)
	if err != nil {
		return nil, err
	}
	p := &Pair{Image: img, Share: opts.Share, keep: opts.Keep}
	if p.Share == "" {
		d, err := os.MkdirTemp("", "vmtest-share-")
		if err != nil {
			return nil, err
		}
		p.Share, p.temp = d, true
	}
	p.Share, _ = filepath.Abs(p.Share)
	agentPath, err := agentFor(ctx, p.Share, img)
	if err != nil {
		p.Close()
		return nil, err
	}
	accel := accelFor(ctx, opts, archImage(img, ArchAMD64), log)
	ports, err := freeUDPPorts(2)
	if err != nil {
		p.Close()
		return nil, err
	}
	m, err := startMachine(ctx, img, MachineConfig{
		Name: "a", Addr: AddrA, MAC: "52:54:00:00:00:01", SkipModules: opts.SkipModulesA, Share: p.Share,
		LocalPort: ports[0], PeerPort: ports[1], Accel: accel, MemoryMiB: opts.MemoryMiB,
		BootTimeout: opts.BootTimeout, Lifetime: opts.Lifetime, AgentPath: agentPath, Log: log, Debug: opts.Debug,
	})
	if err != nil {
		p.Close()
		return nil, err
	}
	p.A, p.Accel = m, accel
	return p, nil
}

// Machines returns the running guests.
func (p *Pair) Machines() []*Machine {
	var ms []*Machine
	for _, m := range []*Machine{p.A, p.B} {
		if m != nil {
			ms = append(ms, m)
		}
	}
	return ms
}

// ConsoleReports returns the console tails of all guests, for failure messages.
func (p *Pair) ConsoleReports(n int) string {
	var b strings.Builder
	for _, m := range p.Machines() {
		b.WriteString(m.ConsoleReport(n))
		b.WriteString("\n")
	}
	return b.String()
}

// Close shuts both guests down and removes a temporary share (unless Keep).
func (p *Pair) Close() error {
	var wg sync.WaitGroup
	for _, m := range p.Machines() {
		wg.Add(1)
		go func() { defer wg.Done(); m.Close() }()
	}
	wg.Wait()
	if p.temp && !p.keep {
		return os.RemoveAll(p.Share)
	}
	return nil
}

// InstallAgent puts a static x86-64 vmagent binary at dst: $VMTEST_AGENT
// if set, else built with `go build` (CGO_ENABLED=0) from this module.
func InstallAgent(ctx context.Context, dst string) error {
	return InstallAgentArch(ctx, dst, ArchAMD64)
}

// InstallAgentArch is InstallAgent for a guest architecture (GOARCH);
// $VMTEST_AGENT stands in for the amd64 build only.
func InstallAgentArch(ctx context.Context, dst, arch string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if src := os.Getenv("VMTEST_AGENT"); src != "" && arch == ArchAMD64 {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("vmtest: VMTEST_AGENT: %w", err)
		}
		return os.WriteFile(dst, b, 0o755)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("vmtest: no go command to build vmagent (put it on PATH, or set VMTEST_AGENT): %w", err)
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-o", dst, "github.com/go-rdma/rdmacm/internal/vmtest/cmd/vmagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("vmtest: build vmagent (run inside the module, or set VMTEST_AGENT): %w\n%s", err, out)
	}
	return nil
}

// accelVerdict is cached per image and host so the KVM probe runs once.
type accelVerdict struct {
	Accel  string `json:"accel"`
	Host   string `json:"host"`
	Detail string `json:"detail"`
}

func hostID() string {
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	qv, _ := exec.Command("qemu-system-x86_64", "--version").Output()
	first, _, _ := strings.Cut(string(qv), "\n")
	return strings.TrimSpace(string(rel)) + " | " + strings.TrimSpace(first)
}

func accelFile(img *Image) string { return filepath.Join(img.Dir, "accel.json") }

func recordAccel(img *Image, accel string) {
	b, _ := json.Marshal(accelVerdict{Accel: accel, Host: hostID()})
	_ = os.WriteFile(accelFile(img), b, 0o644)
}

// KVMProbeTimeout bounds the KVM probe boot (a working KVM boots in ~2 s).
var KVMProbeTimeout = 20 * time.Second

// DetectAccel returns $VMTEST_ACCEL if set; else "kvm" if a short probe boot
// under KVM reaches the guest init in time, "tcg" otherwise. (KVM hung at
// boot on the machine this was written on, so it must be proven, not
// assumed.) The verdict is cached with the image.
func DetectAccel(ctx context.Context, img *Image, log io.Writer) string {
	if a := os.Getenv("VMTEST_ACCEL"); a == "kvm" || a == "tcg" {
		return a
	}
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		return "tcg"
	} else {
		f.Close()
	}
	host := hostID()
	var v accelVerdict
	if b, err := os.ReadFile(accelFile(img)); err == nil && json.Unmarshal(b, &v) == nil && v.Host == host {
		return v.Accel
	}
	fmt.Fprintf(log, "vmtest: probing KVM (deadline %v)\n", KVMProbeTimeout)
	pctx, cancel := context.WithTimeout(ctx, KVMProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(pctx, "qemu-system-x86_64", "-nodefaults", "-no-user-config", "-no-reboot",
		"-display", "none", "-m", "256", "-accel", "kvm", "-cpu", "host", "-serial", "stdio",
		"-kernel", img.Kernel, "-initrd", img.Initrd, "-append", "console=ttyS0 panic=-1 quiet vm.probe=1")
	out, err := cmd.CombinedOutput()
	v = accelVerdict{Accel: "tcg", Host: host}
	if strings.Contains(string(out), "VMTEST_PROBE_OK") {
		v.Accel = "kvm"
	} else {
		v.Detail = fmt.Sprintf("probe: %v: %s", err, tail(out, 500))
	}
	if ctx.Err() == nil {
		b, _ := json.Marshal(v)
		_ = os.WriteFile(accelFile(img), b, 0o644)
	}
	fmt.Fprintf(log, "vmtest: accelerator %s\n", v.Accel)
	return v.Accel
}

// Shell boots one guest (a) with its console and a shell on this terminal,
// and returns when the guest powers off (type `exit` or Ctrl-A X).
func Shell(ctx context.Context, opts PairOptions) error {
	img, err := opts.image(ctx, opts.ArchA, os.Stderr)
	if err != nil {
		return err
	}
	share := opts.Share
	if share == "" {
		var err error
		if share, err = os.MkdirTemp("", "vmtest-share-"); err != nil {
			return err
		}
	}
	share, _ = filepath.Abs(share)
	agentPath, err := agentFor(ctx, share, img)
	if err != nil {
		return err
	}
	accel := accelFor(ctx, opts, archImage(img, ArchAMD64), os.Stderr)
	ports, err := freeUDPPorts(2)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "vmtest: share %s is /host in the guest; Ctrl-A X quits qemu\n", share)
	m, err := startMachine(ctx, img, MachineConfig{
		Name: "a", Addr: AddrA, MAC: "52:54:00:00:00:01", SkipModules: opts.SkipModulesA, Share: share,
		LocalPort: ports[0], PeerPort: ports[1], Accel: accel, MemoryMiB: opts.MemoryMiB,
		Lifetime: 24 * time.Hour, AgentPath: agentPath, Interactive: true, Debug: opts.Debug,
	})
	if err != nil {
		return err
	}
	<-m.done
	return nil
}

// Attach returns a Machine handle for guest name of a pair already running
// with the given share (booted by another process, e.g. `vmtest pair`). Only
// Run/Start and the path helpers work on it.
func Attach(share, name string) *Machine {
	share, _ = filepath.Abs(share)
	dir := filepath.Join(share, ".vmtest", name)
	done := make(chan struct{}) // never closed: we do not own qemu
	return &Machine{Name: name, Share: share, agent: &agent.Client{Name: name, Dir: dir},
		console: filepath.Join(share, ".vmtest", name+".console"), done: done}
}

// archImage is img if it is of arch, else nil.
func archImage(img *Image, arch string) *Image {
	if img.ArchName() == arch {
		return img
	}
	return nil
}
