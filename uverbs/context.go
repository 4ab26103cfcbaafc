package uverbs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// Options tune OpenDevice. The zero value is the default.
type Options struct {
	// Interface selects ioctl (with per-method write fallback, the
	// default) or write-only commands.
	Interface Interface
	// DriverID overrides the rdma_driver_id the ioctl header carries; 0
	// asks netlink, then guesses from the device name.
	DriverID uint32
}

// Context is an open device: the uverbs fd with its ucontext, the async
// event fd and every object created from it. Close releases them all.
type Context struct {
	dev            Device
	fd             int
	driverID       uint32
	nativeIoctl    bool // native ioctl methods may be tried
	invokeWrite    bool // write commands go through INVOKE_WRITE
	iface          Interface
	numCompVectors int
	prov           provider
	async          *eventFile
	nextHandle     atomic.Uint64
	stats          cmdStats

	mu     sync.Mutex
	closed bool
	// qps are the open QPs; each knows its index (QP.slot). A slice, not
	// a map: a map insert and delete per QP ran about 40 distinct code
	// blocks of the runtime, which in TCG slow the kernel's next commands
	// (docs/benchmarks.md).
	qps []*QP
	// qpCreate is PD.CreateQP's working memory, reused under mu: the
	// init attributes the provider sees and the command's outputs. Each
	// was an allocation per QP (a pointer handed to an interface method
	// or to an ioctl output escapes).
	qpCreate struct {
		init   QPInit
		capOut abi.UverbsQPCap
		qpn    [4]byte
	}
	ahs      map[*AH]struct{}
	mrs      map[*MR]struct{}
	cqs      map[uint64]*CQ // by user handle (completion events name it)
	channels map[*CompChannel]struct{}
	pds      map[*PD]struct{}
	srqs     map[*SRQ]struct{} // made by the first CreateSRQ
}

// Open opens the device called name ("" for the first one).
func Open(name string) (*Context, error) {
	if !unix.IsLinux {
		return nil, notOnThisOS("open")
	}
	dev, err := DefaultDiscovery.Device(name)
	if err != nil {
		return nil, err
	}
	return OpenDevice(dev, nil)
}

// OpenDevice opens dev: it checks the node, finds the driver id, picks the
// provider, allocates the ucontext (with the provider's driver data) and
// the async event fd.
func OpenDevice(dev Device, opts *Options) (*Context, error) {
	if !unix.IsLinux {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "open", Device: dev.Name, Err: unix.ErrNotSupported}
	}
	if opts == nil {
		opts = &Options{}
	}
	fd, err := openNode(dev.Verbs, dev.Name)
	if err != nil {
		return nil, err
	}
	x := &Context{
		dev: dev, fd: fd, iface: opts.Interface,
		ahs: map[*AH]struct{}{}, mrs: map[*MR]struct{}{},
		cqs: map[uint64]*CQ{}, channels: map[*CompChannel]struct{}{}, pds: map[*PD]struct{}{},
	}
	x.driverID = opts.DriverID
	if x.driverID == 0 {
		x.driverID = driverIDOf(dev)
	}
	x.prov = newProvider(x.driverID)
	if err := x.prov.checkABI(dev); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if x.iface == InterfaceAuto && x.driverID != abi.RDMADriverUnknown {
		x.probeIoctl()
	}
	if err := x.allocContext(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return x, nil
}

// driverIDOf asks netlink for the device's driver id, as libibverbs
// does; without netlink it matches the PCI ids against libmlx5's table,
// then the device name (rxe*, mlx5_*), then gives up (unknown: write
// commands only, no provider data path).
func driverIDOf(dev Device) uint32 {
	if c, err := nlUverbsChardev(dev.Name); err == nil && c.hasID && (dev.Verbs.Name == "" || c.name == dev.Verbs.Name) {
		return c.driverID
	}
	if isMLX5PCI(dev.PCIVendor, dev.PCIDevice) {
		return abi.RDMADriverMLX5
	}
	switch {
	case strings.HasPrefix(dev.Name, "rxe"):
		return abi.RDMADriverRXE
	case strings.HasPrefix(dev.Name, "mlx5"):
		return abi.RDMADriverMLX5
	}
	return abi.RDMADriverUnknown
}

