package rsocket

import (
	"fmt"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/rdma"
)

// config is Options with rsocket.c's defaults and limits applied
// (rs_alloc, rsetsockopt, rs_set_qp_size).
type config struct {
	backend        rdma.Backend
	sbufSize       uint32
	rbufSize       uint32
	inline         uint32
	sqSize, rqSize uint16
	keepAlive      int64 // nanoseconds; 0: off
	iomapEntries   int
	pollTime       time.Duration
	netpoll        bool // not ThreadWait
}

func (o *Options) config() (config, error) {
	if o == nil {
		o = &Options{}
	}
	c := config{backend: o.Backend, sbufSize: defaultBufSize, rbufSize: defaultBufSize,
		inline: defaultInline, sqSize: defaultQPSize, rqSize: defaultQPSize, keepAlive: int64(o.KeepAlive),
		netpoll: !o.ThreadWait}
	const maxBuf = 1 << 28
	switch {
	case o.SendBuffer < 0 || o.SendBuffer > maxBuf, o.RecvBuffer < 0 || o.RecvBuffer > maxBuf:
		return config{}, fmt.Errorf("rsocket: buffer sizes %d, %d out of range 0..%d: %w", o.SendBuffer, o.RecvBuffer, maxBuf, rdmacm.ErrInvalidArgument)
	case o.IOMapSize < 0 || o.IOMapSize > 127<<8:
		return config{}, fmt.Errorf("rsocket: IOMapSize %d out of range 0..%d: %w", o.IOMapSize, 127<<8, rdmacm.ErrInvalidArgument)
	case o.SQSize < 0 || o.RQSize < 0 || o.InlineSize > 1<<16 || o.KeepAlive < 0:
		return config{}, fmt.Errorf("rsocket: negative queue size or keepalive, or inline over 64 KiB: %w", rdmacm.ErrInvalidArgument)
	}
	// SO_SNDBUF and SO_RCVBUF are doubled, as Linux does (rsetsockopt).
	if o.SendBuffer > 0 {
		c.sbufSize = uint32(o.SendBuffer) << 1
		if c.sbufSize < sndLowat {
			c.sbufSize = sndLowat << 1
		}
	}
	if o.RecvBuffer > 0 {
		c.rbufSize = uint32(o.RecvBuffer) << 1
	}
	// The receive buffer goes out in halves of at least one RS_SNDLOWAT.
	c.rbufSize = max(c.rbufSize, 2*sndLowat) &^ 1
	switch {
	case o.InlineSize < 0:
		c.inline = 0
	case o.InlineSize > 0:
		c.inline = uint32(o.InlineSize)
	}
	size := func(v int) uint16 {
		if v == 0 {
			return defaultQPSize
		}
		return uint16(min(max(v, qpMinSize), qpMaxSize))
	}
	c.sqSize, c.rqSize = size(o.SQSize), size(o.RQSize)
	c.iomapEntries = scaleToValue(valueToScale(o.IOMapSize, 8), 8) // rs_configure's rounding
	switch {
	case o.PollTime == 0:
		c.pollTime = defaultPollTime
	case o.PollTime > 0:
		c.pollTime = o.PollTime
	}
	return c, nil
}
