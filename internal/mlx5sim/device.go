//go:build linux

package mlx5sim

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Device is the simulated ConnectX: a scripted mlx5_ib kernel driver that
// answers the uverbs commands, mmaps and CQE injections of one or more
// processes and records everything in a trace. All methods are safe for
// concurrent use; calls are serialised.
type Device struct {
	mu sync.Mutex
	p  Profile

	trace []string

	// Fences reported by c/fenceplugin.c (fence.go).
	fenceFilter FenceFilter
	fenceLog    []string

	ctxs map[int]*uctx // by uverbs fd

	// Deterministic firmware numbering, shared by all contexts.
	nextQPN, nextCQN, nextPDN, nextMkey, nextUARPage uint32
	nextSRQN                                         uint32
	// Ordinals for names in the trace, by kind.
	seq map[string]int

	regions []*region
	dbPages map[uint64]int // page address -> ordinal (dbpageK)
	objs    []*object      // live objects with a trace name, for lookup
	chans   map[int]string // completion channel fd -> name

	// newFD makes an fd to hand out (async event file, completion
	// channel) when the caller passed no spare fd: in-process, an
	// eventfd. Nil: fail with EMFILE.
	newFD func() (int, error)
}

// New returns a device with profile p.
func New(p Profile) *Device {
	if p.DevID == 0 {
		p.DevID = 0x1017
	}
	if p.PageSize == 0 {
		p.PageSize = 4096
	}
	return &Device{
		p:           p,
		ctxs:        map[int]*uctx{},
		nextQPN:     0x000100,
		nextCQN:     0x000400,
		nextPDN:     0x000010,
		nextMkey:    0x00010000,
		nextUARPage: 0x000020,
		nextSRQN:    0x000800,
		seq:         map[string]int{},
		dbPages:     map[uint64]int{},
		chans:       map[int]string{},
	}
}

// Profile returns the device's profile.
func (d *Device) Profile() Profile { return d.p }

// uctx is one open uverbs fd and its ucontext (struct ib_uverbs_file with
// the mlx5_ib_ucontext).
type uctx struct {
	fd      int
	name    string
	ready   bool // GET_CONTEXT succeeded
	handles map[uint32]*object

	cqeVersion  uint8
	dynUAR      bool
	staticPages int   // bfregi->num_static_sys_pages
	lowLat      int   // num_low_latency_bfregs
	bfregCount  []int // bfregi->count, static bfregs
	mmapEntries map[int]*object
	maps        map[uint64]*mapping
}

type mapping struct {
	addr, length uint64
	name         string
	reg          *region
	uar          *object // dynamic UAR object, or nil
}

type object struct {
	kind   string // pd, mr, cq, qp, ah, uar, channel
	name   string // pd0, cq1 ...
	alias  string // the scenario's name, learnt from snapshot labels
	handle uint32
	ctx    *uctx
	refs   int // objects using this one (kernel usecnt)
	pd     *object

	// cq
	cqBuf, cqDB uint64
	ncqe        int
	cqeSize     int
	cqn         uint32
	prod        uint32 // producer index of injected CQEs
	channel     string
	cqEv        cqEvents

	// qp
	qpn, uidx    uint32
	qpBuf, qpDB  uint64
	qpSize       int
	qpType       uint8
	qpState      uint8
	bfregn       int
	scq, rcq     *object
	sqCnt, rqCnt uint32
	rqShift      uint32
	srqObj       *object // the SRQ the QP receives from, or nil

	// srq
	srq *srqState

	// mr
	start, length uint64
	lkey          uint32

	// pd
	pdn uint32

	qpAttr qpAttr

	// uar
	pageID   uint32
	mmapIdx  int
	nc       bool
	mapped   int
	released bool

	regs []*region
}

// region is device-visible user memory shown in snapshots.
type region struct {
	name string
	addr uint64
	size int
	last []byte // contents at the previous snapshot; nil before the first

	// watch: a doorbell record or a UAR/BlueFlame page, also shown by
	// Fence. fenceLast is its contents at the previous fence or snapshot
	// (Fence compares against it and moves it; Snapshot moves it too but
	// never reads it, so snapshots do not depend on fences).
	watch     bool
	fenceLast []byte
}

func (d *Device) next(kind string) string {
	n := d.seq[kind]
	d.seq[kind] = n + 1
	return fmt.Sprintf("%s%d", kind, n)
}

func (d *Device) peek(kind string) string { return fmt.Sprintf("%s%d", kind, d.seq[kind]) }

func (d *Device) emit(line string) { d.trace = append(d.trace, line) }