// probeIoctl checks for the ioctl interface and INVOKE_WRITE the way
// rdma-core does: INVOKE_WRITE of QUERY_DEVICE without its core buffers
// must fail with ENOSPC (the size check), proving the method exists.
func (x *Context) probeIoctl() {
	call := kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodInvokeWrite, x.driverID)
	call.Const(abi.UverbsAttrWriteCmd, uint64(abi.UverbsCmdQueryDevice))
	err := x.do(call)
	switch {
	case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL):
		// No ioctl interface, or a driver id the kernel refuses.
		x.nativeIoctl, x.invokeWrite = false, false
	case errors.Is(err, unix.EPROTONOSUPPORT), errors.Is(err, unix.EOPNOTSUPP):
		x.nativeIoctl, x.invokeWrite = true, false
	default:
		x.nativeIoctl, x.invokeWrite = true, true
	}
}

// Name is the device name.
func (x *Context) Name() string { return x.dev.Name }

// Device is the discovery record the context was opened from.
func (x *Context) Device() Device { return x.dev }

// DriverID is the rdma_driver_id in use (0 when unknown).
func (x *Context) DriverID() uint32 { return x.driverID }

// Provider names the user-space provider ("rxe", "mlx5", "generic").
func (x *Context) Provider() string { return x.prov.name() }

// UsesIoctl reports whether the ioctl interface is in use; false means
// write() commands only.
func (x *Context) UsesIoctl() bool { return x.nativeIoctl }

// NumCompVectors is the number of completion vectors.
func (x *Context) NumCompVectors() int { return x.numCompVectors }

// allocContext runs GET_CONTEXT with each of the provider's driver
// inputs in turn until one succeeds (mlx5_cmd_get_context and
// mlx5_alloc_context retry shorter requests and drop DEVX), then lets the
// provider finish (its own open-time commands) before the async event fd
// is allocated, as ibv_open_device does.
func (x *Context) allocContext() error {
	ins, drvOut := x.prov.contextData()
	var err error
	for _, drvIn := range ins {
		clear(drvOut)
		var done bool
		if done, err = x.allocContextWith(drvIn, drvOut); done {
			return err
		}
	}
	return err
}

// allocContextWith runs one GET_CONTEXT; done reports that the kernel
// allocated the context (err is then the provider's or the async fd's).
func (x *Context) allocContextWith(drvIn, drvOut []byte) (done bool, err error) {
	if x.nativeIoctl {
		var nvec [4]byte
		var support [8]byte
		call := kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodGetContext, x.driverID)
		call.Out(abi.UverbsAttrGetContextNumCompVectors, nvec[:])
		i := call.Out(abi.UverbsAttrGetContextCoreSupport, support[:])
		call.Optional(i)
		if len(drvIn) > 0 {
			call.In(abi.UverbsAttrUHWIn, drvIn)
		}
		if len(drvOut) > 0 {
			call.Out(abi.UverbsAttrUHWOut, drvOut)
		}
		err := x.do(call)
		if err == nil {
			x.numCompVectors = int(abi.Native.Uint32(nvec[:]))
			if err := x.prov.contextCreated(x, drvOut); err != nil {
				return true, err
			}
			return true, x.allocAsync()
		}
		if !noMethod(err) {
			return false, opErr("allocate context", x.dev.Name, err)
		}
		x.nativeIoctl, x.invokeWrite = false, false
	}
	var req abi.UverbsGetContext
	var resp abi.UverbsGetContextResp
	c := &cmd{num: abi.UverbsCmdGetContext, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp), drvIn: drvIn, drvOut: drvOut}
	if err := x.write(c); err != nil {
		return false, opErr("allocate context", x.dev.Name, err)
	}
	x.numCompVectors = int(resp.NumCompVectors)
	ev, err := newEventFile(int(resp.AsyncFD), x.dev.Name+" async events")
	if err != nil {
		return true, opErr("async event fd", x.dev.Name, err)
	}
	x.async = ev
	return true, x.prov.contextCreated(x, drvOut)
}

