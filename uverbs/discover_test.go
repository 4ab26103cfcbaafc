package uverbs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// fakeTree builds a sysfs and /dev tree like a guest with rxe0 on eth0:
// files as the kernel formats them (drivers/infiniband/core/sysfs.c).
type fakeTree struct {
	t    *testing.T
	root string
}

func newFakeTree(t *testing.T) *fakeTree {
	return &fakeTree{t: t, root: t.TempDir()}
}

func (f *fakeTree) disc() Discovery {
	return Discovery{SysRoot: filepath.Join(f.root, "sys"), DevRoot: filepath.Join(f.root, "dev")}
}

func (f *fakeTree) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// rxe writes an rxe device with one Ethernet port and a RoCE v1 + v2 GID
// pair for the link-local and an IPv4-mapped address, plus unused slots.
func (f *fakeTree) rxe(name, uverbs, netdev string) {
	dev := "sys/class/infiniband/" + name + "/"
	f.write(dev+"node_type", "1: CA")
	f.write(dev+"node_guid", "5054:00ff:fe12:3456")
	f.write(dev+"sys_image_guid", "5054:00ff:fe12:3456")
	f.write(dev+"node_desc", name)
	f.write(dev+"fw_ver", "0.0.0")
	f.write(dev+"parent", netdev)
	p := dev + "ports/1/"
	f.write(p+"state", "4: ACTIVE")
	f.write(p+"phys_state", "5: LinkUp")
	f.write(p+"link_layer", "Ethernet")
	f.write(p+"lid", "0x0")
	f.write(p+"sm_lid", "0x0")
	f.write(p+"rate", "10 Gb/sec (1X QDR)")
	f.write(p+"cap_mask", "0x00890000")
	gids := []struct{ gid, typ string }{
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1"},
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2"},
		{"0000:0000:0000:0000:0000:ffff:c000:0201", "IB/RoCE v1"},
		{"0000:0000:0000:0000:0000:ffff:c000:0201", "RoCE v2"},
	}
	for i, g := range gids {
		n := string(rune('0' + i))
		f.write(p+"gids/"+n, g.gid)
		f.write(p+"gid_attrs/types/"+n, g.typ)
		f.write(p+"gid_attrs/ndevs/"+n, netdev)
	}
	// Unused slots read as zeros; their attribute files fail (EINVAL).
	f.write(p+"gids/4", "0000:0000:0000:0000:0000:0000:0000:0000")
	f.write(p+"gids/5", "0000:0000:0000:0000:0000:0000:0000:0000")
	f.write("sys/class/net/"+netdev+"/mtu", "1500")
	v := "sys/class/infiniband_verbs/"
	f.write(v+"abi_version", "6")
	f.write(v+uverbs+"/ibdev", name)
	f.write(v+uverbs+"/dev", "231:192")
	f.write(v+uverbs+"/abi_version", "2")
	f.write("dev/infiniband/"+uverbs, "")
	m := "sys/class/infiniband_mad/"
	f.write(m+"abi_version", "5")
	f.write(m+"umad0/ibdev", name)
	f.write(m+"umad0/port", "1")
	f.write(m+"umad0/dev", "231:0")
	f.write(m+"issm0/ibdev", name)
	f.write(m+"issm0/port", "1")
	f.write("dev/infiniband/umad0", "")
	f.write("sys/class/misc/rdma_cm/dev", "10:124")
	f.write("sys/class/misc/rdma_cm/abi_version", "4")
	f.write("dev/infiniband/rdma_cm", "")
}