// Record puts a line (from a scenario interpreter) in the trace.
func (d *Device) Record(line string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.emit("rec " + strings.TrimRight(line, "\n"))
}

// Trace returns a copy of the trace so far.
func (d *Device) Trace() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.trace...)
}

func (d *Device) addRegion(o *object, name string, addr uint64, size int) *region {
	if size <= 0 || addr == 0 {
		return nil
	}
	r := &region{name: name, addr: addr, size: size}
	d.regions = append(d.regions, r)
	if o != nil {
		o.regs = append(o.regs, r)
	}
	return r
}

// addWatched is addRegion for a doorbell record or a UAR/BlueFlame page:
// memory whose stores Fence shows relative to the barriers.
func (d *Device) addWatched(o *object, name string, addr uint64, size int) *region {
	r := d.addRegion(o, name, addr, size)
	if r != nil {
		r.watch = true
	}
	return r
}

func (d *Device) dropRegion(r *region) {
	for i, x := range d.regions {
		if x == r {
			d.regions = append(d.regions[:i], d.regions[i+1:]...)
			return
		}
	}
}

func (d *Device) dropObject(o *object) {
	for _, r := range o.regs {
		d.dropRegion(r)
	}
	o.regs = nil
	for i, x := range d.objs {
		if x == o {
			d.objs = append(d.objs[:i], d.objs[i+1:]...)
			break
		}
	}
	if o.ctx != nil {
		delete(o.ctx.handles, o.handle)
	}
}

// dbName names a doorbell record address: dbpageK+0xOFF, K the ordinal of
// the distinct page (in order of first use), as libmlx5's dbrec.c hands
// records out of pages.
func (d *Device) dbName(addr uint64) string {
	if addr == 0 {
		return "0"
	}
	page := addr &^ 0xfff
	k, ok := d.dbPages[page]
	if !ok {
		k = len(d.dbPages)
		d.dbPages[page] = k
	}
	return fmt.Sprintf("dbpage%d+%#x", k, addr&0xfff)
}

// ptrName names a user address by the region or MR it lies in.
func (d *Device) ptrName(addr uint64) string {
	if addr == 0 {
		return "0"
	}
	for _, r := range d.regions {
		if addr >= r.addr && addr < r.addr+uint64(r.size) {
			if addr == r.addr {
				return r.name
			}
			return fmt.Sprintf("%s+%#x", r.name, addr-r.addr)
		}
	}
	for _, o := range d.objs {
		if o.kind == "mr" && addr >= o.start && addr < o.start+o.length {
			if addr == o.start {
				return o.name
			}
			return fmt.Sprintf("%s+%#x", o.name, addr-o.start)
		}
	}
	return fmt.Sprintf("?+%#x", addr&0xfff)
}

// lookup finds a live object by trace name or scenario alias.
func (d *Device) lookup(kind, name string) *object {
	for _, o := range d.objs {
		if o.kind == kind && (o.name == name || o.alias == name) {
			return o
		}
	}
	return nil
}

// Snapshot records the device-visible memory (CQ and QP buffers, doorbell
// records, mapped UAR pages) that changed since the previous snapshot:
// a "snap LABEL" line, one line per changed 64-byte chunk, and the hash of
// everything unchanged. The label's scenario line names the object the
// last command created (e.g. "L3: cq c1 16" names the newest CQ c1), so
// that `cqe` lines can use the scenario's names.
func (d *Device) Snapshot(mem Mem, label string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bindAlias(label)
	d.emit("snap " + label)
	h := fnv.New64a()
	unchanged := 0
	for _, r := range d.regions {
		cur := make([]byte, r.size)
		if err := mem.Read(r.addr, cur); err != nil {
			d.emit(fmt.Sprintf("  %s: unreadable (%v)", r.name, err))
			r.last, r.fenceLast = nil, nil
			continue
		}
		changed := d.emitChanged(r, r.last, cur)
		if r.last == nil && !changed {
			d.emit(fmt.Sprintf("  %s: zero (%d bytes)", r.name, r.size))
			changed = true
		}
		if !changed {
			unchanged++
			h.Write([]byte(r.name))
			h.Write(cur)
		}
		r.last = cur
		if r.watch {
			r.fenceLast = cur
		}
	}
	d.emit(fmt.Sprintf("  unchanged %d regions hash=%016x", unchanged, h.Sum64()))
}