// allocAsync creates the async event fd with UVERBS_METHOD_ASYNC_EVENT_ALLOC
// (the ioctl GET_CONTEXT returns none); the first one becomes the
// context's default.
func (x *Context) allocAsync() error {
	call := kcall.NewIoctl(abi.UverbsObjectAsyncEvent, abi.UverbsMethodAsyncEventAlloc, x.driverID)
	i := call.FD(abi.UverbsAttrAsyncEventAllocFDHandle, 0)
	if err := x.do(call); err != nil {
		if noMethod(err) {
			return nil // old kernel: no async events on this path
		}
		return opErr("allocate async event fd", x.dev.Name, err)
	}
	ev, err := newEventFile(int(int32(call.Data(i))), x.dev.Name+" async events")
	if err != nil {
		return opErr("async event fd", x.dev.Name, err)
	}
	x.async = ev
	return nil
}

// handle returns a fresh user handle (the value the kernel reports back in
// events).
func (x *Context) handle() uint64 { return x.nextHandle.Add(1) }

// lockOpen takes x.mu, or returns an ErrClosed error (without the lock)
// if the context is closed.
func (x *Context) lockOpen(op string) error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return &rdma.OpError{Pkg: "uverbs", Op: op, Device: x.dev.Name, Err: ErrClosed}
	}
	return nil
}

// Close destroys every object still open, children first (QPs, SRQs, AHs, MRs,
// CQs, completion channels, PDs), then the async fd and the device fd.
func (x *Context) Close() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true // no new objects from here on
	qps, ahs, mrs, cqs, chans, pds := slices.Clone(x.qps), keys(x.ahs), keys(x.mrs), values(x.cqs), keys(x.channels), keys(x.pds)
	srqs := keys(x.srqs)
	x.mu.Unlock()
	var errs []error
	for _, o := range qps {
		errs = append(errs, o.Close())
	}
	for _, o := range srqs {
		errs = append(errs, o.Close())
	}
	for _, o := range ahs {
		errs = append(errs, o.Close())
	}
	for _, o := range mrs {
		errs = append(errs, o.Close())
	}
	for _, o := range cqs {
		errs = append(errs, o.Close())
	}
	for _, o := range chans {
		errs = append(errs, o.Close())
	}
	for _, o := range pds {
		errs = append(errs, o.Close())
	}
	if x.async != nil {
		errs = append(errs, x.async.close())
	}
	errs = append(errs, x.prov.close())
	if err := unix.Close(x.fd); err != nil {
		errs = append(errs, opErr("close", x.dev.Name, err))
	}
	return errors.Join(errs...)
}

// addQP and dropQP keep x.qps, under x.mu.
func (x *Context) addQP(q *QP) {
	q.slot = len(x.qps)
	x.qps = append(x.qps, q)
}

