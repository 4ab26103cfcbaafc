package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

// GuestShare is where each guest mounts the shared host folder (9p tag host0).
const GuestShare = "/host"

// Defaults for timeouts and sizes; PairOptions and MachineConfig override.
const (
	DefaultBootTimeout = 3 * time.Minute  // TCG boots in ~10 s; generous for a loaded 2-core host
	DefaultLifetime    = 15 * time.Minute // a guest is killed after this, whatever happens
	DefaultMemoryMiB   = 768
)

// Machine is one running guest.
type Machine struct {
	Name  string // "a" or "b"
	Addr  string // its address on the guest wire, e.g. 192.0.2.1
	Share string // the shared folder on the host (GuestShare in the guest)
	Accel string // "kvm" or "tcg"
	Arch  string // ArchAMD64 or ArchARM64

	// SkippedModules are the modules this guest did not load.
	SkippedModules []string

	image   *Image
	agent   *agent.Client
	cmd     *exec.Cmd
	console string
	done    chan struct{} // closed when qemu has exited
	exitErr error
	kill    sync.Once
	life    *time.Timer
}

// MachineConfig describes one guest to boot.
type MachineConfig struct {
	Name        string   // guest name: a, b
	Addr        string   // IPv4 address on eth0 (/24)
	MAC         string   // eth0 MAC
	SkipModules []string // modules not to load (closure over dependents is added)
	Share       string   // host folder shared at /host
	// Wire: UDP ports on 127.0.0.1 carrying eth0's frames: this guest
	// listens on LocalPort and sends to PeerPort.
	LocalPort, PeerPort int
	Accel               string // kvm or tcg
	MemoryMiB           int
	BootTimeout         time.Duration
	Lifetime            time.Duration
	AgentPath           string    // host path of the agent binary, inside Share
	Console             string    // host path for the serial console log
	Interactive         bool      // console on this terminal, with a shell in the guest
	Log                 io.Writer // progress
	Debug               bool      // kernel messages on the console
}

// guestCPUs is the guests' vCPU count: 1, or $VMTEST_SMP (a positive
// number) for experiments only, such as giving Go's sysmon a CPU of its
// own (docs/benchmarks.md, create id). Tests and benchmarks
// assume 1.
func guestCPUs() string {
	if n, err := strconv.Atoi(os.Getenv("VMTEST_SMP")); err == nil && n > 0 {
		return strconv.Itoa(n)
	}
	return "1"
}

func (c *MachineConfig) qemuArgs(img *Image, skip []string) []string {
	args := []string{"-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
		"-m", fmt.Sprint(c.MemoryMiB), "-smp", guestCPUs()}
	console := "ttyS0"
	if img.ArchName() == ArchARM64 {
		// No firmware: -kernel boots the Image on the virt board directly.
		// cortex-a72 rather than max: max's pointer authentication is slow
		// under TCG.
		args = append(args, "-M", "virt", "-cpu", "cortex-a72", "-accel", "tcg")
		console = "ttyAMA0"
	} else if c.Accel == "kvm" {
		args = append(args, "-accel", "kvm", "-cpu", "host")
	} else {
		args = append(args, "-accel", "tcg")
	}
	if c.Interactive {
		args = append(args, "-serial", "mon:stdio")
	} else {
		args = append(args, "-serial", "stdio")
	}
	cmdline := []string{"console=" + console, "panic=-1", "vm.name=" + c.Name, "vm.ip=" + c.Addr}
	if !c.Debug {
		cmdline = append(cmdline, "quiet")
	}
	if len(skip) > 0 {
		cmdline = append(cmdline, "vm.nomods="+strings.Join(skip, ","))
	}
	if c.AgentPath != "" {
		rel, _ := filepath.Rel(c.Share, c.AgentPath)
		cmdline = append(cmdline, "vm.agent="+GuestShare+"/"+filepath.ToSlash(rel))
	}
	if c.Interactive {
		cmdline = append(cmdline, "vm.shell=1")
	}
	args = append(args,
		"-kernel", img.Kernel, "-initrd", img.Initrd, "-append", strings.Join(cmdline, " "),
		"-fsdev", "local,id=fs0,path="+c.Share+",security_model=none",
		"-device", "virtio-9p-pci,fsdev=fs0,mount_tag=host0",
		// The wire: Ethernet frames in UDP datagrams over loopback. No host
		// network device; a TCP socket netdev is ~40x slower.
		"-netdev", fmt.Sprintf("socket,id=n0,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d", c.PeerPort, c.LocalPort),
		"-device", "virtio-net-pci,netdev=n0,mac="+c.MAC)
	return args
}