func TestDiscoverRXE(t *testing.T) {
	f := newFakeTree(t)
	f.rxe("rxe0", "uverbs0", "eth0")
	devs, err := f.disc().Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 {
		t.Fatalf("%d devices", len(devs))
	}
	d := devs[0]
	if d.Name != "rxe0" || d.NodeType != NodeCA || d.NodeGUID.String() != "5054:00ff:fe12:3456" || d.Parent != "eth0" {
		t.Errorf("device %+v", d)
	}
	if d.NodeGUID != (rdma.GUID{0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56}) {
		t.Errorf("GUID bytes % x", d.NodeGUID)
	}
	wantVerbs := CharDev{Name: "uverbs0", Path: filepath.Join(f.root, "dev/infiniband/uverbs0"), Major: 231, Minor: 192, ABIVersion: 2, Present: true}
	if d.Verbs != wantVerbs {
		t.Errorf("verbs %+v, want %+v", d.Verbs, wantVerbs)
	}
	if len(d.UMAD) != 1 || d.UMAD[0].Name != "umad0" || d.UMAD[0].Port != 1 || d.UMAD[0].ABIVersion != 5 || !d.UMAD[0].Present {
		t.Errorf("umad %+v", d.UMAD)
	}
	if len(d.ISSM) != 1 || d.ISSM[0].Present {
		t.Errorf("issm %+v (its node is missing)", d.ISSM)
	}
	if d.RDMACM.Name != "rdma_cm" || d.RDMACM.ABIVersion != 4 || d.RDMACM.Major != 10 || d.RDMACM.Minor != 124 || !d.RDMACM.Present {
		t.Errorf("rdma_cm %+v", d.RDMACM)
	}
	if len(d.Ports) != 1 {
		t.Fatalf("ports %+v", d.Ports)
	}
	p := d.Ports[0]
	if p.Num != 1 || p.State != PortActive || p.PhysState != PhysLinkUp || p.LinkLayer != LinkEthernet ||
		p.Netdev != "eth0" || p.NetdevMTU != 1500 || p.ActiveMTU != rdma.MTU1024 || p.CapMask != 0x890000 {
		t.Errorf("port %+v", p)
	}
	want := []struct {
		idx int
		typ GIDType
		gid string
	}{
		{0, GIDTypeRoCEv1, "fe80:0000:0000:0000:5054:00ff:fe12:3456"},
		{1, GIDTypeRoCEv2, "fe80:0000:0000:0000:5054:00ff:fe12:3456"},
		{2, GIDTypeRoCEv1, "0000:0000:0000:0000:0000:ffff:c000:0201"},
		{3, GIDTypeRoCEv2, "0000:0000:0000:0000:0000:ffff:c000:0201"},
	}
	if len(p.GIDs) != len(want) {
		t.Fatalf("GIDs %+v", p.GIDs)
	}
	for i, w := range want {
		g := p.GIDs[i]
		if g.Index != w.idx || g.Type != w.typ || g.GID.String() != w.gid || g.Netdev != "eth0" || g.Port != 1 {
			t.Errorf("GID %d: %+v (%v %v), want %+v", i, g, g.GID, g.Type, w)
		}
	}
	if got, err := f.disc().Device(""); err != nil || got.Name != "rxe0" {
		t.Errorf("Device(\"\") = %v, %v", got.Name, err)
	}
}

// TestDiscoverSkipGIDs: without the GID tables, the rest of the device is
// the same (the port's netdev comes from the device's parent).
func TestDiscoverSkipGIDs(t *testing.T) {
	f := newFakeTree(t)
	f.rxe("rxe0", "uverbs0", "eth0")
	full, err := f.disc().Devices()
	if err != nil {
		t.Fatal(err)
	}
	d := f.disc()
	d.SkipGIDs = true
	light, err := d.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(light) != 1 || len(light[0].Ports) != 1 || len(light[0].Ports[0].GIDs) != 0 {
		t.Fatalf("SkipGIDs: %+v", light)
	}
	full[0].Ports[0].GIDs = nil
	if !reflect.DeepEqual(full, light) {
		t.Errorf("SkipGIDs changed more than the GIDs:\n%+v\n%+v", full, light)
	}
}

func TestDiscoverInfiniBandPort(t *testing.T) {
	f := newFakeTree(t)
	f.rxe("mlx5_0", "uverbs1", "ib0")
	p := "sys/class/infiniband/mlx5_0/ports/1/"
	f.write(p+"link_layer", "InfiniBand")
	f.write(p+"lid", "0x1a")
	f.write(p+"gid_attrs/ndevs/0", "") // IB GIDs have no netdev
	os.Remove(filepath.Join(f.root, p, "gid_attrs/types/1"))
	devs, err := f.disc().Devices()
	if err != nil {
		t.Fatal(err)
	}
	port := devs[0].Ports[0]
	if port.LID != 0x1a || port.LinkLayer != LinkInfiniBand || port.ActiveMTU != 0 {
		t.Errorf("port %+v", port)
	}
	// On IB "IB/RoCE v1" means IB, and a slot whose type cannot be read
	// is still an IB GID.
	if port.GIDs[0].Type != GIDTypeIB || port.GIDs[1].Type != GIDTypeIB || port.GIDs[1].Index != 1 {
		t.Errorf("GIDs %+v", port.GIDs)
	}
}

func TestDiscoverSeveralDevicesSorted(t *testing.T) {
	f := newFakeTree(t)
	f.rxe("rxe1", "uverbs1", "eth1")
	f.rxe("rxe0", "uverbs0", "eth0")
	devs, err := f.disc().Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[0].Name != "rxe0" || devs[1].Name != "rxe1" || devs[1].Verbs.Name != "uverbs1" {
		t.Fatalf("devices %v %v", devs[0].Name, devs[1].Verbs)
	}
	_, err = f.disc().Device("mlx5_0")
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "rxe0, rxe1") {
		t.Errorf("unknown device: %v", err)
	}
}

func TestNoDeviceNamesWhereItLooked(t *testing.T) {
	f := newFakeTree(t)
	_, err := f.disc().Devices()
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("err = %v, want ErrNoDevice", err)
	}
	for _, want := range []string{
		filepath.Join(f.root, "sys/class/infiniband"),
		filepath.Join(f.root, "sys/class/infiniband_verbs"),
		filepath.Join(f.root, "dev/infiniband"),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	// An empty class directory is no device either.
	os.MkdirAll(filepath.Join(f.root, "sys/class/infiniband"), 0o755)
	if _, err := f.disc().Devices(); !errors.Is(err, ErrNoDevice) {
		t.Errorf("empty class: %v", err)
	}
}

