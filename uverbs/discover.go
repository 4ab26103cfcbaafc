package uverbs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// Discovery finds RDMA devices from sysfs and /dev without libibverbs, the
// way rdma-core's init.c and sysfs.c do. Its roots are injectable so that
// tests can point it at a fake tree.
type Discovery struct {
	SysRoot string // "/sys"
	DevRoot string // "/dev"
	// SkipGIDs leaves Port.GIDs empty. Reading a GID table from sysfs
	// costs three file reads per slot (rxe has 1024 slots per port); a
	// caller that only needs to find and open a device skips it, and an
	// open Context has QueryGIDTable.
	SkipGIDs bool
}

// DefaultDiscovery reads the real system.
var DefaultDiscovery = Discovery{SysRoot: "/sys", DevRoot: "/dev"}

// Devices lists the RDMA devices of the running system.
func Devices() ([]Device, error) { return DefaultDiscovery.Devices() }

// Device describes one RDMA device as sysfs shows it.
type Device struct {
	Name         string // "rxe0", "mlx5_0"
	NodeType     NodeType
	NodeGUID     rdma.GUID
	SysImageGUID rdma.GUID
	NodeDesc     string
	FWVersion    string
	// Parent is the netdev a software device (rxe, siw) runs on.
	Parent string
	Ports  []Port
	// Verbs is the uverbs character device; Verbs.Name is empty when the
	// device has none.
	Verbs CharDev
	// UMAD and ISSM are the MAD character devices, one per port.
	UMAD, ISSM []CharDev
	// RDMACM is the (system-wide) rdma_cm character device.
	RDMACM CharDev
	// SysPath is the device's sysfs directory.
	SysPath string
	// PCIVendor and PCIDevice come from device/modalias ("pci:v…d…");
	// both are 0 for a device that is not on PCI (rxe, siw).
	PCIVendor, PCIDevice uint16
}

// Port describes one port of a Device.
type Port struct {
	Num       int
	State     PortState
	PhysState PhysState
	LinkLayer LinkLayer
	LID       uint16
	SMLID     uint16
	Rate      string // e.g. "10 Gb/sec (1X QDR)"
	CapMask   uint32
	// Netdev is the network device of a RoCE port (from its GID table, or
	// the device's parent).
	Netdev string
	// NetdevMTU is Netdev's MTU in bytes (0 if unknown).
	NetdevMTU int
	// ActiveMTU is the port MTU. sysfs has no MTU file: for Ethernet ports
	// it is derived from NetdevMTU as rxe does (eth_mtu_int_to_enum: the
	// netdev MTU minus 80 header bytes, rounded down to an IB MTU, at most
	// 4096); 0 when unknown. Context.QueryPort gives the device's own
	// value.
	ActiveMTU rdma.MTU
	GIDs      []GIDEntry
}

// CharDev is a character device of the RDMA subsystem.
type CharDev struct {
	Name         string // "uverbs0", "umad0", "rdma_cm"
	Path         string // "/dev/infiniband/uverbs0"
	Major, Minor uint32 // from sysfs dev
	ABIVersion   int    // from sysfs abi_version (uverbs: the driver ABI)
	Port         int    // umad/issm only
	// Present reports whether Path exists.
	Present bool
}

// sysClass returns the sysfs class directory.
func (d Discovery) sysClass(class string) string {
	return filepath.Join(d.root(d.SysRoot, "/sys"), "class", class)
}

