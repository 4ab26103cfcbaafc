package cm

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// verbsDevice is an opened RDMA device with its default PD. Like
// librdmacm, a channel opens each device once, on first use, and shares
// the context and PD among its IDs (rdma_cm_id.verbs and .pd).
type verbsDevice struct {
	ctx  *uverbs.Context
	pd   *uverbs.PD
	attr uverbs.DeviceAttr
	guid rdma.GUID
}

type deviceCache struct {
	// last is the device get returned last, checked before the lock and
	// the map: a channel's IDs nearly always share one device.
	last   atomic.Pointer[verbsDevice]
	mu     sync.Mutex
	devs   map[rdma.GUID]*verbsDevice
	closed bool // the channel closed: nothing opens again
	// list is the devices found by discover (Open) or the last look,
	// tried first.
	list []uverbs.Device
}

// discovery finds devices by GUID; it needs no GID tables (the costly
// part of discovery).
func discovery() uverbs.Discovery {
	d := uverbs.DefaultDiscovery
	d.SkipGIDs = true
	return d
}

// discover lists the devices once, when the channel opens, as librdmacm's
// ucma_init lists them (ibv_get_device_list) before any ID exists: the
// ID that opens a device then only opens it. A failure leaves the list
// empty; get discovers again.
func (d *deviceCache) discover() {
	devs, err := discovery().Devices()
	if err != nil {
		return
	}
	d.mu.Lock()
	d.list = devs
	d.mu.Unlock()
}

func (d *deviceCache) get(guid rdma.GUID) (*verbsDevice, error) {
	if vd := d.last.Load(); vd != nil && vd.guid == guid {
		return vd, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if vd := d.devs[guid]; vd != nil {
		d.last.Store(vd)
		return vd, nil
	}
	if d.closed {
		return nil, fmt.Errorf("cm: open device: %w", ErrClosed)
	}
	if slices.ContainsFunc(d.list, func(dev uverbs.Device) bool { return dev.NodeGUID == guid }) {
		vd, err := d.open(d.list, guid)
		if err == nil {
			return vd, nil
		}
		// Listed at Open but gone or re-created since (its node moved):
		// look again.
	}
	devs, err := discovery().Devices()
	if err != nil {
		return nil, err
	}
	d.list = devs
	return d.open(devs, guid)
}

// open opens the device of devs with the given GUID, with its PD, and
// keeps it. Called with d.mu held.
func (d *deviceCache) open(devs []uverbs.Device, guid rdma.GUID) (*verbsDevice, error) {
	for _, dev := range devs {
		if dev.NodeGUID != guid {
			continue
		}
		x, err := uverbs.OpenDevice(dev, nil)
		if err != nil {
			return nil, err
		}
		attr, err := x.QueryDevice()
		if err != nil {
			x.Close()
			return nil, err
		}
		pd, err := x.AllocPD()
		if err != nil {
			x.Close()
			return nil, err
		}
		vd := &verbsDevice{ctx: x, pd: pd, attr: attr, guid: guid}
		if d.devs == nil {
			d.devs = map[rdma.GUID]*verbsDevice{}
		}
		d.devs[guid] = vd
		d.last.Store(vd)
		return vd, nil
	}
	return nil, fmt.Errorf("cm: no verbs device with node GUID %v: %w", guid, ErrNoDevice)
}

func (d *deviceCache) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, vd := range d.devs {
		errs = append(errs, vd.ctx.Close())
	}
	d.devs = nil
	d.last.Store(nil)
	d.closed = true
	return errors.Join(errs...)
}

// device returns the opened device of the ID (its address must be bound
// or resolved).
func (id *ID) device() (*verbsDevice, error) {
	id.mu.Lock()
	guid, known := id.devGUID, id.hasDev && !id.closed.Load()
	id.mu.Unlock()
	if known {
		return id.ch.devices.get(guid)
	}
	ai, err := id.Query() // under the ID's lock; ErrClosed once destroyed
	if err != nil {
		return nil, err
	}
	if !ai.HasDevice {
		return nil, fmt.Errorf("cm: the ID has no device yet (bind or resolve its address first): %w", ErrNoDevice)
	}
	return id.ch.devices.get(ai.NodeGUID)
}

// Verbs returns the verbs context and the channel's protection domain for
// the ID's device (rdma_cm_id.verbs and .pd), opening the device on first
// use. The channel owns both; they live until the channel closes.
func (id *ID) Verbs() (*uverbs.Context, *uverbs.PD, error) {
	vd, err := id.device()
	if err != nil {
		return nil, nil, err
	}
	return vd.ctx, vd.pd, nil
}

// QPInit describes the QP CreateQP makes (struct ibv_qp_init_attr).
type QPInit struct {
	// Cap sizes the work queues; zero fields mean 1.
	Cap qp.Cap
	// SendCQ and RecvCQ are used when set; otherwise CreateQP makes each
	// with its own completion channel and as many entries as its queue
	// (librdmacm ucma_create_cqs), owned by the QP.
	SendCQ, RecvCQ *uverbs.CQ
	// PD defaults to the channel's PD for the device.
	PD *uverbs.PD
	// SignalAll makes every send generate a completion.
	SignalAll bool
	// SRQ, when set, makes the QP receive from this shared receive queue
	// (rdma_create_qp with qp_init_attr.srq; see ID.CreateSRQ): Cap's
	// receive fields are ignored, the CM messages say so (the SRQ bit of
	// REQ and REP), and a receive CQ made here is sized for the SRQ.
	SRQ *uverbs.SRQ
}

// uverbsQP adapts *uverbs.QP to verbsQP.
type uverbsQP struct{ q *uverbs.QP }