func (x *Context) dropQP(q *QP) {
	i, last := q.slot, len(x.qps)-1
	if i < 0 || i > last || x.qps[i] != q {
		return
	}
	x.qps[i] = x.qps[last]
	x.qps[i].slot = i
	x.qps[last] = nil
	x.qps = x.qps[:last]
	q.slot = -1
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func values[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// DeviceAttr is what QUERY_DEVICE (extended) reports.
type DeviceAttr struct {
	FWVersion       uint64
	NodeGUID        rdma.GUID
	SysImageGUID    rdma.GUID
	MaxMRSize       uint64
	PageSizeCap     uint64
	VendorID        uint32
	VendorPartID    uint32
	HWVersion       uint32
	MaxQP           int
	MaxQPWR         int
	DeviceCapFlags  uint64 // base flags | extended flags
	MaxSGE          int
	MaxSGERd        int
	MaxCQ           int
	MaxCQE          int
	MaxMR           int
	MaxPD           int
	MaxQPRdAtom     int
	MaxQPInitRdAtom int
	// AtomicCap says whether and how the device does 8-byte atomics.
	AtomicCap       AtomicCap
	MaxAH           int
	MaxSRQ          int
	MaxSRQWR        int
	MaxSRQSGE       int
	MaxPKeys        int
	LocalCAAckDelay uint8
	PhysPortCnt     int
	// Extended part; zero when the kernel answered the legacy command.
	TimestampMask uint64
	HCACoreClock  uint64 // kHz
	Extended      bool
}

// QueryDevice runs EX_QUERY_DEVICE, or the legacy QUERY_DEVICE when the
// kernel refuses the extended one.
func (x *Context) QueryDevice() (DeviceAttr, error) {
	var a DeviceAttr
	if err := x.lockOpen("query device"); err != nil {
		return a, err
	}
	defer x.mu.Unlock()
	var req abi.UverbsExQueryDevice
	var resp abi.UverbsExQueryDeviceResp
	err := x.exec(&cmd{num: abi.UverbsExCmdQueryDevice, ex: true, in: abi.Bytes(&req), out: abi.Bytes(&resp)})
	if err == nil {
		a.Extended = true
		a.TimestampMask, a.HCACoreClock = resp.TimestampMask, resp.HCACoreClock
		a.DeviceCapFlags = resp.DeviceCapFlagsEx
	} else {
		if !noMethod(err) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
			return a, opErr("query device", x.dev.Name, err)
		}
		var legacyReq abi.UverbsGetContext
		if err := x.exec(&cmd{num: abi.UverbsCmdQueryDevice, in: abi.Bytes(&legacyReq), respPtr: true, out: abi.Bytes(&resp.Base)}); err != nil {
			return a, opErr("query device", x.dev.Name, err)
		}
	}
	b := &resp.Base
	a.FWVersion, a.NodeGUID, a.SysImageGUID = b.FwVer, b.NodeGUID, b.SysImageGUID
	a.MaxMRSize, a.PageSizeCap = b.MaxMRSize, b.PageSizeCap
	a.VendorID, a.VendorPartID, a.HWVersion = b.VendorID, b.VendorPartID, b.HwVer
	a.MaxQP, a.MaxQPWR, a.MaxSGE, a.MaxSGERd = int(b.MaxQP), int(b.MaxQPWR), int(b.MaxSGE), int(b.MaxSGERd)
	a.DeviceCapFlags |= uint64(b.DeviceCapFlags)
	a.MaxCQ, a.MaxCQE, a.MaxMR, a.MaxPD = int(b.MaxCQ), int(b.MaxCQE), int(b.MaxMR), int(b.MaxPD)
	a.MaxQPRdAtom, a.MaxQPInitRdAtom, a.MaxAH = int(b.MaxQPRdAtom), int(b.MaxQPInitRdAtom), int(b.MaxAH)
	a.AtomicCap = AtomicCap(b.AtomicCap)
	a.MaxSRQ, a.MaxSRQWR, a.MaxSRQSGE = int(b.MaxSRQ), int(b.MaxSRQWR), int(b.MaxSRQSGE)
	a.MaxPKeys, a.LocalCAAckDelay, a.PhysPortCnt = int(b.MaxPkeys), b.LocalCAAckDelay, int(b.PhysPortCnt)
	return a, nil
}

// PortAttr is what QUERY_PORT reports.
type PortAttr struct {
	State         PortState
	MaxMTU        rdma.MTU
	ActiveMTU     rdma.MTU
	GIDTableLen   int
	PortCapFlags  uint32
	PortCapFlags2 uint16
	MaxMsgSize    uint32
	PKeyTableLen  int
	LID           uint16
	SMLID         uint16
	LMC           uint8
	SMSL          uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     PhysState
	LinkLayer     LinkLayer
	// GRHRequired: the port needs a GRH in every address (RoCE).
	GRHRequired bool
}

// QueryPort queries port (from 1) with the DEVICE/QUERY_PORT method, or
// the QUERY_PORT write command.
func (x *Context) QueryPort(port int) (PortAttr, error) {
	var a PortAttr
	if port < 1 || port > 255 {
		return a, &rdma.OpError{Pkg: "uverbs", Op: "query port", Device: x.dev.Name, Err: fmt.Errorf("%w: port %d", ErrInvalidArgument, port)}
	}
	if err := x.lockOpen("query port"); err != nil {
		return a, err
	}
	defer x.mu.Unlock()
	var resp abi.UverbsQueryPortRespEx
	var err error = unix.ENOTTY
	if x.nativeIoctl {
		call := kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodQueryPort, x.driverID)
		call.Const(abi.UverbsAttrQueryPortPortNum, uint64(port))
		call.Out(abi.UverbsAttrQueryPortResp, abi.Bytes(&resp))
		err = x.do(call)
	}
	if noMethod(err) {
		req := abi.UverbsQueryPort{PortNum: uint8(port)}
		err = x.exec(&cmd{num: abi.UverbsCmdQueryPort, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp.LegacyResp)})
	}
	if err != nil {
		return a, opErr(fmt.Sprintf("query port %d", port), x.dev.Name, err)
	}
	r := &resp.LegacyResp
	a.State, a.MaxMTU, a.ActiveMTU = PortState(r.State), rdma.MTU(r.MaxMTU), rdma.MTU(r.ActiveMTU)
	a.GIDTableLen, a.PortCapFlags, a.PortCapFlags2 = int(r.GIDTblLen), r.PortCapFlags, resp.PortCapFlags2
	a.MaxMsgSize, a.PKeyTableLen, a.LID, a.SMLID = r.MaxMsgSz, int(r.PkeyTblLen), r.LID, r.SmLID
	a.LMC, a.SMSL, a.ActiveWidth, a.ActiveSpeed = r.LMC, r.SmSL, r.ActiveWidth, r.ActiveSpeed
	a.PhysState, a.LinkLayer, a.GRHRequired = PhysState(r.PhysState), LinkLayer(r.LinkLayer), r.Flags&1 != 0
	return a, nil
}