// emitChanged emits one line per 64-byte chunk of r that differs between
// base and cur (with no base: per chunk that is not all zero), and
// reports whether it emitted any.
func (d *Device) emitChanged(r *region, base, cur []byte) bool {
	changed := false
	for off := 0; off < r.size; off += 64 {
		end := min(off+64, r.size)
		chunk := cur[off:end]
		if base == nil {
			if allZero(chunk) {
				continue
			}
		} else if string(base[off:end]) == string(chunk) {
			continue
		}
		changed = true
		d.emit(fmt.Sprintf("  %s+%#04x: %s", r.name, off, hexGroups(chunk)))
	}
	return changed
}

// Fence records that the program is about to execute the barrier
// instruction instr ("sfence", "lfence", "mfence", "dsb st", ...; from
// c/fenceplugin.c, see ServeFence): a
// "fence INSTR" line, then one line per 64-byte chunk of a doorbell
// record or UAR/BlueFlame page that changed since the previous fence or
// snapshot (the format of Snapshot, without the hash line). Stores are
// thus placed between the barriers: what a line shows was stored before
// that fence and after the previous one. The fence baseline moves; the
// snapshot baseline does not (see region.fenceLast).
func (d *Device) Fence(mem Mem, instr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.emit("fence " + instr)
	for _, r := range d.regions {
		if !r.watch {
			continue
		}
		cur := make([]byte, r.size)
		if err := mem.Read(r.addr, cur); err != nil {
			d.emit(fmt.Sprintf("  %s: unreadable (%v)", r.name, err))
			r.fenceLast = nil
			continue
		}
		d.emitChanged(r, r.fenceLast, cur)
		r.fenceLast = cur
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// hexGroups prints b as hex in 8-byte groups.
func hexGroups(b []byte) string {
	var s strings.Builder
	for i := 0; i < len(b); i += 8 {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%x", b[i:min(i+8, len(b))])
	}
	return s.String()
}

// bindAlias gives the newest unnamed object of the kind a scenario line
// creates the scenario's name ("L4: qp q1 rc ..." -> newest QP is q1).
func (d *Device) bindAlias(label string) {
	_, line, ok := strings.Cut(label, ": ")
	if !ok {
		line = label
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return
	}
	kind := map[string]string{"pd": "pd", "mr": "mr", "cq": "cq", "qp": "qp", "ah": "ah", "channel": "channel", "srq": "srq"}[f[0]]
	if kind == "" {
		return
	}
	for i := len(d.objs) - 1; i >= 0; i-- {
		o := d.objs[i]
		if o.kind == kind {
			if o.alias == "" {
				o.alias = f[1]
				d.emit(fmt.Sprintf("bind %s=%s", f[1], o.name))
			}
			return
		}
	}
}

// Close is the last close of uverbs fd: the kernel destroys the ucontext
// and every object still in it (uverbs_destroy_ufile_hw).
func (d *Device) Close(fd int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.ctxs[fd]
	if c == nil {
		return
	}
	var names []string
	hs := make([]uint32, 0, len(c.handles))
	for h := range c.handles {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	// Children before parents: QPs, AHs, MRs, CQs, UARs, PDs.
	for _, kind := range []string{"qp", "ah", "mr", "cq", "uar", "pd"} {
		for _, h := range hs {
			if o := c.handles[h]; o != nil && o.kind == kind {
				names = append(names, o.name)
				d.destroyObject(o)
			}
		}
	}
	for _, m := range c.maps {
		if m.reg != nil {
			d.dropRegion(m.reg)
		}
	}
	delete(d.ctxs, fd)
	// "~": the in-process seam sees no close(2), only this shim event.
	d.emit(fmt.Sprintf("~ CLOSE %s destroyed=[%s]", c.name, strings.Join(names, " ")))
}

// destroyObject releases o's kernel resources (bfregs, references).
func (d *Device) destroyObject(o *object) {
	switch o.kind {
	case "qp":
		if o.bfregn > 0 && o.ctx != nil && o.bfregn < len(o.ctx.bfregCount) {
			o.ctx.bfregCount[o.bfregn]--
		}
		unref(o.pd)
		unref(o.scq)
		unref(o.rcq)
		unref(o.srqObj)
	case "mr", "ah", "srq":
		unref(o.pd)
	case "uar":
		o.released = true
		if o.mapped == 0 && o.ctx != nil {
			delete(o.ctx.mmapEntries, o.mmapIdx)
		}
	}
	d.dropObject(o)
}

func unref(o *object) {
	if o != nil {
		o.refs--
	}
}

// Errno names for the trace.
func errName(e unix.Errno) string {
	if e == 0 {
		return "ok"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno%d", int(e))
}