func (d Discovery) root(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

func (d Discovery) devPath(name string) string {
	return filepath.Join(d.root(d.DevRoot, "/dev"), "infiniband", name)
}

func readTrim(p string) (string, error) {
	b, err := kcall.SysfsReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func readInt(p string) (int, error) {
	s, err := readTrim(p)
	if err != nil {
		return 0, err
	}
	// "4: ACTIVE", "0x3", "5"
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", p, s)
	}
	return int(v), nil
}

// Devices lists the RDMA devices under d's roots, sorted by name. With no
// device it returns an error matching ErrNoDevice that names the places
// looked at; a uverbs ABI other than 6 gives ErrABIVersion.
func (d Discovery) Devices() ([]Device, error) {
	if !unix.IsLinux {
		return nil, notOnThisOS("discover devices")
	}
	ibDir := d.sysClass("infiniband")
	verbsDir := d.sysClass("infiniband_verbs")
	entries, err := kcall.SysfsReadDir(ibDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "list devices", Path: ibDir, Err: err}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("uverbs: %w: %s is missing or empty and no uverbs device is in %s or %s (load an RDMA driver, e.g. `rdma link add rxe0 type rxe netdev eth0`)",
			ErrNoDevice, ibDir, verbsDir, d.devPath(""))
	}
	if err := d.checkABI(); err != nil {
		return nil, err
	}
	verbs, err := d.charDevs("infiniband_verbs", "uverbs")
	if err != nil {
		return nil, err
	}
	umads, _ := d.charDevs("infiniband_mad", "umad")
	issms, _ := d.charDevs("infiniband_mad", "issm")
	cm := d.rdmaCM()
	var devs []Device
	for _, e := range entries {
		dev, err := d.device(e)
		if err != nil {
			return nil, err
		}
		if v := verbs[dev.Name]; len(v) > 0 {
			dev.Verbs = v[0]
		}
		dev.UMAD = umads[dev.Name]
		dev.ISSM = issms[dev.Name]
		dev.RDMACM = cm
		devs = append(devs, dev)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs, nil
}

// Device returns the device called name; an empty name picks the first
// device (as ibv_rc_pingpong does without -d).
func (d Discovery) Device(name string) (Device, error) {
	devs, err := d.Devices()
	if err != nil {
		return Device{}, err
	}
	if name == "" {
		return devs[0], nil
	}
	var names []string
	for _, dev := range devs {
		if dev.Name == name {
			return dev, nil
		}
		names = append(names, dev.Name)
	}
	return Device{}, fmt.Errorf("uverbs: %w: %q not in %s (found %s)", ErrNoDevice, name, d.sysClass("infiniband"), strings.Join(names, ", "))
}

// checkABI reads the global uverbs ABI version, which must be 6.
func (d Discovery) checkABI() error {
	p := filepath.Join(d.sysClass("infiniband_verbs"), "abi_version")
	v, err := readInt(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("uverbs: %w: %s is missing: the ib_uverbs module is not loaded", ErrNoDevice, p)
		}
		return &rdma.OpError{Pkg: "uverbs", Op: "read uverbs ABI version", Path: p, Err: err}
	}
	if v != abi.UverbsABIVersion {
		return fmt.Errorf("uverbs: %w: %s says %d, this package speaks uverbs ABI %d", ErrABIVersion, p, v, abi.UverbsABIVersion)
	}
	return nil
}

// charDevs maps each ibdev name to the class's character devices whose
// name is prefix followed by a number, sorted by port.
func (d Discovery) charDevs(class, prefix string) (map[string][]CharDev, error) {
	dir := d.sysClass(class)
	entries, err := kcall.SysfsReadDir(dir)
	out := map[string][]CharDev{}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return out, nil
		}
		return out, &rdma.OpError{Pkg: "uverbs", Op: "list " + class, Path: dir, Err: err}
	}
	for _, name := range entries {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if _, err := strconv.Atoi(name[len(prefix):]); err != nil {
			continue
		}
		ibdev, err := readTrim(filepath.Join(dir, name, "ibdev"))
		if err != nil {
			continue // raced with removal
		}
		c := d.charDev(filepath.Join(dir, name), name)
		c.ABIVersion, _ = readInt(filepath.Join(dir, name, "abi_version"))
		if class == "infiniband_mad" {
			c.ABIVersion, _ = readInt(filepath.Join(dir, "abi_version"))
			c.Port, _ = readInt(filepath.Join(dir, name, "port"))
		}
		out[ibdev] = append(out[ibdev], c)
	}
	for k := range out {
		sort.Slice(out[k], func(i, j int) bool { return out[k][i].Port < out[k][j].Port })
	}
	return out, nil
}

func (d Discovery) charDev(sysDir, name string) CharDev {
	c := CharDev{Name: name, Path: d.devPath(name)}
	if s, err := readTrim(filepath.Join(sysDir, "dev")); err == nil {
		if maj, min, ok := strings.Cut(s, ":"); ok {
			a, _ := strconv.ParseUint(maj, 10, 32)
			b, _ := strconv.ParseUint(min, 10, 32)
			c.Major, c.Minor = uint32(a), uint32(b)
		}
	}
	c.Present = kcall.SysfsExists(c.Path)
	return c
}