// QueryGIDTable returns the valid GID entries of every port, from the
// DEVICE/QUERY_GID_TABLE ioctl, or from sysfs where the kernel lacks it
// (or in write-only mode).
func (x *Context) QueryGIDTable() ([]GIDEntry, error) {
	total := 0
	for _, p := range x.dev.Ports {
		pa, err := x.QueryPort(p.Num)
		if err != nil {
			return nil, err
		}
		total += pa.GIDTableLen
	}
	if err := x.lockOpen("query GID table"); err != nil {
		return nil, err
	}
	var err error = unix.ENOTTY
	var entries []abi.UverbsGIDEntry
	var num uint64
	if x.nativeIoctl && total > 0 {
		entries = make([]abi.UverbsGIDEntry, total)
		raw := abi.SliceBytes(entries)
		var numBuf [8]byte
		call := kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodQueryGIDTable, x.driverID)
		call.Const(abi.UverbsAttrQueryGIDTableEntrySize, uint64(len(raw)/total))
		call.Out(abi.UverbsAttrQueryGIDTableRespEntries, raw)
		call.Out(abi.UverbsAttrQueryGIDTableRespNumEntries, numBuf[:])
		err = x.do(call)
		num = abi.Native.Uint64(numBuf[:])
	}
	x.mu.Unlock()
	if noMethod(err) {
		return x.sysfsGIDs()
	}
	if err != nil {
		return nil, opErr("query GID table", x.dev.Name, err)
	}
	out := gidEntries(entries, num)
	for i := range out {
		if out[i].NetdevIndex != 0 {
			if name, err := kcall.IfIndexToName(out[i].NetdevIndex); err == nil {
				out[i].Netdev = name
			}
		}
	}
	return out, nil
}