func TestMissingUverbsModule(t *testing.T) {
	f := newFakeTree(t)
	f.rxe("rxe0", "uverbs0", "eth0")
	os.RemoveAll(filepath.Join(f.root, "sys/class/infiniband_verbs"))
	_, err := f.disc().Devices()
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "ib_uverbs") {
		t.Fatalf("err = %v", err)
	}
}

func TestUnsupportedABIVersion(t *testing.T) {
	f := newFakeTree(t)
	f.rxe("rxe0", "uverbs0", "eth0")
	f.write("sys/class/infiniband_verbs/abi_version", "7")
	_, err := f.disc().Devices()
	if !errors.Is(err, ErrABIVersion) {
		t.Fatalf("err = %v, want ErrABIVersion", err)
	}
	if !strings.Contains(err.Error(), "says 7") || !strings.Contains(err.Error(), "ABI 6") || !strings.Contains(err.Error(), "abi_version") {
		t.Errorf("message %q", err)
	}
}

func TestOpenErrorsNameTheNode(t *testing.T) {
	f := newFakeTree(t)
	f.rxe("rxe0", "uverbs0", "eth0")
	dev, err := f.disc().Device("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(f.root, "dev/infiniband/uverbs0")

	// A regular file where the node should be is refused before any
	// ioctl or write reaches it.
	_, err = OpenDevice(dev, nil)
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), node) || !strings.Contains(err.Error(), "not a character device") {
		t.Errorf("regular file: %v", err)
	}

	// Permission denied names the node and keeps the errno.
	old := openFile
	openFile = func(string, int, uint32) (int, error) { return -1, unix.EACCES }
	defer func() { openFile = old }()
	_, err = OpenDevice(dev, nil)
	if !errors.Is(err, ErrPermission) || !errors.Is(err, unix.EACCES) || !strings.Contains(err.Error(), node) {
		t.Errorf("EACCES: %v", err)
	}
	openFile = old

	// A node that does not exist.
	os.Remove(node)
	dev.Verbs.Present = false
	_, err = OpenDevice(dev, nil)
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), node) {
		t.Errorf("missing node: %v", err)
	}

	// A device without a uverbs node at all.
	dev.Verbs = CharDev{}
	_, err = OpenDevice(dev, nil)
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "rxe0") {
		t.Errorf("no uverbs: %v", err)
	}
}

func TestParseGIDAndGUID(t *testing.T) {
	g, err := rdma.ParseGID("fe80:0000:0000:0000:5054:00ff:fe12:3456")
	if err != nil || g[0] != 0xfe || g[15] != 0x56 {
		t.Fatalf("%v %v", g, err)
	}
	for _, bad := range []string{"", "fe80::1", "fe80:0:0:0:0:0:0:zz", "1:2:3:4:5:6:7:8:9"} {
		if _, err := rdma.ParseGID(bad); err == nil {
			t.Errorf("ParseGID(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "5054:00ff:fe12", "5054:00ff:fe12:34567", "x054:00ff:fe12:3456"} {
		if _, err := rdma.ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
}

func TestRoCEMTU(t *testing.T) {
	for _, c := range []struct {
		netdev int
		want   rdma.MTU
	}{{1500, rdma.MTU1024}, {1103, rdma.MTU512}, {1104, rdma.MTU1024}, {2128, rdma.MTU2048}, {4176, rdma.MTU4096}, {9000, rdma.MTU4096}, {300, rdma.MTU256}} {
		if got := RoCEMTU(c.netdev); got != c.want {
			t.Errorf("RoCEMTU(%d) = %v, want %v", c.netdev, got, c.want)
		}
	}
}

func TestErrorsMatchErrnos(t *testing.T) {
	err := opErr("create QP", "rxe0", unix.EOPNOTSUPP)
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, ErrPermission) {
		t.Errorf("EOPNOTSUPP: %v", err)
	}
	if err := opErr("x", "", unix.EPROTONOSUPPORT); !errors.Is(err, ErrNotSupported) {
		t.Error("EPROTONOSUPPORT is not ErrNotSupported")
	}
	if err := opErr("x", "", unix.EPERM); !errors.Is(err, ErrPermission) || !errors.Is(err, unix.EPERM) {
		t.Error("EPERM is not ErrPermission")
	}
	ns := notSupported("query ECE", "rxe0", "rxe has no ECE")
	if !errors.Is(ns, ErrNotSupported) || !errors.Is(ns, unix.EOPNOTSUPP) || !strings.Contains(ns.Error(), "rxe0") {
		t.Errorf("notSupported: %v", ns)
	}
}
