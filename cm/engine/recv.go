package engine

import (
	"errors"
	"time"

	"github.com/go-rdma/rdmacm/mad"
)

// Receive processes one received CM MAD. from describes the sender (for a
// RoCE peer: its GID, the local port, GID index and P_Key index the MAD
// arrived on, and the packet's hop limit; on an InfiniBand port
// (Config.InfiniBandPorts) also the packet's source LID and SL, and a GID
// and hop limit only if it had a GRH). b must hold the 256-byte MAD; the
// engine does not keep it. Malformed MADs are counted and dropped.
func (e *Engine) Receive(now time.Time, from Addr, b []byte) {
	e.setNow(now)
	e.stats.Received++
	v, err := mad.Parse(b)
	if err != nil {
		e.countMalformed(err)
		return
	}
	switch v := v.(type) {
	case mad.REQView:
		e.recvREQ(from, v)
	case mad.MRAView:
		e.recvMRA(v)
	case mad.REJView:
		e.recvREJ(v)
	case mad.REPView:
		e.recvREP(from, v)
	case mad.RTUView:
		e.recvRTU(v)
	case mad.DREQView:
		e.recvDREQ(from, v)
	case mad.DREPView:
		e.recvDREP(v)
	case mad.SIDRREQView:
		e.recvSIDRREQ(from, v)
	case mad.SIDRREPView:
		e.recvSIDRREP(v)
	case mad.LAPView, mad.APRView:
		// cm_lap_handler and cm_apr_handler return -EINVAL on RoCE ports:
		// alternate paths are not supported there. The engine keeps no
		// alternate path on InfiniBand either (the rdma_cm never sets
		// one), so it drops them there too.
		e.stats.LAPDropped++
	default:
		// ClassPortInfo: Linux's CM registers only Send and drops it.
		e.stats.Dropped++
	}
}

func (e *Engine) countMalformed(err error) {
	e.stats.Malformed++
	switch {
	case errors.Is(err, mad.ErrShortBuffer):
		e.stats.BadLength++
	case errors.Is(err, mad.ErrBadBaseVersion), errors.Is(err, mad.ErrWrongClass), errors.Is(err, mad.ErrBadClassVersion):
		e.stats.BadVersion++
	case errors.Is(err, mad.ErrUnknownAttribute), errors.Is(err, mad.ErrBadMethod):
		e.stats.BadAttribute++
	default:
		e.stats.BadField++
	}
}