func (u uverbsQP) Num() uint32                        { return u.q.Num() }
func (u uverbsQP) Modify(a *qp.Attr, m qp.Mask) error { return u.q.Modify(a, m) }
func (u uverbsQP) QueryECE() (ece.ECE, error)         { return u.q.QueryECE() }
func (u uverbsQP) SetECE(e ece.ECE) error             { return u.q.SetECE(e) }
func (u uverbsQP) HasSRQ() bool                       { return u.q.SRQ() != nil }
func (u uverbsQP) Close() error                       { return u.q.Close() }

// CreateQP creates the ID's QP and moves it to INIT, as rdma_create_qp
// does: with completion queues (made here unless given), the ECE the
// provider reports taken as the local ECE (providers without ECE, such as
// rxe, are fine), and on a passive ID the REQ's ECE applied first
// (librdmacm init_ece). The ID then manages the QP through the connection:
// RTR and RTS on Accept or on the REP, ERR on Disconnect or rejection;
// SetLocalECE, RemoteECE and Establish are refused from here on.
func (id *ID) CreateQP(init QPInit) (*QP, error) {
	id.mu.Lock()
	err := id.st.createQP()
	var q *QP
	if err == nil && !id.qpMemUsed {
		id.qpMemUsed, q = true, &id.qpMem
	}
	id.mu.Unlock()
	if err != nil {
		return nil, err
	}
	vd, err := id.device()
	if err != nil {
		return nil, err
	}
	if q == nil {
		q = new(QP)
	}
	if err := newLibraryQP(q, vd, id.qpType, init); err != nil {
		return nil, errnoError("CreateQP", err)
	}
	if err := id.attachQP(q); err != nil {
		q.destroy()
		return nil, err
	}
	return q, nil
}

// CreateSRQ creates a shared receive queue on the ID's device, as
// rdma_create_srq does, in pd (nil: the device's PD that CreateQP uses).
// Pass it in QPInit.SRQ to the CreateQP of any ID on the same device (a
// listener's accepted IDs, typically), so that their QPs share one pool of
// receives. Unlike librdmacm, the ID does not keep it: the caller closes
// it, after the QPs on it (SRQ.Close refuses before, with ErrBusy).
func (id *ID) CreateSRQ(pd *uverbs.PD, init uverbs.SRQInit) (*uverbs.SRQ, error) {
	vd, err := id.device()
	if err != nil {
		return nil, err
	}
	if pd == nil {
		pd = vd.pd
	}
	s, err := pd.CreateSRQ(init)
	if err != nil {
		return nil, errnoError("CreateSRQ", err)
	}
	return s, nil
}

func one(v uint32) uint32 {
	if v == 0 {
		return 1
	}
	return v
}

// newLibraryQP makes the verbs QP (and the CQs not given) into q; on
// failure it has closed what it made.
func newLibraryQP(q *QP, vd *verbsDevice, t qp.QPType, init QPInit) error {
	*q = QP{ud: t == qp.UD, maxRD: clampRD(vd.attr.MaxQPRdAtom), maxIRD: clampRD(vd.attr.MaxQPInitRdAtom),
		noECE: !vd.ctx.HasECE()}
	if err := q.makeVerbs(vd, t, init); err != nil {
		q.destroy()
		return err
	}
	return nil
}

func (q *QP) makeVerbs(vd *verbsDevice, t qp.QPType, init QPInit) (err error) {
	c := init.Cap
	c.MaxSendWR, c.MaxRecvWR = one(c.MaxSendWR), one(c.MaxRecvWR)
	c.MaxSendSGE, c.MaxRecvSGE = one(c.MaxSendSGE), one(c.MaxRecvSGE)
	q.RecvCQ, q.SendCQ = init.RecvCQ, init.SendCQ
	recvCQE := c.MaxRecvWR
	if init.SRQ != nil {
		recvCQE = uint32(max(init.SRQ.Cap().MaxWR, 1)) // every WR of the SRQ may complete here
	}
	if q.RecvCQ == nil {
		if q.RecvCQ, q.RecvChannel, err = q.makeCQ(vd, recvCQE); err != nil {
			return err
		}
	}
	if q.SendCQ == nil {
		if q.SendCQ, q.SendChannel, err = q.makeCQ(vd, c.MaxSendWR); err != nil {
			return err
		}
	}
	pd := init.PD
	if pd == nil {
		pd = vd.pd
	}
	v, err := pd.CreateQP(uverbs.QPInit{Type: t, SendCQ: q.SendCQ, RecvCQ: q.RecvCQ, Cap: c, SignalAll: init.SignalAll, SRQ: init.SRQ})
	if err != nil {
		return err
	}
	q.Verbs = v
	q.v = uverbsQP{v}
	return nil
}

// makeCQ makes a CQ of n entries with its own completion channel, both
// owned by q (librdmacm ucma_create_cqs).
func (q *QP) makeCQ(vd *verbsDevice, n uint32) (*uverbs.CQ, *uverbs.CompChannel, error) {
	ch, err := vd.ctx.CreateCompChannel()
	if err != nil {
		return nil, nil, err
	}
	q.extra = append(q.extra, ch)
	cq, err := vd.ctx.CreateCQ(int(n), ch, 0)
	if err != nil {
		return nil, nil, err
	}
	q.extra = append(q.extra, cq)
	return cq, ch, nil
}

func clampRD(n int) uint8 {
	if n > 0xfe {
		return 0xfe
	}
	return uint8(n)
}

// isNotSupported matches "not supported" from this package, the verbs
// layer and the kernel.
func isNotSupported(err error) bool {
	return errors.Is(err, ErrNotSupported) || errors.Is(err, unix.EOPNOTSUPP)
}