// rdmaCM describes the rdma_cm misc device.
func (d Discovery) rdmaCM() CharDev {
	for _, p := range []string{d.sysClass("misc/rdma_cm"), d.sysClass("infiniband_ucma/rdma_cm")} {
		if kcall.SysfsExists(p) {
			c := d.charDev(p, "rdma_cm")
			c.ABIVersion, _ = readInt(filepath.Join(p, "abi_version"))
			if c.ABIVersion == 0 {
				c.ABIVersion, _ = readInt(filepath.Join(filepath.Dir(p), "abi_version"))
			}
			return c
		}
	}
	c := CharDev{Name: "rdma_cm", Path: d.devPath("rdma_cm")}
	c.Present = kcall.SysfsExists(c.Path)
	return c
}

func (d Discovery) device(name string) (Device, error) {
	dir := filepath.Join(d.sysClass("infiniband"), name)
	dev := Device{Name: name, SysPath: dir}
	nt, err := readInt(filepath.Join(dir, "node_type"))
	if err != nil {
		return dev, &rdma.OpError{Pkg: "uverbs", Op: "read node type", Device: name, Path: filepath.Join(dir, "node_type"), Err: err}
	}
	dev.NodeType = NodeType(nt)
	if s, err := readTrim(filepath.Join(dir, "node_guid")); err == nil {
		dev.NodeGUID, _ = rdma.ParseGUID(s)
	}
	if s, err := readTrim(filepath.Join(dir, "sys_image_guid")); err == nil {
		dev.SysImageGUID, _ = rdma.ParseGUID(s)
	}
	dev.NodeDesc, _ = readTrim(filepath.Join(dir, "node_desc"))
	dev.FWVersion, _ = readTrim(filepath.Join(dir, "fw_ver"))
	dev.Parent, _ = readTrim(filepath.Join(dir, "parent"))
	if s, err := readTrim(filepath.Join(dir, "device", "modalias")); err == nil {
		dev.PCIVendor, dev.PCIDevice, _ = parsePCIModalias(s)
	}
	ports, err := kcall.SysfsReadDir(filepath.Join(dir, "ports"))
	if err != nil {
		return dev, &rdma.OpError{Pkg: "uverbs", Op: "list ports", Device: name, Path: filepath.Join(dir, "ports"), Err: err}
	}
	for _, pe := range ports {
		num, err := strconv.Atoi(pe)
		if err != nil {
			continue
		}
		p, err := d.port(dev, filepath.Join(dir, "ports", pe), num)
		if err != nil {
			return dev, err
		}
		dev.Ports = append(dev.Ports, p)
	}
	sort.Slice(dev.Ports, func(i, j int) bool { return dev.Ports[i].Num < dev.Ports[j].Num })
	return dev, nil
}

func (d Discovery) port(dev Device, dir string, num int) (Port, error) {
	p := Port{Num: num}
	st, err := readInt(filepath.Join(dir, "state"))
	if err != nil {
		return p, &rdma.OpError{Pkg: "uverbs", Op: "read port state", Device: dev.Name, Path: filepath.Join(dir, "state"), Err: err}
	}
	p.State = PortState(st)
	ps, _ := readInt(filepath.Join(dir, "phys_state"))
	p.PhysState = PhysState(ps)
	ll, _ := readTrim(filepath.Join(dir, "link_layer"))
	switch ll {
	case "InfiniBand":
		p.LinkLayer = LinkInfiniBand
	case "Ethernet":
		p.LinkLayer = LinkEthernet
	}
	lid, _ := readInt(filepath.Join(dir, "lid"))
	p.LID = uint16(lid)
	smlid, _ := readInt(filepath.Join(dir, "sm_lid"))
	p.SMLID = uint16(smlid)
	p.Rate, _ = readTrim(filepath.Join(dir, "rate"))
	capMask, _ := readInt(filepath.Join(dir, "cap_mask"))
	p.CapMask = uint32(capMask)
	if !d.SkipGIDs {
		p.GIDs = d.gids(dir, num, p.LinkLayer)
	}
	for _, g := range p.GIDs {
		if g.Netdev != "" {
			p.Netdev = g.Netdev
			break
		}
	}
	if p.Netdev == "" && p.LinkLayer == LinkEthernet {
		p.Netdev = dev.Parent
	}
	if p.Netdev != "" {
		p.NetdevMTU, _ = readInt(filepath.Join(d.sysClass("net"), p.Netdev, "mtu"))
	}
	if p.LinkLayer == LinkEthernet && p.NetdevMTU > 0 {
		p.ActiveMTU = RoCEMTU(p.NetdevMTU)
	}
	return p, nil
}