// startMachine starts qemu and waits for the guest's agent to be ready.
func startMachine(ctx context.Context, img *Image, c MachineConfig) (*Machine, error) {
	if c.MemoryMiB == 0 {
		c.MemoryMiB = DefaultMemoryMiB
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = DefaultBootTimeout
	}
	if c.Lifetime == 0 {
		c.Lifetime = DefaultLifetime
	}
	if c.Console == "" {
		c.Console = filepath.Join(c.Share, ".vmtest", c.Name+".console")
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	stateDir := filepath.Join(c.Share, ".vmtest", c.Name)
	os.RemoveAll(stateDir) // stale state from an earlier boot of this share
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	skip := img.SkipClosure(c.SkipModules)
	m := &Machine{
		Name: c.Name, Addr: c.Addr, Share: c.Share, Accel: c.Accel, Arch: img.ArchName(), SkippedModules: skip,
		image: img, agent: &agent.Client{Name: c.Name, Dir: stateDir},
		console: c.Console, done: make(chan struct{}),
	}
	if img.ArchName() == ArchARM64 {
		m.Accel = "tcg"
	}
	cmd := exec.Command(img.qemuBinary(), c.qemuArgs(img, skip)...)
	if c.Interactive {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	} else {
		f, err := os.Create(c.Console)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
		// Own process group (a terminal's Ctrl-C reaches us, and we clean
		// up); killed if we die.
		cmd.SysProcAttr = qemuProcAttr()
	}
	fmt.Fprintf(c.Log, "vmtest: booting guest %s (%s, %s, %s): console %s\n", c.Name, c.Addr, m.Arch, m.Accel, c.Console)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("vmtest: start qemu for guest %s: %w", c.Name, err)
	}
	m.cmd = cmd
	go func() {
		m.exitErr = cmd.Wait()
		close(m.done)
	}()
	m.life = time.AfterFunc(c.Lifetime, func() {
		fmt.Fprintf(c.Log, "vmtest: guest %s reached its lifetime %v: killing it\n", c.Name, c.Lifetime)
		m.Kill()
	})
	if c.Interactive {
		return m, nil
	}
	if err := m.waitReady(ctx, c.BootTimeout); err != nil {
		m.Kill()
		return nil, err
	}
	return m, nil
}

