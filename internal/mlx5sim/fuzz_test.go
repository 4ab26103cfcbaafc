//go:build linux

package mlx5sim

import (
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// fuzzDevice is a device with an open context, a PD and a CQ (handles 0
// and 1), so that fuzzed commands reach the object handlers.
func fuzzDevice(t *testing.T, p Profile) (*Device, *fakeMem) {
	d := New(p)
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	allocPD(t, d, m)
	if p.DynamicUAR {
		c := newIoc(m, objUAR, 0x1000)
		c.add(0x1000, 0, 0)
		c.constv(0x1001, 1)
		c.out(0x1002, 8)
		c.out(0x1003, 4)
		c.out(0x1004, 4)
		if e := c.do(t, d, testFD); e != 0 {
			t.Fatal(e)
		}
		createCQ(t, d, m, 7, 2, 0x20)
	} else {
		createCQ(t, d, m, 7, 0, 0)
	}
	return d, m
}

func ioctlSeed(obj, meth uint16, attrs ...abi.IoctlAttr) []byte {
	h := abi.IoctlHdr{Length: uint16(24 + 16*len(attrs)), ObjectID: obj, MethodID: meth, NumAttrs: uint16(len(attrs)), DriverID: 1}
	b := append([]byte(nil), abi.Bytes(&h)...)
	for i := range attrs {
		b = append(b, abi.Bytes(&attrs[i])...)
	}
	return append(b, make([]byte, 128)...)
}

func FuzzIoctl(f *testing.F) {
	a := func(id, n uint16, data uint64) abi.IoctlAttr {
		return abi.IoctlAttr{AttrID: id, Len: n, Flags: 1, Data: data}
	}
	f.Add(ioctlSeed(0, 0, a(2, 8, 1)), uint8(0))
	f.Add(ioctlSeed(3, 0, a(0, 0, 0), a(1, 4, 7), a(2, 8, 1), a(4, 4, 0), a(6, 4, 0), a(uhwIn, 32, 0), a(uhwOut, 8, 0)), uint8(1))
	f.Add(ioctlSeed(4, 0, a(0, 0, 0), a(2, 0, 0), a(4, 0, 1), a(5, 0, 1), a(7, 8, 1), a(8, 20, 0), a(9, 8, 2), a(13, 20, 0), a(14, 4, 0), a(uhwIn, 56, 0), a(uhwOut, 40, 0)), uint8(2))
	f.Add(ioctlSeed(objUAR, 0x1000, a(0x1000, 0, 0), a(0x1001, 8, 1), a(0x1002, 8, 0), a(0x1003, 4, 0), a(0x1004, 4, 0)), uint8(3))
	f.Add(ioctlSeed(0, 5, a(0, 8, 32), a(2, 64, 0), a(3, 8, 0)), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		d, m := fuzzDevice(t, Profile{ECE: mode&1 == 0, DynamicUAR: mode&2 != 0, DevID: 0x1017})
		if len(data) < 24 {
			return
		}
		b := append([]byte(nil), data...)
		base := m.next
		n := (len(b) - 24) / 16
		if mode&4 == 0 && n > 0 { // make the header consistent, point pointers into b
			n = min(n, 20)
			ne.PutUint16(b[0:], uint16(24+16*n))
			ne.PutUint16(b[6:], uint16(n))
			ne.PutUint64(b[8:], 0)
			ne.PutUint32(b[16:], 1)
			ne.PutUint32(b[20:], 0)
			for i := 0; i < n; i++ {
				at := b[24+16*i:]
				if ne.Uint16(at[2:]) > 8 {
					ne.PutUint64(at[8:], base+ne.Uint64(at[8:])%uint64(len(b)))
				}
			}
		}
		if got := m.put(b); got != base {
			t.Fatalf("fake memory base moved")
		}
		d.Ioctl(m, testFD, abi.RDMAVerbsIoctl, base, int(mode>>4)-1)
		d.Snapshot(m, "fuzz")
		_ = d.Trace()
	})
}

func FuzzWrite(f *testing.F) {
	seed := func(cmd uint32, core, drv []byte) []byte {
		h := abi.UverbsCmdHdr{Command: cmd, InWords: uint16((8 + len(core) + len(drv)) / 4), OutWords: 32}
		return append(append(append([]byte(nil), abi.Bytes(&h)...), core...), drv...)
	}
	f.Add(seed(3, make([]byte, 8), nil), uint8(0))
	f.Add(seed(24, make([]byte, 56), make([]byte, 56)), uint8(0))
	f.Add(seed(18, make([]byte, 32), make([]byte, 32)), uint8(0))
	f.Add(seed(26, make([]byte, 112), nil), uint8(0))
	f.Add(seed(5, make([]byte, 56), nil), uint8(0))
	f.Add(seed(9, make([]byte, 40), nil), uint8(0))
	ex := abi.UverbsCmdHdr{Command: exFlag | 26, InWords: 15, OutWords: 1}
	exh := abi.UverbsExCmdHdr{ProviderInWords: 2, ProviderOutWords: 2}
	f.Add(append(append(append([]byte(nil), abi.Bytes(&ex)...), abi.Bytes(&exh)...), make([]byte, 136)...), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		d, m := fuzzDevice(t, Profile{ECE: mode&1 == 0, DynamicUAR: mode&2 != 0, DevID: 0x1017})
		if len(data) < 8 {
			return
		}
		b := append([]byte(nil), data...)
		base := m.next
		if mode&4 == 0 {
			if ne.Uint32(b)&exFlag == 0 {
				ne.PutUint16(b[4:], uint16(len(b)/4))
				if len(b) >= 16 {
					ne.PutUint64(b[8:], base+ne.Uint64(b[8:])%uint64(len(b)))
				}
			} else if len(b) >= 24 {
				ne.PutUint64(b[8:], base+ne.Uint64(b[8:])%uint64(len(b)))
			}
		}
		if got := m.put(b); got != base {
			t.Fatalf("fake memory base moved")
		}
		d.Write(m, testFD, base, uint64(len(b)), -1)
		d.Snapshot(m, "fuzz")
	})
}

func FuzzExec(f *testing.F) {
	f.Add("cqe cq0 op=req qp=qp0 counter=1")
	f.Add("cqe cq0 op=resp_send qp=qp0 counter=0 bytes=8 scatter=64 data=0102")
	f.Fuzz(func(t *testing.T, line string) {
		d, m := fuzzDevice(t, DefaultProfile())
		createQP(t, d, m, 0, 1, 0)
		d.Exec(m, line)
		d.Exec(m, line)
	})
}
