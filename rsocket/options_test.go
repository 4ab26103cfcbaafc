package rsocket

import (
	"context"
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm"
)

func TestOptionsConfig(t *testing.T) {
	c, err := (*Options)(nil).config()
	if err != nil || c.sbufSize != 1<<17 || c.rbufSize != 1<<17 || c.inline != 64 || c.sqSize != 384 || c.rqSize != 384 || c.keepAlive != 0 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	// SO_SNDBUF/SO_RCVBUF are doubled (rsetsockopt); queues clamp to
	// 16..0xFFFE (rs_set_qp_size); a negative inline size is none.
	c, err = (&Options{SendBuffer: 512 << 10, RecvBuffer: 100, InlineSize: -1, SQSize: 3, RQSize: 1 << 20}).config()
	if err != nil || c.sbufSize != 1<<20 || c.rbufSize != 2*sndLowat || c.inline != 0 || c.sqSize != 16 || c.rqSize != 0xFFFE {
		t.Fatalf("set: %+v %v", c, err)
	}
	// RDMA_IOMAPSIZE's one-byte scale: up to 128 as is, then steps of 256.
	for in, want := range map[int]int{0: 0, 1: 1, 128: 128, 129: 128, 300: 256, 1000: 768} {
		if c, err := (&Options{IOMapSize: in}).config(); err != nil || c.iomapEntries != want {
			t.Errorf("IOMapSize %d: %d entries, %v; want %d", in, c.iomapEntries, err, want)
		}
	}
	if c, err := (&Options{}).config(); err != nil || !c.netpoll {
		t.Errorf("default: not the netpoller's wait: %+v %v", c, err)
	}
	if c, err := (&Options{ThreadWait: true}).config(); err != nil || c.netpoll {
		t.Errorf("ThreadWait: %+v %v", c, err)
	}
	for _, o := range []Options{{SendBuffer: -1}, {RQSize: -1}, {KeepAlive: -1}, {InlineSize: 1 << 20}, {IOMapSize: -1}} {
		if _, err := o.config(); !errors.Is(err, rdmacm.ErrInvalidArgument) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestDialerNetwork(t *testing.T) {
	if _, err := (&Dialer{}).DialContext(context.Background(), "udp", "192.0.2.1:7471"); err == nil {
		t.Fatal("udp accepted")
	}
}