// RoCEMTU is the IB MTU soft-RoCE derives from a netdev MTU (rxe_param.h
// eth_mtu_int_to_enum: subtract the 80-byte maximum header, round down to
// an IB MTU, at most 4096; below 256 it uses 256).
func RoCEMTU(netdevMTU int) rdma.MTU {
	n := netdevMTU - 80
	switch {
	case n >= 4096:
		return rdma.MTU4096
	case n >= 2048:
		return rdma.MTU2048
	case n >= 1024:
		return rdma.MTU1024
	case n >= 512:
		return rdma.MTU512
	}
	return rdma.MTU256
}

// gids reads the valid entries of a port's GID table: non-zero GIDs whose
// type file is readable (the kernel fails the read with EINVAL for an
// unused slot).
func (d Discovery) gids(portDir string, port int, ll LinkLayer) []GIDEntry {
	entries, err := kcall.SysfsReadDir(filepath.Join(portDir, "gids"))
	if err != nil {
		return nil
	}
	var out []GIDEntry
	for _, e := range entries {
		idx, err := strconv.Atoi(e)
		if err != nil {
			continue
		}
		s, err := readTrim(filepath.Join(portDir, "gids", e))
		if err != nil {
			continue
		}
		g, err := rdma.ParseGID(s)
		if err != nil || g.IsZero() {
			continue
		}
		ent := GIDEntry{Port: port, Index: idx, GID: g}
		typ, err := readTrim(filepath.Join(portDir, "gid_attrs", "types", e))
		switch {
		case err != nil && ll == LinkEthernet:
			continue // RoCE slot without attributes: not in use
		case typ == "RoCE v2":
			ent.Type = GIDTypeRoCEv2
		case ll == LinkEthernet:
			ent.Type = GIDTypeRoCEv1 // "IB/RoCE v1" on an Ethernet port
		default:
			ent.Type = GIDTypeIB
		}
		ent.Netdev, _ = readTrim(filepath.Join(portDir, "gid_attrs", "ndevs", e))
		out = append(out, ent)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// openNode opens a device node read-write (providers mmap the uverbs fd)
// and checks that it is the character device sysfs announced. Permission
// problems name the node.
func openNode(c CharDev, dev string) (int, error) {
	if c.Path == "" {
		return -1, fmt.Errorf("uverbs: %w: %s has no uverbs character device (nothing in /sys/class/infiniband_verbs names it)", ErrNoDevice, dev)
	}
	fd, err := openFile(c.Path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return -1, fmt.Errorf("uverbs: %w: %s: device node %s does not exist", ErrNoDevice, dev, c.Path)
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return -1, &rdma.OpError{Pkg: "uverbs", Op: "open", Device: dev, Path: c.Path,
				Err: fmt.Errorf("no read-write access to the device node (check its mode, or udev rules / group membership): %w", err)}
		}
		return -1, &rdma.OpError{Pkg: "uverbs", Op: "open", Device: dev, Path: c.Path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &rdma.OpError{Pkg: "uverbs", Op: "stat", Device: dev, Path: c.Path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		unix.Close(fd)
		return -1, fmt.Errorf("uverbs: %w: %s: %s is not a character device", ErrNoDevice, dev, c.Path)
	}
	if c.Major != 0 && (unix.Major(uint64(st.Rdev)) != c.Major || unix.Minor(uint64(st.Rdev)) != c.Minor) {
		unix.Close(fd)
		return -1, fmt.Errorf("uverbs: %w: %s: %s is %d:%d but sysfs says %d:%d", ErrNoDevice, dev, c.Path,
			unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)), c.Major, c.Minor)
	}
	return fd, nil
}

// openFile is unix.Open; tests replace it to simulate permission errors
// (the host test runs as root, which ignores file modes).
var openFile = unix.Open

// parsePCIModalias reads the vendor and device ids of a PCI modalias,
// "pci:v000015B3d00001017sv…", as libibverbs' match_modalias does.
func parsePCIModalias(s string) (vendor, device uint16, ok bool) {
	rest, found := strings.CutPrefix(s, "pci:v")
	if !found || len(rest) < 8+1+8 || rest[8] != 'd' {
		return 0, 0, false
	}
	v, err1 := strconv.ParseUint(rest[:8], 16, 32)
	d, err2 := strconv.ParseUint(rest[9:17], 16, 32)
	if err1 != nil || err2 != nil || v > 0xffff || d > 0xffff {
		return 0, 0, false
	}
	return uint16(v), uint16(d), true
}
