package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/leakcheck"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// envRunMain makes the test binary act as verbs-pingpong itself, so the
// guest tests can run it on both guests without a separate build.
const envRunMain = "VERBS_PINGPONG_RUN_MAIN"

// envYield sets yieldPeriod in the test binary run as verbs-pingpong, to
// measure the loop without its yield (1h) against it.
const envYield = "VERBS_PINGPONG_YIELD"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		if d, err := time.ParseDuration(os.Getenv(envYield)); err == nil {
			yieldPeriod = d
		}
		os.Exit(runMain(append([]string{"verbs-pingpong"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	leakcheck.Main(m)
}

func TestParseOptionsLikeGetopt(t *testing.T) {
	for _, c := range []struct {
		args []string
		want func(*options)
	}{
		{nil, func(o *options) {}},
		{[]string{"-d", "rxe0", "-g", "1", "192.0.2.2"}, func(o *options) { o.device, o.gidIndex, o.serverName = "rxe0", 1, "192.0.2.2" }},
		{[]string{"-drxe0", "-g1", "-n", "0x10", "-s64"}, func(o *options) { o.device, o.gidIndex, o.iters, o.size = "rxe0", 1, 16, 64 }},
		{[]string{"--ib-dev=mlx5_0", "--port", "9999", "--chk", "--events", "host"}, func(o *options) {
			o.device, o.port, o.validate, o.events, o.serverName = "mlx5_0", 9999, true, true, "host"
		}},
		{[]string{"host", "-ec", "-m", "2048", "-r", "8", "-i", "2", "-l", "3"}, func(o *options) {
			o.serverName, o.events, o.validate, o.mtu, o.rxDepth, o.ibPort, o.sl = "host", true, true, rdma.MTU2048, 8, 2, 3
		}},
		{[]string{"--", "-weird-host"}, func(o *options) { o.serverName = "-weird-host" }},
		// ibv_srq_pingpong's protocol: 16 QPs unless -q says.
		{[]string{"-srq"}, func(o *options) { o.srq, o.numQP = true, 16 }},
		{[]string{"-d", "rxe0", "-q", "4", "-srq", "-r", "4", "host"}, func(o *options) {
			o.device, o.srq, o.numQP, o.rxDepth, o.serverName = "rxe0", true, 4, 4, "host"
		}},
		{[]string{"--srq", "--num-qp=256", "-eq2"}, func(o *options) { o.srq, o.numQP, o.events = true, 2, true }},
		{[]string{"-srq", "-q1", "-r1"}, func(o *options) { o.srq, o.numQP, o.rxDepth = true, 1, 1 }},
	} {
		got, err := parseOptions(c.args)
		want := defaultOptions()
		c.want(&want)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", c.args, got, err, want)
		}
	}
	for _, bad := range [][]string{
		{"-x"}, {"--nope"}, {"-p"}, {"-p", "70000"}, {"-m", "1000"}, {"-n", "ten"}, {"a", "b"}, {"-o"}, {"-r", "1"},
		// -q without -srq, -c with it (neither program has that pair),
		// and more QPs than srq_pingpong's exchange carries.
		{"-q", "4"}, {"-srq", "-c"}, {"-srq", "-q", "0"}, {"-srq", "-q", "257"}, {"-sr"},
	} {
		if _, err := parseOptions(bad); !errors.Is(err, errUsage) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
}

func TestWireFormat(t *testing.T) {
	gid := rdma.GID{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 1}
	d := dest{lid: 0x1a, qpn: 0x11, psn: 0xabcdef, gid: gid}
	b := d.encode()
	// sprintf("%04x:%06x:%06x:%s") with gid_to_wire_gid's 32 hex digits,
	// in a 52-byte buffer (sizeof the template, NUL included).
	want := "001a:000011:abcdef:00000000000000000000ffffc0000201\x00"
	if string(b) != want {
		t.Fatalf("encoded %q, want %q", b, want)
	}
	got, err := parseDest(b)
	if err != nil || got != d {
		t.Fatalf("parse: %+v %v", got, err)
	}
	// What a C peer sends parses the same way (sscanf %x accepts any
	// width).
	if got, err := parseDest([]byte("0000:0001c2:0f00ba:fe80000000000000505400fffe000001\x00")); err != nil || got.qpn != 0x1c2 || got.psn != 0xf00ba {
		t.Errorf("C message: %+v %v", got, err)
	}
	for _, bad := range []string{"", "0000:000011:abcdef", "zzzz:000011:abcdef:00000000000000000000ffffc0000201", "0000:000011:abcdef:00ff"} {
		if _, err := parseDest([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if gid.Addr().String() != "::ffff:192.0.2.1" {
		t.Errorf("inet_ntop form %q", gid.Addr().String())
	}
}

// TestExchangeOverTCP runs the client and server halves of the address
// exchange against each other on loopback: rc_pingpong's one message, and
// srq_pingpong's MAX_QP of which only the first few are QPs.
func TestExchangeOverTCP(t *testing.T) {
	for _, c := range []struct{ n, qps int }{{1, 1}, {maxQP, 3}} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		var srvDest, cliDest []dest
		for i := range c.qps {
			srvDest = append(srvDest, dest{qpn: 0x22 + uint32(i), psn: 0x2222, gid: rdma.GID{15: 2}})
			cliDest = append(cliDest, dest{qpn: 0x11 + uint32(i), psn: 0x1111, gid: rdma.GID{15: 1}})
		}
		type out struct {
			d   []dest
			err error
		}
		srv := make(chan out, 1)
		var connected []dest
		go func() {
			d, err := serverExchange(port, srvDest, c.n, func(d []dest) error { connected = d; return nil })
			srv <- out{d, err}
		}()
		var got []dest
		for i := 0; i < 100; i++ { // until the server listens
			if got, err = clientExchange("127.0.0.1", port, cliDest, c.n); err == nil {
				break
			}
		}
		// Past the QPs the C programs send zeroed entries.
		want := func(d []dest) []dest { return append(slices.Clone(d), make([]dest, c.n-c.qps)...) }
		if err != nil || !slices.Equal(got, want(srvDest)) {
			t.Fatalf("%d messages: client got %+v, %v", c.n, got, err)
		}
		s := <-srv
		if s.err != nil || !slices.Equal(s.d, want(cliDest)) || !slices.Equal(connected, want(cliDest)) {
			t.Fatalf("%d messages: server got %+v (connected %+v), %v", c.n, s.d, connected, s.err)
		}
	}
	if b := encodeAll(nil, 2); string(b[wireLen:]) != "0000:000000:000000:00000000000000000000000000000000\x00" {
		t.Errorf("zero entry %q", b[wireLen:])
	}
}

func TestBufferPattern(t *testing.T) {
	b := make([]byte, 3*pageSize+100)
	fillBuffer(b, true)
	if bad := checkBuffer(b); len(bad) != 0 {
		t.Fatalf("fresh pattern fails in pages %v", bad)
	}
	if b[0] != 0 || b[pageSize] != 0 || b[1] != 0x7b || b[len(b)-1] != 0x7b {
		t.Fatal("pattern")
	}
	b[2*pageSize+17] = 0
	b[3*pageSize] = 1
	if bad := checkBuffer(b); len(bad) != 2 || bad[0] != 2 || bad[1] != 3 {
		t.Errorf("corruption found in pages %v, want [2 3]", bad)
	}
	fillBuffer(b, false)
	if bad := checkBuffer(b); len(bad) != 4 {
		t.Errorf("unvalidated fill: bad pages %v", bad)
	}
}

func TestUsageAndMissingDevice(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := runMain([]string{"verbs-pingpong", "-x"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "--gid-idx") {
		t.Errorf("usage: rc %d\n%s", rc, errb.String())
	}
	errb.Reset()
	if rc := runMain([]string{"verbs-pingpong", "-srq", "-q", "8", "-r", "4"}, &out, &errb); rc != 1 ||
		!strings.Contains(errb.String(), "rx_depth 4 is too small for 8 QPs") || strings.Contains(errb.String(), "Usage") {
		t.Errorf("-q over -r: rc %d\n%s", rc, errb.String())
	}
	old := uverbs.DefaultDiscovery
	uverbs.DefaultDiscovery = uverbs.Discovery{SysRoot: t.TempDir(), DevRoot: t.TempDir()}
	defer func() { uverbs.DefaultDiscovery = old }()
	errb.Reset()
	if rc := runMain([]string{"verbs-pingpong", "-d", "rxe0"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "IB device rxe0 not found") {
		t.Errorf("no device: rc %d\n%s", rc, errb.String())
	}
}
