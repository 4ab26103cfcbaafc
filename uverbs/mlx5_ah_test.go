package uverbs

// mlx5_create_ah without hardware: the checks made before the command
// and the address vector's bytes (struct mlx5_wqe_av).

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
)

func TestMLX5AHChecks(t *testing.T) {
	p := &mlx5Provider{numPorts: 2}
	p.linkLayer[0] = LinkEthernet
	p.linkLayer[1] = LinkInfiniBand
	global := qp.AH{IsGlobal: true, PortNum: 1}
	for _, c := range []struct {
		name  string
		a     qp.AH
		flags uint8
		ok    bool
	}{
		{"RoCE with a GRH", global, 0, true},
		{"RoCE without a GRH", qp.AH{PortNum: 1}, 0, false},
		{"IB without a GRH", qp.AH{PortNum: 2, DLID: 7}, 0, true},
		{"IB that requires a GRH, without one", qp.AH{PortNum: 2, DLID: 7}, 1, false},
		{"port 0", qp.AH{IsGlobal: true}, 0, false},
		{"port 3", qp.AH{IsGlobal: true, PortNum: 3}, 0, false},
	} {
		p.portFlags[1] = c.flags
		out, err := p.ahData(c.a)
		switch {
		case c.ok && (err != nil || len(out) == 0):
			t.Errorf("%s: %v (%d-byte buffer)", c.name, err, len(out))
		case !c.ok && !errors.Is(err, ErrInvalidArgument):
			t.Errorf("%s: %v, want ErrInvalidArgument", c.name, err)
		}
	}
}

func TestMLX5AHAddressVector(t *testing.T) {
	p := &mlx5Provider{numPorts: 1}
	p.linkLayer[0] = LinkEthernet
	a := qp.AH{IsGlobal: true, PortNum: 1, SL: 13, StaticRate: 3, GRH: qp.GRH{
		DGID: [16]byte{15: 9}, FlowLabel: 0x1abcde, SGIDIndex: 1, HopLimit: 3, TrafficClass: 0xb8}}
	ah := &AH{Attr: a}
	resp := make([]byte, 12)
	copy(resp[4:10], []byte{2, 0, 0xc0, 0, 2, 2})
	p.ahCreated(ah, resp)
	av := p.av(ah.num)
	// RoCE: rate 10 Gb/s is 8, and the SL in bits 1-3 (three bits only).
	if av[12] != 8<<4|5<<1 {
		t.Errorf("stat_rate_sl %#x, want %#x", av[12], 8<<4|5<<1)
	}
	if av[26] != 0xb8 || av[27] != 3 {
		t.Errorf("tclass %#x hop_limit %d", av[26], av[27])
	}
	// grh_gid_fl big-endian: no GRH bit on RoCE, SGID index, 20-bit flow label.
	if g := binary.BigEndian.Uint32(av[28:]); g != 1<<20|0xabcde {
		t.Errorf("grh_gid_fl %#x, want %#x", g, 1<<20|0xabcde)
	}
	if av[47] != 9 || av[20] != 2 || av[25] != 2 {
		t.Errorf("rgid or rmac: % x", av[:])
	}
}

func TestMLX5AHGIDType(t *testing.T) {
	dir := t.TempDir()
	types := filepath.Join(dir, "ports", "1", "gid_attrs", "types")
	if err := os.MkdirAll(types, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(types, "0"), []byte("RoCE v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &mlx5Provider{numPorts: 1, x: &Context{dev: Device{Name: "mlx5_0", SysPath: dir}, nativeIoctl: true}}
	p.linkLayer[0] = LinkEthernet
	ah := func(idx uint8) qp.AH { return qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{SGIDIndex: idx}} }
	if _, err := p.ahData(ah(0)); err != nil {
		t.Fatalf("GID 0: %v", err)
	}
	// Past the table: the kernel's QUERY_GID_ENTRY answer, or libibverbs'
	// sysfs fallback's.
	if _, err := p.ahData(ah(5)); !errors.Is(err, unix.EINVAL) {
		t.Errorf("GID 5 (ioctl): %v, want EINVAL", err)
	}
	p.x.nativeIoctl = false
	if _, err := p.ahData(ah(5)); !errors.Is(err, unix.EFAULT) {
		t.Errorf("GID 5 (write): %v, want EFAULT", err)
	}
	// No GID attributes at all: an old kernel, every GID v1.
	p.x.dev.SysPath = t.TempDir()
	if _, err := p.ahData(ah(5)); err != nil {
		t.Errorf("GID 5 without gid_attrs: %v", err)
	}
}
