//go:build linux

package cm

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/umad"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// The user backend's ports: per RoCE port, the transport (umad.Port,
// umad.UDSend), the engine and the umad.Driver that runs it, started by
// runPorts; the device's CA ACK delay; GID lookups.

// userPort is one RDMA port with a registered CM agent and its engine.
type userPort struct {
	dev      uverbs.Device
	port     uverbs.Port
	guid     rdma.GUID
	d        *umad.Driver
	ud       *umad.UDSend         // nil: MADs are sent through umad
	udErr    error                // why there is no UD send path
	byEngine map[engine.ID]uint32 // guarded by user.mu
}

// openPort opens one port's transport (umad.Port, then umad.UDSend on top
// of it unless udSends is off or the UD QP cannot be made), an engine for
// it, and the umad.Driver that runs the engine on the transport (started
// by runPorts).
func (u *user) openPort(dev uverbs.Device, p uverbs.Port, umadPath string, udSends bool, ackDelay uint8) (*userPort, error) {
	port, err := umad.Open(umadPath)
	if err != nil {
		return nil, err
	}
	var t umad.Transport = port
	up := &userPort{dev: dev, port: p, guid: dev.NodeGUID, byEngine: map[engine.ID]uint32{}}
	if udSends {
		if up.ud, up.udErr = umad.NewUDSend(port, dev, uint8(p.Num)); up.udErr == nil {
			t = up.ud
		}
	}
	var gids []rdma.GID
	for _, g := range p.GIDs {
		if g.Type == uverbs.GIDTypeRoCEv2 {
			gids = append(gids, g.GID)
		}
	}
	e, err := engine.New(engine.Config{
		// umad puts its agent's hi_tid in the TIDs' upper half; from the
		// UD QP they leave as the engine makes them, so make them differ
		// between instances as hi_tid does.
		CAGUID: beUint64(up.guid), Source: umad.NewRandomSource(rand.Uint32()),
		ACKDelay:    ackDelay,
		LocalGIDs:   gids,
		MaxHalfOpen: u.maxHalfOpen,
	})
	if err != nil {
		t.Close()
		return nil, err
	}
	up.d = umad.NewDriver(e, t)
	up.d.OnEvent = func(ev engine.Event) { u.onEngineEvent(up, &ev) }
	return up, nil
}

// defaultCAAckDelay is the ACK delay used when the device cannot be
// asked: rxe's local_ca_ack_delay (RXE_LOCAL_CA_ACK_DELAY).
const defaultCAAckDelay = 15

// deviceFacts returns the device's local CA ACK delay (ib_device_attr's
// local_ca_ack_delay, from QUERY_DEVICE): the time, as 4.096 µs × 2^n,
// the CA may take to acknowledge a packet. The IBTA CM sends it as the
// REP's Target ACK Delay and adds it into the local ACK timeout of the
// REQ and of the QP (IBTA vol. 1 ch. 12; Linux's ib_cm takes it the same
// way: cm_add_one sets cm_dev->ack_delay from attrs.local_ca_ack_delay,
// used by cm_format_req, cm_format_rep and cm_ack_timeout). Any value the
// device reports is used, 0 included, as ib_cm does; only when the device
// cannot be opened or queried is it defaultCAAckDelay.
//
// deviceFacts also fills dev's GID tables, from one QUERY_GID_TABLE ioctl
// (libibverbs' ibv_query_gid_table) on the same open device: read from
// sysfs, rxe's 1,024 slots per port took three files each, 0.7 s in the
// TCG guests. Where the ioctl is missing, or the device cannot be opened,
// the tables are read from sysfs as before.
func deviceFacts(dev uverbs.Device) (ackDelay uint8, _ uverbs.Device) {
	x, err := uverbs.OpenDevice(dev, nil)
	if err != nil {
		return defaultCAAckDelay, withSysfsGIDs(dev)
	}
	defer x.Close()
	ackDelay = defaultCAAckDelay
	if a, err := x.QueryDevice(); err == nil {
		ackDelay = min(a.LocalCAAckDelay, mad.MaxTimeout) // a 5-bit field in the MADs
	}
	gids, err := x.QueryGIDTable()
	if err != nil {
		return ackDelay, withSysfsGIDs(dev)
	}
	dev.Ports = slices.Clone(dev.Ports)
	for i := range dev.Ports {
		p := &dev.Ports[i]
		p.GIDs = nil
		for _, g := range gids {
			if g.Port == p.Num {
				p.GIDs = append(p.GIDs, g)
			}
		}
	}
	return ackDelay, dev
}

// withSysfsGIDs returns dev with the GID tables read from sysfs.
func withSysfsGIDs(dev uverbs.Device) uverbs.Device {
	devs, err := uverbs.Devices()
	if err != nil {
		return dev
	}
	for _, d := range devs {
		if d.Name == dev.Name {
			return d
		}
	}
	return dev
}

func beUint64(b rdma.GUID) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// runPorts starts each port's engine runner: a goroutine receiving MADs
// into the port's umad.Driver until close cancels it.
func (u *user) runPorts() {
	ctx, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	for _, up := range u.ports {
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			_ = up.d.Run(ctx)
		}()
	}
}

func (u *user) closePorts() error {
	var errs []error
	for _, p := range u.ports {
		errs = append(errs, p.d.Close())
	}
	return errors.Join(errs...)
}

// portOf finds the RoCE v2 GID of a local IPv4 address.
func (u *user) portOf(a netip.Addr) (*userPort, uverbs.GIDEntry, bool) {
	want := rdma.GIDFromAddr(a)
	for _, p := range u.ports {
		for _, g := range p.port.GIDs {
			if g.Type == uverbs.GIDTypeRoCEv2 && g.GID == want {
				return p, g, true
			}
		}
	}
	return nil, uverbs.GIDEntry{}, false
}

func (p *userPort) gidOf(g rdma.GID) (uverbs.GIDEntry, bool) {
	for _, e := range p.port.GIDs {
		if e.GID == g {
			return e, true
		}
	}
	return uverbs.GIDEntry{}, false
}
