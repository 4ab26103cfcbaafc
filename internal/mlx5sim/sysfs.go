//go:build linux

package mlx5sim

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-rdma/rdmacm/rdma"
)

// Fixed identity of the simulated device.
const (
	DeviceName = "mlx5_0"
	VerbsName  = "uverbs0"
	// NodeGUID and SysImageGUID, as sysfs prints them and as QUERY_DEVICE
	// returns them (big-endian).
	NodeGUID     = 0x0202c0fffe000201
	SysImageGUID = 0x0202c0fffe000201
	// FWVersion is fw_ver; QUERY_DEVICE carries it as major<<32|minor<<16|sub.
	fwMajor, fwMinor, fwSub = 16, 35, 2000
	// The verbs node is /dev/full: a character device 1:7.
	NodeMajor, NodeMinor = 1, 7
)

// GIDs of port 1 (RoCE): index 0 is RoCE v2 ::ffff:192.0.2.1, index 1 the
// link-local RoCE v1 GID. QUERY_PORT reports gid_tbl_len 2.
var portGIDs = []rdma.GID{
	{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 1},
	{0: 0xfe, 1: 0x80, 8: 0x00, 9: 0x02, 10: 0xc0, 11: 0xff, 12: 0xfe, 13: 0x00, 14: 0x02, 15: 0x01},
}

var portGIDTypes = []string{"RoCE v2", "IB/RoCE v1"}

func guidString(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// WriteSysfs writes the fake sysfs tree under dir: what libibverbs v44
// reads through SYSFS_PATH (init.c setup_sysfs_dev, match_modalias_device,
// sysfs GID queries) and what uverbs.Discovery{SysRoot: dir} reads.
func WriteSysfs(dir string, p Profile) error {
	files := map[string]string{
		"class/infiniband_verbs/abi_version":             "6",
		"class/infiniband_verbs/uverbs0/ibdev":           DeviceName,
		"class/infiniband_verbs/uverbs0/dev":             fmt.Sprintf("%d:%d", NodeMajor, NodeMinor),
		"class/infiniband_verbs/uverbs0/abi_version":     "1", // MLX5_IB_UVERBS_ABI_VERSION
		"class/infiniband/mlx5_0/node_type":              "1: CA",
		"class/infiniband/mlx5_0/node_guid":              guidString(NodeGUID),
		"class/infiniband/mlx5_0/sys_image_guid":         guidString(SysImageGUID),
		"class/infiniband/mlx5_0/fw_ver":                 fmt.Sprintf("%d.%d.%04d", fwMajor, fwMinor, fwSub),
		"class/infiniband/mlx5_0/node_desc":              "mlx5sim HCA-1",
		"class/infiniband/mlx5_0/hca_type":               fmt.Sprintf("MT%d", p.DevID),
		"class/infiniband/mlx5_0/hw_rev":                 "0",
		"class/infiniband/mlx5_0/board_id":               "MLX5SIM0000001",
		"class/infiniband/mlx5_0/device/modalias":        fmt.Sprintf("pci:v000015B3d%08Xsv000015B3sd00000008bc02sc00i00", p.DevID),
		"class/infiniband/mlx5_0/device/vendor":          "0x15b3",
		"class/infiniband/mlx5_0/device/device":          fmt.Sprintf("%#04x", p.DevID),
		"class/infiniband/mlx5_0/ports/1/state":          "4: ACTIVE",
		"class/infiniband/mlx5_0/ports/1/phys_state":     "5: LinkUp",
		"class/infiniband/mlx5_0/ports/1/link_layer":     "Ethernet",
		"class/infiniband/mlx5_0/ports/1/lid":            "0x0",
		"class/infiniband/mlx5_0/ports/1/lid_mask_count": "0",
		"class/infiniband/mlx5_0/ports/1/sm_lid":         "0x0",
		"class/infiniband/mlx5_0/ports/1/sm_sl":          "0",
		"class/infiniband/mlx5_0/ports/1/rate":           "100 Gb/sec (4X EDR)",
		"class/infiniband/mlx5_0/ports/1/cap_mask":       fmt.Sprintf("%#08x", portCapFlags),
		"class/infiniband/mlx5_0/ports/1/pkeys/0":        "0xffff",
	}
	for i, g := range portGIDs {
		files[fmt.Sprintf("class/infiniband/mlx5_0/ports/1/gids/%d", i)] = g.String()
		files[fmt.Sprintf("class/infiniband/mlx5_0/ports/1/gid_attrs/types/%d", i)] = portGIDTypes[i]
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteDevRoot makes dir/infiniband/uverbs0 a symlink to /dev/full, the
// node whose fstat rdev (1:7) marks a uverbs fd of the simulated device.
func WriteDevRoot(dir string) error {
	d := filepath.Join(dir, "infiniband")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	link := filepath.Join(d, VerbsName)
	if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Symlink("/dev/full", link)
}