// gidEntries decodes a QUERY_GID_TABLE answer: the kernel's entry count
// is trusted only up to the entries we gave it room for.
func gidEntries(entries []abi.UverbsGIDEntry, num uint64) []GIDEntry {
	entries = entries[:min(num, uint64(len(entries)))]
	out := make([]GIDEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, GIDEntry{Port: int(e.PortNum), Index: int(e.GIDIndex), GID: rdma.GID(e.GID),
			Type: GIDType(e.GIDType), NetdevIndex: int(e.NetdevIfindex)})
	}
	return out
}

// sysfsGIDs reads the GID tables again from sysfs.
func (x *Context) sysfsGIDs() ([]GIDEntry, error) {
	var out []GIDEntry
	d := Discovery{}
	for _, p := range x.dev.Ports {
		out = append(out, d.gids(fmt.Sprintf("%s/ports/%d", x.dev.SysPath, p.Num), p.Num, p.LinkLayer)...)
	}
	return out, nil
}

// AsyncEvent is one asynchronous event (struct ib_uverbs_async_event_desc).
type AsyncEvent struct {
	Type AsyncEventType
	// Element is the port number for port events, else the user handle of
	// the CQ, QP or SRQ (see QP.Handle, CQ.Handle, SRQ.Handle).
	Element uint64
}

// AsyncEventType numbers enum ib_event_type.
type AsyncEventType uint32

// Async event types used here.
const (
	EventCQErr       AsyncEventType = 0
	EventQPFatal     AsyncEventType = 1
	EventQPReqErr    AsyncEventType = 2
	EventQPAccessErr AsyncEventType = 3
	EventCommEst     AsyncEventType = 4
	EventSQDrained   AsyncEventType = 5
	EventPathMig     AsyncEventType = 6
	EventPathMigErr  AsyncEventType = 7
	EventDeviceFatal AsyncEventType = 8
	EventPortActive  AsyncEventType = 9
	EventPortErr     AsyncEventType = 10
	// EventSRQErr: the SRQ failed; Element is SRQ.Handle.
	EventSRQErr AsyncEventType = 14
	// EventSRQLimitReached: fewer WRs than the armed limit remain in the
	// SRQ (SRQ.Arm); Element is SRQ.Handle. The SRQ is disarmed.
	EventSRQLimitReached AsyncEventType = 15
	// EventLastWQEReach: a QP on an SRQ, in the error state, will take no
	// more WQEs from the SRQ (IB_EVENT_QP_LAST_WQE_REACHED).
	EventLastWQEReach AsyncEventType = 16
	EventGIDChange    AsyncEventType = 18
)

// AsyncEvents waits for asynchronous events and returns all that are
// queued (it drains the fd until EAGAIN). It fails with ctx's error when
// ctx ends and with ErrClosed when the context is closed.
func (x *Context) AsyncEvents(ctx context.Context) ([]AsyncEvent, error) {
	if x.async == nil {
		return nil, notSupported("read async events", x.dev.Name, "kernel gave no async event fd")
	}
	var evs []AsyncEvent
	err := x.async.readAll(ctx, 16, func(b []byte) {
		d := abi.Decode[abi.UverbsAsyncEventDesc](b)
		evs = append(evs, AsyncEvent{Type: AsyncEventType(d.EventType), Element: d.Element})
	})
	if len(evs) > 0 {
		return evs, nil
	}
	return nil, err
}
