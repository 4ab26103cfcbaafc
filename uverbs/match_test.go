package uverbs

import (
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
)

func TestParsePCIModalias(t *testing.T) {
	for _, c := range []struct {
		in     string
		v, d   uint16
		wantOK bool
	}{
		{"pci:v000015B3d00001017sv000015B3sd00000008bc02sc00i00", 0x15b3, 0x1017, true},
		{"pci:v000015b3d0000A2DCsv000015B3sd00000001bc02sc00i00", 0x15b3, 0xa2dc, true},
		{"pci:v000015B3d0000101", 0, 0, false},
		{"pci:v000015B3x00001017sv", 0, 0, false},
		{"pci:v000115B3d00001017sv", 0, 0, false},
		{"platform:foo", 0, 0, false},
		{"", 0, 0, false},
	} {
		v, d, ok := parsePCIModalias(c.in)
		if v != c.v || d != c.d || ok != c.wantOK {
			t.Errorf("parsePCIModalias(%q) = %#x, %#x, %v; want %#x, %#x, %v", c.in, v, d, ok, c.v, c.d, c.wantOK)
		}
	}
}

// A ConnectX renamed by udev (rocep59s0f0) is found by its PCI ids when
// netlink does not answer for it; libmlx5's whole hca_table matches, and
// other vendors or ids do not.
func TestDriverIDFromPCI(t *testing.T) {
	for _, id := range mlx5PCIDevices {
		if got := driverIDOf(Device{Name: "rocep59s0f0", PCIVendor: 0x15b3, PCIDevice: id}); got != abi.RDMADriverMLX5 {
			t.Errorf("device id %#x: driver %d, want mlx5 (%d)", id, got, abi.RDMADriverMLX5)
		}
	}
	for _, d := range []Device{
		{Name: "rocep59s0f0", PCIVendor: 0x15b3, PCIDevice: 0x1003}, // ConnectX-3: mlx4
		{Name: "rocep59s0f0", PCIVendor: 0x8086, PCIDevice: 0x1017},
		{Name: "rocep59s0f0"},
	} {
		if got := driverIDOf(d); got != abi.RDMADriverUnknown {
			t.Errorf("%+v: driver %d, want unknown", d, got)
		}
	}
	if got := driverIDOf(Device{Name: "mlx5_3"}); got != abi.RDMADriverMLX5 {
		t.Errorf("mlx5_3 by name: %d", got)
	}
}
