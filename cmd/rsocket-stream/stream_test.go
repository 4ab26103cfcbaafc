package main

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

func TestParseArgs(t *testing.T) {
	c, err := parseArgs(strings.Fields("-s 192.0.2.2 -S 4096 -C 100 -I 2 -T b -T v -p 7000 -B 65536 -i 32 -k 5 -backend user"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.server != "192.0.2.2" || c.size != 4096 || c.count != 100 || c.iterations != 2 || !c.blocking || !c.verify ||
		c.port != "7000" || c.bufferSize != 65536 || c.inlineSize != 32 || c.keepalive != 5 || c.backend != rdma.BackendUser || !c.custom || c.tcp {
		t.Errorf("parsed %+v", c)
	}
	c, err = parseArgs(strings.Fields("-S all -T socket -T nonblocking -T fork -T a -T r -f ip"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.all || c.custom || !c.tcp || c.blocking || len(c.notes) != 4 {
		t.Errorf("parsed %+v", c)
	}
	if c, err = parseArgs(strings.Fields("-s 192.0.2.2 -b 192.0.2.1"), io.Discard); err != nil || len(c.notes) != 1 {
		t.Errorf("-b on an rsocket client: %v, notes %q", err, c.notes)
	}
	for _, bad := range []string{"-T x", "-S big", "-C -1", "-backend ib", "extra", "-S 0"} {
		if _, err := parseArgs(strings.Fields(bad), io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPatternContinuesAndCatchesCorruption(t *testing.T) {
	var tx, rx pattern
	a, b := make([]byte, 300), make([]byte, 16)
	tx.format(a)
	tx.format(b)
	if err := rx.check(a); err != nil {
		t.Fatal(err)
	}
	if b[0] != byte(300%256) {
		t.Fatalf("the pattern restarted: %d", b[0])
	}
	b[5] ^= 1
	err := rx.check(b)
	if err == nil || err.Error() != "data verification failed byte 305" {
		t.Fatalf("corruption: %v", err)
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestTCPRoundTrip runs both roles over plain TCP (-T s) on loopback with
// verification, blocking and not.
func TestTCPRoundTrip(t *testing.T) {
	for _, mode := range []string{"b", "n"} {
		t.Run(mode, func(t *testing.T) {
			port := freePort(t)
			args := "-S 5000 -C 7 -I 3 -T s -T v -T " + mode + " -b 127.0.0.1 -p " + port
			sc, err := parseArgs(strings.Fields(args), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cc, err := parseArgs(strings.Fields("-s 127.0.0.1 "+args), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var sout, cout bytes.Buffer
			var serr error
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); serr = run(sc, &sout) }()
			var cerr error
			for range 50 {
				if cerr = run(cc, &cout); cerr == nil || !strings.Contains(cerr.Error(), "refused") {
					break
				}
				cout.Reset()
			}
			wg.Wait()
			if cerr != nil || serr != nil {
				t.Fatalf("client %v, server %v", cerr, serr)
			}
			for _, out := range []string{sout.String(), cout.String()} {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines) != 2 || !strings.HasPrefix(lines[1], "custom    4.8k    7       3       205k    ") {
					t.Errorf("output:\n%s", out)
				}
			}
		})
	}
}
