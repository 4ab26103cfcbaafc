package main

// verbs-pingpong against the real ibv_rc_pingpong, in the vmtest guests
// (this binary runs in guest a, 192.0.2.1; guest b, 192.0.2.2, is the
// peer); bench_guest_test.go compares their speed:
//
//	go build -o /tmp/vmexec ./internal/vmtest/cmd/vmexec
//	CGO_ENABLED=0 go test -count=1 -v -exec /tmp/vmexec ./cmd/verbs-pingpong/

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/rdma"
)

// self is this test binary, run as verbs-pingpong (TestMain) on either
// guest; it lives in the share, so both see it at the same path.
func self(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gidIndexes caches gidIndex: the loop is slow in the TCG guests, and
// every test asks for the same two.
var gidIndexes sync.Map

// gidIndex finds the RoCE v2 GID holding addr in a guest's sysfs, by a
// shell loop in that guest.
func gidIndex(t testing.TB, m *guest.Machine, addr string) int {
	t.Helper()
	if n, ok := gidIndexes.Load(m.Name + " " + addr); ok {
		return n.(int)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := m.Run(ctx, `d=/sys/class/infiniband/rxe0/ports/1; for g in $d/gids/*; do i=${g##*/}; echo "$i $(cat $g) $(cat $d/gid_attrs/types/$i 2>/dev/null)"; done`)
	if err != nil {
		t.Fatalf("GID table of %s: %v", m.Name, err)
	}
	ip := net.ParseIP(addr).To16()
	for _, line := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[2]+" "+f[3] != "RoCE v2" {
			continue
		}
		g, err := rdma.ParseGID(f[1])
		if err == nil && net.IP(g[:]).Equal(ip) {
			n, _ := strconv.Atoi(f[0])
			gidIndexes.Store(m.Name+" "+addr, n)
			return n
		}
	}
	t.Fatalf("%s: no RoCE v2 GID for %s in\n%s", m.Name, addr, r.Stdout)
	return -1
}

// side is one end of a run: which program, its flags. srq picks
// ibv_srq_pingpong's protocol: that program, or verbs-pingpong -srq.
type side struct {
	goImpl bool
	flags  string
	srq    bool
}

func (s side) command(t testing.TB, server string) string {
	prog := cProg(s.srq)
	if s.goImpl {
		prog = envRunMain + "=1 " + self(t)
		if s.srq {
			prog += " -srq"
		}
	}
	return strings.TrimSpace(prog + " " + s.flags + " " + server)
}

func cProg(srq bool) string {
	if srq {
		return "ibv_srq_pingpong"
	}
	return "ibv_rc_pingpong"
}

func impl(goImpl bool) string {
	if goImpl {
		return "verbs-pingpong"
	}
	return "ibv_rc_pingpong"
}

var usecRe = regexp.MustCompile(`(\d+) iters in ([\d.]+) seconds = ([\d.]+) usec/iter`)

// pair runs srv on guest b and cli on guest a (connecting to b) and
// returns both outputs. The client retries while the server is not yet
// listening.
func pair(t testing.TB, srv, cli side, port int) (srvOut, cliOut string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	peer := guest.Peer()
	srvCmd := srv.command(t, "") + " -p " + strconv.Itoa(port)
	proc, err := peer.Start(ctx, srvCmd)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop(context.Background())
	// No waiting for the server's first line: ibv_rc_pingpong's stdout is
	// block-buffered on a pipe. The client retries instead.
	cliCmd := cli.command(t, peer.Addr) + " -p " + strconv.Itoa(port)
	var out []byte
	for try := 0; ; try++ {
		out, err = exec.CommandContext(ctx, "sh", "-c", cliCmd).CombinedOutput()
		if err == nil || try == 100 || !strings.Contains(strings.ToLower(string(out)), "couldn't connect") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		proc.Stop(context.Background())
		t.Fatalf("client %q: %v\n%s\nserver %q:\n%s%s", cliCmd, err, out, srvCmd, proc.Stdout(), proc.Stderr())
	}
	res, err := proc.Wait(ctx)
	if err != nil {
		t.Fatalf("server %q: %v\n%s%s\nclient:\n%s", srvCmd, err, proc.Stdout(), proc.Stderr(), out)
	}
	return res.Stdout + res.Stderr, string(out)
}

func checkRun(t *testing.T, who, out string, iters int) {
	t.Helper()
	m := usecRe.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(iters) {
		t.Errorf("%s: no summary for %d iters:\n%s", who, iters, out)
	}
	if !regexp.MustCompile(`\d+ bytes in [\d.]+ seconds = [\d.]+ Mbit/sec`).MatchString(out) {
		t.Errorf("%s: no bytes line:\n%s", who, out)
	}
	if strings.Contains(out, "invalid data") {
		t.Errorf("%s: data did not validate:\n%s", who, out)
	}
}

// TestGuestAgainstIbvRcPingpong runs verbs-pingpong against the C program
// in both directions with the received data validated (-c), in poll and
// event mode, and against itself.
func TestGuestAgainstIbvRcPingpong(t *testing.T) {
	guest.Require(t)
	ga := gidIndex(t, guest.Local(), guest.Local().Addr)
	gb := gidIndex(t, guest.Peer(), guest.Peer().Addr)
	port := 18515
	for _, c := range []struct {
		name         string
		srvGo, cliGo bool
		extra        string
	}{
		{"go-server/c-client", true, false, ""},
		{"c-server/go-client", false, true, ""},
		{"go-server/c-client/events", true, false, " -e"},
		{"c-server/go-client/events", false, true, " -e"},
		{"go-server/go-client", true, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, size := range []int{64, 4096, 10000} {
				iters := 200
				common := fmt.Sprintf("-d rxe0 -n %d -s %d -c%s", iters, size, c.extra)
				port++
				srvOut, cliOut := pair(t,
					side{c.srvGo, fmt.Sprintf("%s -g %d", common, gb), false},
					side{c.cliGo, fmt.Sprintf("%s -g %d", common, ga), false}, port)
				checkRun(t, impl(c.srvGo)+" server", srvOut, iters)
				checkRun(t, impl(c.cliGo)+" client", cliOut, iters)
				if size == 4096 {
					t.Logf("size %d\nserver (%s):\n%sclient (%s):\n%s", size, impl(c.srvGo), srvOut, impl(c.cliGo), cliOut)
				}
			}
		})
	}
}

