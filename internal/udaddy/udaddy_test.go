package udaddy

import (
	"io"
	"testing"

	"github.com/go-rdma/rdmacm/rdma"
)

func TestParse(t *testing.T) {
	c, err := Parse(nil, io.Discard)
	if err != nil || c.Connections != 1 || c.Count != 10 || c.Size != 100 || c.PortSpace != rdma.PortSpaceUDP || c.Dst != "" || c.TOS != -1 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = Parse([]string{"-s", "192.0.2.2", "-b", "192.0.2.1", "-c", "3", "-C", "5", "-S", "64", "-p", "0x2", "-backend", "user"}, io.Discard)
	if err != nil || c.Dst != "192.0.2.2" || c.Src != "192.0.2.1" || c.Connections != 3 || c.Count != 5 || c.Size != 64 ||
		c.PortSpace != rdma.PortSpaceIPoIB || c.Backend != rdma.BackendUser {
		t.Fatalf("flags: %+v %v", c, err)
	}
	if _, err := c.opts(); err == nil {
		t.Error("IPoIB port space accepted")
	}
	if c, err = Parse([]string{"-S", "0"}, io.Discard); err != nil || c.Count != 0 {
		t.Errorf("-S 0 must send nothing (udaddy's create_message): %+v %v", c, err)
	}
	for _, bad := range [][]string{{"-c", "0"}, {"-C", "-1"}, {"-x"}, {"-t", "300"}, {"extra"}} {
		if _, err := Parse(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
