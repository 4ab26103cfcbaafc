package cm

import "encoding/binary"

// ID options (rdma_set_option, level RDMA_OPTION_ID). Each must be set
// before the step it influences: TOS and ACK timeout before ResolveRoute
// (RoCE) or Connect, ReuseAddr and AFOnly before Bind or Listen.
const (
	optLevelID    = 0
	optTOS        = 0
	optReuseAddr  = 1
	optAFOnly     = 2
	optAckTimeout = 3
)

// SetTOS sets the type of service (the IP TOS byte on RoCEv2, the traffic
// class on IB) of the ID's connection (RDMA_OPTION_ID_TOS).
func (id *ID) SetTOS(tos uint8) error {
	return id.setOption("SetTOS", optLevelID, optTOS, []byte{tos})
}

// SetAckTimeout sets the QP local ACK timeout the CM programs, as the
// exponent of 4.096 µs × 2^timeout (RDMA_OPTION_ID_ACK_TIMEOUT).
func (id *ID) SetAckTimeout(timeout uint8) error {
	return id.setOption("SetAckTimeout", optLevelID, optAckTimeout, []byte{timeout})
}

// SetReuseAddr allows binding to an address in use
// (RDMA_OPTION_ID_REUSEADDR).
func (id *ID) SetReuseAddr(on bool) error {
	// rdma_set_reuseaddr: on in any state but LISTEN, off only when idle.
	ok := func(s *idState) bool { return s.in(StateIdle) || on && !s.in(StateListen) }
	return id.setCheckedOption("SetReuseAddr", optReuseAddr, intOpt(on), ok)
}

// SetAFOnly restricts an IPv6 listener to IPv6 (RDMA_OPTION_ID_AFONLY).
func (id *ID) SetAFOnly(on bool) error {
	// rdma_set_afonly: only while idle or bound.
	ok := func(s *idState) bool { return s.in(StateIdle, StateAddrBound) }
	return id.setCheckedOption("SetAFOnly", optAFOnly, intOpt(on), ok)
}

// setCheckedOption sets an option the rdma_cm takes only in the states ok
// accepts; elsewhere it is refused with a *StateError before any syscall.
func (id *ID) setCheckedOption(op string, name uint32, val []byte, ok func(*idState) bool) error {
	return id.do(op, func(s *idState) error {
		if !ok(s) {
			return s.fail(op)
		}
		return nil
	}, func() error { return id.ch.b.setOption(id.handle, optLevelID, name, val) })
}

func intOpt(on bool) []byte {
	b := make([]byte, 4)
	if on {
		binary.NativeEndian.PutUint32(b, 1)
	}
	return b
}

func (id *ID) setOption(op string, level, name uint32, val []byte) error {
	return id.do(op, nil, func() error { return id.ch.b.setOption(id.handle, level, name, val) })
}