var (
	localQPNRe  = regexp.MustCompile(`local address:  LID 0x[0-9a-f]+, QPN 0x([0-9a-f]+),`)
	remoteQPNRe = regexp.MustCompile(`remote address: LID 0x[0-9a-f]+, QPN 0x([0-9a-f]+),`)
)

func qpns(re *regexp.Regexp, out string) []string {
	var v []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		v = append(v, m[1])
	}
	return v
}

// TestGuestAgainstIbvSrqPingpong runs verbs-pingpong -srq against
// rdma-core's ibv_srq_pingpong in both roles, in poll and event mode: nQP
// RC QPs a side, every one receiving from its side's one SRQ.
// Besides the summaries, each side's remote QPNs must be the other's
// local ones, in order: the MAX_QP-entry exchange paired the QPs.
func TestGuestAgainstIbvSrqPingpong(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := guest.Peer().Run(ctx, "command -v ibv_srq_pingpong"); err != nil {
		t.Fatalf("ibv_srq_pingpong is not in the guest image (rdma-core's ibverbs-utils): %v", err)
	}
	ga := gidIndex(t, guest.Local(), guest.Local().Addr)
	gb := gidIndex(t, guest.Peer(), guest.Peer().Addr)
	const nQP, iters = 8, 400
	port := 18600
	for _, c := range []struct {
		name         string
		srvGo, cliGo bool
		extra        string
	}{
		{"go-server/c-client", true, false, ""},
		{"c-server/go-client", false, true, ""},
		{"go-server/c-client/events", true, false, " -e"},
		{"c-server/go-client/events", false, true, " -e"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// An rx depth of 2*nQP makes the SRQ refill often, with receives
			// of several QPs in flight at once.
			common := fmt.Sprintf("-d rxe0 -q %d -r %d -n %d -s 1000%s", nQP, 2*nQP, iters, c.extra)
			port++
			srvOut, cliOut := pair(t,
				side{c.srvGo, fmt.Sprintf("%s -g %d", common, gb), true},
				side{c.cliGo, fmt.Sprintf("%s -g %d", common, ga), true}, port)
			srvName, cliName := impl(c.srvGo)+" -srq server", impl(c.cliGo)+" -srq client"
			if !c.srvGo {
				srvName = "ibv_srq_pingpong server"
			}
			if !c.cliGo {
				cliName = "ibv_srq_pingpong client"
			}
			checkRun(t, srvName, srvOut, iters)
			checkRun(t, cliName, cliOut, iters)
			sl, sr, cl, cr := qpns(localQPNRe, srvOut), qpns(remoteQPNRe, srvOut), qpns(localQPNRe, cliOut), qpns(remoteQPNRe, cliOut)
			if len(sl) != nQP || !slices.Equal(sl, cr) || !slices.Equal(cl, sr) {
				t.Errorf("QPs not paired: server local %v remote %v; client local %v remote %v", sl, sr, cl, cr)
			}
			t.Logf("server (%s):\n%sclient (%s):\n%s", srvName, srvOut, cliName, cliOut)
		})
	}
}