func (m *Machine) waitReady(ctx context.Context, timeout time.Duration) error {
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if m.agent.Ready() {
			return nil
		}
		select {
		case <-m.done:
			return m.failure(fmt.Errorf("qemu exited during boot (%v)", m.exitErr))
		case <-deadline.C:
			return m.failure(fmt.Errorf("%w: no agent after %v", ErrBootTimeout, timeout))
		case <-ctx.Done():
			return m.failure(fmt.Errorf("boot interrupted after %v: %w", time.Since(start).Round(time.Second), ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ErrBootTimeout means a guest did not come up within its boot timeout.
var ErrBootTimeout = errors.New("guest did not boot in time")

// failure wraps err with the guest's name and console tail.
func (m *Machine) failure(err error) error {
	return fmt.Errorf("vmtest: guest %s: %w\n%s", m.Name, err, m.ConsoleReport(40))
}

// ConsoleReport is the last n console lines with a header, for failure messages.
func (m *Machine) ConsoleReport(n int) string {
	return fmt.Sprintf("--- guest %s console (%s), last %d lines ---\n%s--- end of guest %s console ---",
		m.Name, m.console, n, m.ConsoleTail(n), m.Name)
}

// ConsoleTail returns the last n lines of the serial console.
func (m *Machine) ConsoleTail(n int) string {
	b, err := os.ReadFile(m.console)
	if err != nil {
		return fmt.Sprintf("(no console log: %v)\n", err)
	}
	b = bytes.ReplaceAll(b, []byte("\r"), nil)
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, "")
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// ConsolePath is the host path of the serial console log.
func (m *Machine) ConsolePath() string { return m.console }

// Alive reports whether qemu is still running.
func (m *Machine) Alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Kill ends qemu at once.
func (m *Machine) Kill() {
	m.kill.Do(func() {
		if m.cmd != nil && m.cmd.Process != nil {
			_ = m.cmd.Process.Kill()
		}
	})
	if m.cmd != nil {
		<-m.done
	}
	if m.life != nil {
		m.life.Stop()
	}
}

// Close asks the guest's agent to shut down (the guest powers off), and
// kills qemu if it has not exited within a few seconds.
func (m *Machine) Close() error {
	if !m.Alive() {
		m.Kill()
		return nil
	}
	_ = m.agent.Shutdown()
	select {
	case <-m.done:
	case <-time.After(5 * time.Second):
	}
	m.Kill()
	return nil
}

// Agent is the client for this guest's command agent.
func (m *Machine) Agent() *agent.Client { return m.agent }

// HostPath maps a guest path under GuestShare to the host.
func (m *Machine) HostPath(guestPath string) string {
	rel, ok := strings.CutPrefix(guestPath, GuestShare+"/")
	if !ok {
		return ""
	}
	return filepath.Join(m.Share, rel)
}

// GuestPath maps a host path inside the share to the guest.
func (m *Machine) GuestPath(hostPath string) string {
	rel, err := filepath.Rel(m.Share, hostPath)
	if err != nil || strings.HasPrefix(rel, "..") {
		return ""
	}
	return GuestShare + "/" + filepath.ToSlash(rel)
}

// Run runs a shell script in the guest and waits for it. The agent kills it
// when ctx's deadline (or agent.DefaultTimeout) passes. A non-zero exit is
// an *agent.ExitError; a guest that stopped answering is reported with its
// console tail.
func (m *Machine) Run(ctx context.Context, script string) (*agent.Result, error) {
	return m.RunCmd(ctx, agent.Cmd{Script: script})
}

// RunCmd is Run with a full command description.
func (m *Machine) RunCmd(ctx context.Context, cmd agent.Cmd) (*agent.Result, error) {
	p, err := m.StartCmd(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return m.wait(ctx, p)
}

func (m *Machine) wait(ctx context.Context, p *agent.Process) (*agent.Result, error) {
	r, err := p.Wait(ctx)
	var ee *agent.ExitError
	if err != nil && !errors.As(err, &ee) {
		err = m.failure(err)
	}
	return r, err
}

// Start runs a shell script in the background (servers, tcpdump).
func (m *Machine) Start(ctx context.Context, script string) (*agent.Process, error) {
	return m.StartCmd(ctx, agent.Cmd{Script: script})
}

// StartCmd is Start with a full command description.
func (m *Machine) StartCmd(ctx context.Context, cmd agent.Cmd) (*agent.Process, error) {
	if !m.Alive() {
		return nil, m.failure(fmt.Errorf("qemu is not running (%v)", m.exitErr))
	}
	p, err := m.agent.Start(ctx, cmd)
	if err != nil {
		return nil, m.failure(err)
	}
	return p, nil
}

// freeUDPPorts returns n distinct UDP ports on 127.0.0.1 that were free a
// moment ago.
func freeUDPPorts(n int) ([]int, error) {
	var conns []net.PacketConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var ports []int
	for range n {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
		ports = append(ports, c.LocalAddr().(*net.UDPAddr).Port)
	}
	return ports, nil
}
