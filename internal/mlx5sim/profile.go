//go:build linux

package mlx5sim

import (
	"fmt"
	"strconv"
	"strings"
)

// Profile is the simulated device's configuration, from the scenario line
// `profile uar=static|dynamic ece=0|1 devid=0x1017 iface=ioctl|write`.
type Profile struct {
	// DynamicUAR: the context answer has tot_bfregs 0 and UARs come from
	// MLX5_IB_METHOD_UAR_OBJ_ALLOC (kernel >= 5.8 with a library asking
	// MLX5_LIB_CAP_DYN_UAR). Otherwise static bfregs are mapped at open.
	DynamicUAR bool
	// ECE: firmware with ece_support (MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE).
	ECE bool
	// DevID is the PCI device id (0x1017 ConnectX-5).
	DevID uint16
	// WriteOnly: every RDMA_VERBS_IOCTL fails with ENOTTY, so both stacks
	// use write() commands.
	WriteOnly bool
	// NoClock hides the core clock and clock-info pages (clock=0); by
	// default the context answer offers both, as mlx5_ib does on x86.
	NoClock bool
	// NoAtomic: QUERY_DEVICE reports atomic_cap ATOMIC_NONE (atomic=none);
	// by default ATOMIC_HCA (atomic=hca), as mlx5_ib's get_atomic_caps.
	NoAtomic bool
	// PageSize is the simulated kernel's page size (page=4096|16384|65536;
	// arm64 kernels run with 16 KiB or 64 KiB pages): both stacks read it
	// as sysconf(_SC_PAGESIZE) (the C side through the shim, ours through
	// kcall.PageSize), and the device sizes UAR and clock pages, mmap
	// offsets and the bfregs per system page by it.
	PageSize int
}

// DefaultProfile is static UARs, ECE, ConnectX-5, ioctl.
func DefaultProfile() Profile { return Profile{ECE: true, DevID: 0x1017, PageSize: 4096} }

// ParseProfile parses a profile line ("profile k=v ..." or just "k=v ...");
// unset keys keep their defaults.
func ParseProfile(line string) (Profile, error) {
	p := DefaultProfile()
	f := strings.Fields(line)
	if len(f) > 0 && f[0] == "profile" {
		f = f[1:]
	}
	for _, kv := range f {
		if strings.HasPrefix(kv, "#") {
			break
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, fmt.Errorf("mlx5sim: profile: %q is not key=value", kv)
		}
		switch k {
		case "uar":
			switch v {
			case "static":
				p.DynamicUAR = false
			case "dynamic":
				p.DynamicUAR = true
			default:
				return p, fmt.Errorf("mlx5sim: profile: uar=%q (static|dynamic)", v)
			}
		case "ece", "clock":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return p, fmt.Errorf("mlx5sim: profile: %s=%q (0|1)", k, v)
			}
			if k == "ece" {
				p.ECE = b
			} else {
				p.NoClock = !b
			}
		case "devid":
			n, err := strconv.ParseUint(v, 0, 16)
			if err != nil {
				return p, fmt.Errorf("mlx5sim: profile: devid=%q", v)
			}
			p.DevID = uint16(n)
		case "iface":
			switch v {
			case "ioctl":
				p.WriteOnly = false
			case "write":
				p.WriteOnly = true
			default:
				return p, fmt.Errorf("mlx5sim: profile: iface=%q (ioctl|write)", v)
			}
		case "atomic":
			switch v {
			case "none":
				p.NoAtomic = true
			case "hca":
				p.NoAtomic = false
			default:
				return p, fmt.Errorf("mlx5sim: profile: atomic=%q (none|hca)", v)
			}
		case "page":
			n, err := strconv.Atoi(v)
			if err != nil || (n != 4096 && n != 16384 && n != 65536) {
				return p, fmt.Errorf("mlx5sim: profile: page=%q (4096|16384|65536)", v)
			}
			p.PageSize = n
		default:
			return p, fmt.Errorf("mlx5sim: profile: unknown key %q", k)
		}
	}
	if p.DynamicUAR && p.WriteOnly {
		// UARs are allocated dynamically only through the mlx5
		// UAR_OBJ_ALLOC ioctl method (Linux 5.8); a kernel without the
		// ioctl interface at all predates it by years.
		return p, fmt.Errorf("mlx5sim: profile: uar=dynamic needs the ioctl interface (UAR_OBJ_ALLOC is an ioctl method), not iface=write")
	}
	return p, nil
}

// String is the profile as a scenario line.
func (p Profile) String() string {
	uar, iface := "static", "ioctl"
	if p.DynamicUAR {
		uar = "dynamic"
	}
	if p.WriteOnly {
		iface = "write"
	}
	s := fmt.Sprintf("profile uar=%s ece=%d devid=%#x iface=%s", uar, b2i(p.ECE), p.DevID, iface)
	if p.NoClock {
		s += " clock=0"
	}
	if p.NoAtomic {
		s += " atomic=none"
	}
	if p.PageSize != 0 && p.PageSize != 4096 {
		s += fmt.Sprintf(" page=%d", p.PageSize)
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pageSize is the simulated kernel's PAGE_SIZE.
func (d *Device) pageSize() uint64 { return uint64(d.p.PageSize) }

// PageSize makes the in-process stack see the profile's page size
// (kcall.PageSizer).
func (s *seam) PageSize() int { return s.d.p.PageSize }
