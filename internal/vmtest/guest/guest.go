// Package guest is for tests that run inside a vmtest guest, started by the
// go test -exec runner (internal/vmtest/cmd/vmexec):
//
//	func TestSomething(t *testing.T) {
//		guest.Require(t) // skips on the host
//		ctx := context.Background()
//		srv, err := guest.Peer().Start(ctx, "rping -s -a "+guest.Peer().Addr+" -C 1")
//		...
//		res, err := guest.Local().Run(ctx, "rping -c -a "+guest.Peer().Addr+" -C 1")
//	}
//
// The test binary runs in guest a (192.0.2.1) as root; guest b (192.0.2.2)
// is the peer on the same soft-RoCE wire. Commands on either guest run
// through its vmtest agent, each with a timeout (the context's deadline, or
// agent.DefaultTimeout).
package guest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

// Environment set by vmexec for the test binary.
const (
	EnvGuest     = "VMTEST_GUEST"      // this guest's name: "a"
	EnvPeer      = "VMTEST_PEER"       // the peer's name: "b"
	EnvLocalAddr = "VMTEST_LOCAL_ADDR" // 192.0.2.1
	EnvPeerAddr  = "VMTEST_PEER_ADDR"  // 192.0.2.2
	EnvShare     = "VMTEST_SHARE"      // the shared folder, /host
	EnvOutDir    = "VMTEST_OUT_DIR"    // results out: copied to the host's $VMTEST_OUT
	EnvNoModules = "VMTEST_NOMODS"     // modules this guest did not load, comma-separated
	EnvPeerNoMod = "VMTEST_PEER_NOMODS"
)

type (
	// Result is how a command ended, with its output.
	Result = agent.Result
	// Process is a command running in the background.
	Process = agent.Process
	// Cmd describes a command in full (argv, env, dir, timeout).
	Cmd = agent.Cmd
	// ExitError is the error for a command that did not exit 0.
	ExitError = agent.ExitError
)

// InGuest reports whether this process runs inside a vmtest guest.
func InGuest() bool { return os.Getenv(EnvGuest) != "" }

// Require skips the test outside a guest. With VMTEST=1 and CI=true it
// fails instead: then the test was meant to run in a guest and did not.
func Require(t testing.TB) {
	t.Helper()
	if InGuest() {
		return
	}
	if os.Getenv("VMTEST") == "1" && os.Getenv("CI") == "true" {
		t.Fatal("test needs a vmtest guest: run it with go test -exec vmexec (make vmtest)")
	}
	t.Skip("runs inside a vmtest guest only: go test -exec vmexec (make vmtest)")
}

// Machine is a guest that runs commands.
type Machine struct {
	Name    string
	Addr    string
	NoMods  []string // modules this guest did not load
	client  *agent.Client
	isLocal bool
}

func machine(nameEnv, addrEnv, nomodsEnv string, local bool) *Machine {
	name := os.Getenv(nameEnv)
	var nomods []string
	if s := os.Getenv(nomodsEnv); s != "" {
		nomods = strings.Split(s, ",")
	}
	return &Machine{
		Name: name, Addr: os.Getenv(addrEnv), NoMods: nomods, isLocal: local,
		client: &agent.Client{Name: name, Dir: filepath.Join(ShareDir(), ".vmtest", name)},
	}
}

// Local is the guest this test runs in.
func Local() *Machine { return machine(EnvGuest, EnvLocalAddr, EnvNoModules, true) }

// Peer is the other guest on the wire.
func Peer() *Machine { return machine(EnvPeer, EnvPeerAddr, EnvPeerNoMod, false) }

// ShareDir is the folder shared with the host and the peer.
func ShareDir() string {
	if d := os.Getenv(EnvShare); d != "" {
		return d
	}
	return "/host"
}

// OutDir is a folder for results that the host keeps (vmexec copies it to
// $VMTEST_OUT); it exists when the test starts.
func OutDir() string {
	if d := os.Getenv(EnvOutDir); d != "" {
		return d
	}
	return filepath.Join(ShareDir(), "out")
}

// Run runs a shell script on the machine and waits for it. A non-zero exit
// is an *ExitError (the Result is returned too).
func (m *Machine) Run(ctx context.Context, script string) (*Result, error) {
	return m.client.Run(ctx, agent.Cmd{Script: script})
}

// RunCmd is Run with a full command description.
func (m *Machine) RunCmd(ctx context.Context, cmd Cmd) (*Result, error) {
	return m.client.Run(ctx, cmd)
}

// Start runs a shell script in the background; Stop or Wait for it.
func (m *Machine) Start(ctx context.Context, script string) (*Process, error) {
	return m.client.Start(ctx, agent.Cmd{Script: script})
}

// StartCmd is Start with a full command description.
func (m *Machine) StartCmd(ctx context.Context, cmd Cmd) (*Process, error) {
	return m.client.Start(ctx, cmd)
}

// HasModule reports whether the kernel module is loaded on the machine.
func (m *Machine) HasModule(ctx context.Context, name string) (bool, error) {
	r, err := m.Run(ctx, "cut -d' ' -f1 /proc/modules")
	if err != nil {
		return false, err
	}
	for _, f := range strings.Fields(r.Stdout) {
		if f == name {
			return true, nil
		}
	}
	return false, nil
}

// CMFilter is the tcpdump filter for CM MADs (RoCEv2 to QP1).
const CMFilter = "udp dst port 4791 and udp[12:4] & 0x00ffffff = 1"

// StartCapture runs tcpdump on the machine's eth0 with filter (CMFilter if
// empty), writing the pcap to OutDir()/name. Stop the returned process
// (SIGTERM) once the last packets have had a moment to land.
func (m *Machine) StartCapture(ctx context.Context, name, filter string) (*Process, error) {
	if filter == "" {
		filter = CMFilter
	}
	p, err := m.client.Start(ctx, agent.Cmd{Args: []string{
		"tcpdump", "--immediate-mode", "-i", "eth0", "-n", "-U", "-s", "512", "-w", filepath.Join(OutDir(), name), filter,
	}})
	if err != nil {
		return nil, err
	}
	if err := p.WaitOutput(ctx, "listening on"); err != nil {
		p.Stop(context.Background())
		return nil, err
	}
	return p, nil
}

// CaptureStdout runs f with os.Stdout redirected to a pipe and returns
// what f printed (and logs it), for running Example functions in a guest
// and checking their output.
func CaptureStdout(t testing.TB, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = stdout }()
	f()
	w.Close()
	os.Stdout = stdout
	out := <-done
	r.Close()
	t.Logf("output:\n%s", out)
	return out
}
