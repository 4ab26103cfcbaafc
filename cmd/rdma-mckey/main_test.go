package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
)

func TestParseArgsLikeMckey(t *testing.T) {
	c, err := parseArgs([]string{"-m", "239.1.2.3", "-s", "-b", "192.0.2.1", "-c", "2", "-C", "5", "-S", "64", "-p", "0x2"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.dst != "239.1.2.3" || !c.sender || c.src != "192.0.2.1" || c.ids != 2 || c.count != 5 || c.size != 64 || c.portSpace != rdma.PortSpaceIPoIB {
		t.Errorf("parsed %+v", c)
	}
	d, err := parseArgs([]string{"-m", "239.1.2.3"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	// mckey's defaults: one ID, 10 messages of 100 bytes, RDMA_PS_UDP, 3 s.
	if d.sender || d.ids != 1 || d.count != 10 || d.size != 100 || d.portSpace != rdma.PortSpaceUDP || d.settle != 3*time.Second {
		t.Errorf("defaults %+v", d)
	}
	if z, _ := parseArgs([]string{"-m", "239.1.2.3", "-S", "0"}, &bytes.Buffer{}); z == nil || z.count != 0 {
		t.Errorf("-S 0 keeps messages: %+v", z)
	}
	for _, bad := range [][]string{nil, {"-m", "239.1.2.3", "-p", "udp"}, {"-m", "239.1.2.3", "-c", "0"}, {"-m", "239.1.2.3", "extra"}} {
		if _, err := parseArgs(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := parseArgs([]string{"-h"}, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}
