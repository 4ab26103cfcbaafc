package engine

import (
	"math/bits"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// rdma_cm constants (drivers/infiniband/core/cma.c).
const (
	defaultCMResponseTimeout = 20 // CMA_CM_RESPONSE_TIMEOUT
	defaultMaxCMRetries      = 15 // CMA_MAX_CM_RETRIES
	defaultMRAServiceTimeout = 24 // CMA_CM_MRA_SETTING without IB_CM_MRA_FLAG_DELAY
	// SIDR: cma_resolve_ib_udp uses 1 << (CMA_CM_RESPONSE_TIMEOUT - 8) ms.
	defaultSIDRTimeout = 4096 * time.Millisecond
)

// GSI constants: every CM MAD goes to QP 1.
const gsiQPN = 1

type remoteKey struct {
	guid uint64
	id   uint32
}

type sidrKey struct {
	gid rdma.GID
	lid uint16
	id  uint32
}

// Engine is one CA's connection manager. It is not safe for concurrent
// use: the caller serialises every call.
type Engine struct {
	cfg Config
	// ib has bit p set for each InfiniBand port p.
	ib [4]uint64
	// now is the time of the latest input, in nanoseconds since base (the
	// first input's time); deadlines use the same scale.
	now     int64
	base    time.Time
	hasBase bool
	// lastNow is the latest input's time as given: a caller that passes
	// one timestamp to several calls skips the conversion.
	lastNow time.Time
	// dlTime caches Deadline's conversion of the earliest timer; rootMoved
	// says the earliest timer may have changed since (timer.go). Most
	// inputs arm and disarm timers behind the earliest one.
	dlTime    time.Time
	rootMoved bool

	// conns holds every ID by local ID: connections, listeners, SIDR
	// exchanges, and destroyed IDs still in TimeWait.
	conns idTable
	// remoteIDs and remoteQPNs are the kernel's remote_id_table and
	// remote_qp_table: connections from REQ or REP receipt until TimeWait
	// or IDLE (duplicate and stale detection).
	remoteIDs  remoteTable
	remoteQPNs remoteTable
	listeners  map[uint64]*conn
	// sidrRemote is the kernel's remote_sidr_table: SIDR_REQs being
	// answered, keyed by request ID and sender.
	sidrRemote map[sidrKey]*conn

	timers timerHeap
	ready  Ready
	// evLevel is what Advance must zero in ready's events (evBare...).
	evLevel uint8
	arena   []byte
	msgs    []*[mad.MADSize]byte // free list of retransmit buffers
	// free holds released conn structs for reuse: a burst of TimeWait
	// exits is then reused by the next burst of connections instead of
	// being garbage. Tick trims it to the live count plus minFree.
	free []*conn

	stats Stats
	// scratch holds the message structs whose encoders take an interface
	// inside package mad (and would otherwise escape on every send).
	scratch struct {
		mra     mad.MRA
		rej     mad.REJ
		rtu     mad.RTU
		dreq    mad.DREQ
		drep    mad.DREP
		sidrREQ mad.SIDRREQ
		sidrREP mad.SIDRREP
	}
}

// Stats counts what the engine received, dropped or answered without an
// ID.
type Stats struct {
	// Received counts every MAD given to Receive.
	Received uint64
	// Malformed counts MADs Parse refused; the Bad* counters split it by
	// reason, and their sum is Malformed.
	Malformed uint64
	// BadLength: shorter than 256 bytes (mad.ErrShortBuffer).
	BadLength uint64
	// BadVersion: base version, management class or class version
	// (mad.ErrBadBaseVersion, ErrWrongClass, ErrBadClassVersion).
	BadVersion uint64
	// BadAttribute: unknown attribute or a method it does not allow
	// (mad.ErrUnknownAttribute, ErrBadMethod).
	BadAttribute uint64
	// BadField: an impossible field value (reserved transport type,
	// reserved MessageMRAed, and any other field error).
	BadField uint64
	// Dropped counts MADs that matched no ID or arrived in a state that
	// ignores them (the kernel's cm_rx_duplicates and silent drops).
	Dropped uint64
	// Retransmits counts MADs sent again after a timeout.
	Retransmits uint64
	// LAPDropped counts LAP and APR MADs, dropped as Linux does on RoCE.
	LAPDropped uint64
	// BacklogDrops counts REQs and SIDR_REQs dropped because their
	// listener's backlog (ListenParams.Backlog) or half-open bound
	// (Config.MaxHalfOpen) was full; Dropped counts them too.
	BacklogDrops uint64
	// Evicted counts half-open connections given up to admit a newer REQ
	// (Config.MaxHalfOpen).
	Evicted uint64
}

// New returns an engine. cfg.Source is required; a Config out of range
// fails with ErrInvalidArgument.
func New(cfg Config) (*Engine, error) {
	if cfg.Source == nil {
		return nil, errorf("Config.Source is nil: %w", ErrInvalidArgument)
	}
	if cfg.CMResponseTimeout == 0 {
		cfg.CMResponseTimeout = defaultCMResponseTimeout
	}
	if cfg.MaxCMRetries == 0 {
		cfg.MaxCMRetries = defaultMaxCMRetries
	}
	if cfg.MRAServiceTimeout == 0 {
		cfg.MRAServiceTimeout = defaultMRAServiceTimeout
	}
	if cfg.MaxHalfOpen == 0 {
		cfg.MaxHalfOpen = DefaultMaxHalfOpen
	}
	if cfg.CMResponseTimeout > mad.MaxTimeout || cfg.MRAServiceTimeout > mad.MaxTimeout ||
		cfg.MaxCMRetries > 15 || cfg.ACKDelay > mad.MaxTimeout {
		return nil, errorf("Config timeout or retry count out of range: %w", ErrInvalidArgument)
	}
	var ib [4]uint64
	for _, p := range cfg.InfiniBandPorts {
		if p == 0 {
			return nil, errorf("Config.InfiniBandPorts names port 0 (ports start at 1): %w", ErrInvalidArgument)
		}
		ib[p/64] |= 1 << (p % 64)
	}
	return &Engine{
		cfg:        cfg,
		ib:         ib,
		conns:      newIDTable(),
		remoteIDs:  newRemoteTable(false),
		remoteQPNs: newRemoteTable(true),
		listeners:  make(map[uint64]*conn),
		sidrRemote: make(map[sidrKey]*conn),
	}, nil
}

// infiniBand reports whether the local port's link layer is InfiniBand.
func (e *Engine) infiniBand(port uint8) bool { return e.ib[port/64]&(1<<(port%64)) != 0 }

// Stats returns the drop and retransmit counters.
func (e *Engine) Stats() Stats { return e.stats }

// Len returns how many IDs the engine holds, destroyed IDs in TimeWait
// included.
func (e *Engine) Len() int { return e.conns.len() }

// Timers returns how many timers are armed.
func (e *Engine) Timers() int { return len(e.timers) }

// State returns the state of an ID.
func (e *Engine) State(id ID) (State, bool) {
	c := e.conns.get(uint32(id))
	if c == nil || c.destroyed {
		return 0, false
	}
	return c.state, true
}

// HasReady reports whether Ready holds anything to act on.
func (e *Engine) HasReady() bool {
	r := &e.ready
	return len(r.Messages) > 0 || len(r.Events) > 0 || len(r.QPTransitions) > 0 || len(r.StateChanges) > 0
}

// Ready returns the outputs gathered since the last Advance and the next
// deadline. The pointer and every slice in it are valid until Advance;
// they are the engine's, to read, not to write.
func (e *Engine) Ready() *Ready {
	e.ready.Deadline = e.Deadline()
	return &e.ready
}

// Deadline returns when Tick must next be called, or the zero time.
func (e *Engine) Deadline() time.Time {
	if len(e.timers) == 0 {
		return time.Time{}
	}
	if e.rootMoved || e.dlTime.IsZero() {
		e.dlTime, e.rootMoved = e.base.Add(time.Duration(e.timers[0].deadline)), false
	}
	return e.dlTime
}

// Advance acknowledges the last Ready: its slices are reused.
func (e *Engine) Advance() {
	r := &e.ready
	// Zero what the events taken back set (newEvent wants zero slots;
	// this also drops references into the arena), and no more: a
	// TimeWait batch of thousands of 400-byte events is then not written
	// over a second time.
	switch e.evLevel {
	case evWide:
		clear(r.Events)
	case evHead:
		for i := range r.Events {
			r.Events[i].clearHead()
		}
	}
	e.evLevel = evBare
	r.Messages = r.Messages[:0]
	r.Events = r.Events[:0]
	r.QPTransitions = r.QPTransitions[:0]
	r.StateChanges = r.StateChanges[:0]
	e.arena = e.arena[:0]
}

func (e *Engine) setNow(now time.Time) {
	if e.hasBase && now == e.lastNow {
		return // the same instant as the previous input
	}
	e.lastNow = now
	if !e.hasBase {
		e.base, e.hasBase = now, true
	}
	if t := int64(now.Sub(e.base)); t > e.now {
		e.now = t
	}
}

// Tick fires every timer due at now: retransmissions, send timeouts and
// TimeWait exits.
func (e *Engine) Tick(now time.Time) {
	e.setNow(now)
	e.trimFree()
	for len(e.timers) > 0 && e.timers[0].deadline <= e.now {
		c := e.timers[0].c
		e.disarm(c)
		e.fire(c)
	}
}

// allocID draws a free local communication ID from the Source.
func (e *Engine) allocID() (uint32, error) {
	for range 64 {
		id := e.cfg.Source.CommID()
		if id == 0 {
			continue
		}
		if e.conns.get(id) == nil {
			return id, nil
		}
	}
	return 0, ErrNoResources // the caller names the operation
}

func (e *Engine) newConn(state State) (*conn, error) {
	id, err := e.allocID()
	if err != nil {
		return nil, err
	}
	var c *conn
	if n := len(e.free); n > 0 {
		c = e.free[n-1]
		e.free[n-1] = nil
		e.free = e.free[:n-1]
		// Zeroed here, not by release: a TimeWait batch releases
		// thousands of cold conns, which are then written once, when
		// reused, instead of twice.
		*c = conn{heapIdx: -1}
	} else {
		c = &conn{heapIdx: -1}
	}
	c.localID, c.state = id, state
	e.conns.put(c)
	return c, nil
}

// minFree is how many spare conn structs the free list may keep beyond
// one per live ID.
const minFree = 1024

// trimFree drops spare conn structs beyond the live IDs plus minFree, so
// the free list shrinks again after a burst. It runs before Tick's
// releases: those then refill it for the connections that follow.
func (e *Engine) trimFree() {
	if n := e.conns.len() + minFree; len(e.free) > n {
		clear(e.free[n:])
		e.free = e.free[:n]
	}
}

// release forgets c entirely; its ID becomes free.
func (e *Engine) release(c *conn) {
	e.cancelMsg(c)
	e.disarm(c)
	e.removeRemote(c)
	if c.sidrIn {
		if e.sidrRemote[c.sidrKey] == c {
			delete(e.sidrRemote, c.sidrKey)
		}
		c.sidrIn = false
	}
	if c.listen != nil && e.listeners[c.serviceID] == c {
		delete(e.listeners, c.serviceID)
	}
	e.leaveHalfOpen(c)
	if c.parent != 0 {
		if l := e.conns.get(c.parent); l != nil && l.listen != nil && c.pending {
			l.listen.pending--
		}
	}
	e.conns.remove(c.localID)
	// The pointers left (the rest are nil by now) go, so that a conn on
	// the free list holds nothing alive; newConn zeroes the rest.
	c.listen = nil
	if c.hasPD {
		c.privateData, c.hasPD = nil, false
	}
	e.free = append(e.free, c)
}

func (e *Engine) lookup(op string, id ID) (*conn, error) {
	c := e.conns.get(uint32(id))
	if c == nil || c.destroyed {
		return nil, opError(op, id, ErrUnknownID)
	}
	return c, nil
}

// acquire finds the connection a received MAD names, as the kernel's
// cm_acquire_id: by local ID, and the remote ID must match (0 while the
// peer's ID is unknown).
func (e *Engine) acquire(localID, remoteID uint32) *conn {
	c := e.conns.get(localID)
	if c == nil || c.destroyed || c.listen != nil || c.remoteID != remoteID {
		return nil
	}
	return c
}

func (e *Engine) setState(c *conn, s State) {
	if e.cfg.RecordStates && c.state != s {
		e.ready.StateChanges = append(e.ready.StateChanges, StateChange{ID: ID(c.localID), From: c.state, To: s})
	}
	if c.halfOpen {
		e.moveHalfOpen(c, s)
	}
	c.state = s
}

func (e *Engine) keep(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	start := len(e.arena)
	e.arena = append(e.arena, b...)
	return e.arena[start:len(e.arena):len(e.arena)]
}

func (e *Engine) event(ev Event) *Event {
	e.evLevel = evWide
	e.ready.Events = append(e.ready.Events, ev)
	return &e.ready.Events[len(e.ready.Events)-1]
}

// What Advance must zero in the events it takes back, by what their
// makers set.
const (
	evBare = iota // Type, ID and Context, which every new event sets again
	evHead        // the head fields (clearHead)
	evWide        // any field
)

// newEvent appends an event of type t for c and returns it for the
// caller to fill in place: an Event is 400 bytes, and a literal passed to
// event is built on the stack and copied. The slot is zero but for Type,
// ID and Context, which it sets: Advance zeroes what the events it takes
// back set, and growth zeroes new capacity. The caller may set the other
// head fields (clearHead); wideEvent and bareEvent are for more and for
// none.
func (e *Engine) newEvent(t EventType, c *conn) *Event {
	e.evLevel = max(e.evLevel, evHead)
	return e.bareEvent(t, c)
}

// bareEvent is newEvent for an event with nothing but its type, ID and
// context.
func (e *Engine) bareEvent(t EventType, c *conn) *Event {
	r := &e.ready
	n := len(r.Events)
	if n < cap(r.Events) {
		r.Events = r.Events[:n+1]
	} else {
		r.Events = append(r.Events, Event{})
	}
	ev := &r.Events[n]
	ev.Type, ev.ID, ev.Context = t, ID(c.localID), c.context
	return ev
}

// wideEvent is newEvent for an event whose fields beyond the head (Conn,
// SIDR) the caller sets: Advance then clears the events in full.
func (e *Engine) wideEvent(t EventType, c *conn) *Event {
	e.evLevel = evWide
	return e.bareEvent(t, c)
}

// clearHead zeroes the fields newEvent's callers may set.
func (ev *Event) clearHead() {
	ev.Type, ev.ID, ev.Listener, ev.Context = 0, 0, 0, 0
	ev.Reason, ev.MessageRejected = 0, 0
	ev.ARI, ev.PrivateData = nil, nil
	ev.ECE = ece.ECE{}
}

// out appends an outbound MAD and returns its buffer.
func (e *Engine) out(to Addr) *Outbound {
	if to.HopLimit == 0 && e.ib != [4]uint64{} && e.infiniBand(to.Port) {
		// No GRH (ib_init_ah_attr_from_path: hop limit 0), so no GID:
		// a transport adds a GRH for a GID, as umad's grh_present.
		to.GID = rdma.GID{}
	}
	r := &e.ready
	if n := len(r.Messages); n < cap(r.Messages) {
		r.Messages = r.Messages[:n+1]
		o := &r.Messages[n]
		o.To, o.Retry = to, 0
		return o
	}
	r.Messages = append(r.Messages, Outbound{To: to})
	return &r.Messages[len(r.Messages)-1]
}

func (e *Engine) allocMsg() *[mad.MADSize]byte {
	if n := len(e.msgs); n > 0 {
		m := e.msgs[n-1]
		e.msgs = e.msgs[:n-1]
		return m
	}
	return new([mad.MADSize]byte)
}

// convertTimeout is the kernel's cm_convert_to_ms: 4.096 µs × 2^t taken as
// 2^(t-8) ms.
func convertTimeout(t uint8) time.Duration {
	if t > 8 {
		return time.Millisecond << (t - 8)
	}
	return time.Millisecond
}

// seededSource is a deterministic Source: splitmix64 over a seed.
type seededSource struct {
	state   uint64
	tidHigh uint32
}

// NewSeededSource returns a deterministic Source for tests and
// simulations. Its TIDs carry tidHigh in the upper 32 bits and the ID in
// the lower 32 in the byte order a little-endian Linux kernel writes it
// (cm_form_tid stores the big-endian local ID as a host integer).
func NewSeededSource(seed uint64, tidHigh uint32) Source {
	return &seededSource{state: seed, tidHigh: tidHigh}
}

func (s *seededSource) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (s *seededSource) CommID() uint32 { return uint32(s.next()) }
func (s *seededSource) PSN() uint32    { return uint32(s.next()) & 0xffffff }
func (s *seededSource) TID(id uint32) uint64 {
	return KernelTID(s.tidHigh, id)
}

// KernelTID is the transaction ID Linux sends for a REQ, DREQ or SIDR_REQ
// of local ID id from a MAD agent whose hi_tid is high, on a little-endian
// host (cm_form_tid: the low half is the big-endian ID read as a host
// integer). Seen on the wire: ID 0x73057691, agent 2 → TID 0x291760573.
func KernelTID(high, id uint32) uint64 {
	return uint64(high)<<32 | uint64(bits.ReverseBytes32(id))
}

// RoCEFlowLabel is the flow label the rdma_cm puts in the path of a
// RoCEv2 connection without an IPv6 flow label (cma.c,
// cma_get_roce_udp_flow_label): (source port × 31 + destination port)
// masked to 20 bits. Seen on the wire: ports 33805 → 7174 give 6553.
func RoCEFlowLabel(srcPort, dstPort uint16) uint32 {
	return (uint32(srcPort)*31 + uint32(dstPort)) & 0xfffff
}
