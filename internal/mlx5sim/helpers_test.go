//go:build linux

package mlx5sim

import (
	"encoding/binary"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

var ne = binary.NativeEndian

// fakeMem is a sandboxed user address space: segments at fake addresses,
// EFAULT elsewhere.
type fakeMem struct {
	next uint64
	segs map[uint64][]byte
}

func newFakeMem() *fakeMem { return &fakeMem{next: 0x7f0000000000, segs: map[uint64][]byte{}} }

func (m *fakeMem) alloc(n int) uint64 {
	a := m.next
	m.segs[a] = make([]byte, n)
	m.next += uint64(n+0xfff)&^0xfff + 0x1000
	return a
}

func (m *fakeMem) put(b []byte) uint64 {
	a := m.alloc(len(b))
	copy(m.segs[a], b)
	return a
}

func (m *fakeMem) find(addr uint64, n int) []byte {
	for a, s := range m.segs {
		if addr >= a && addr+uint64(n) <= a+uint64(len(s)) && addr+uint64(n) >= addr {
			return s[addr-a : addr-a+uint64(n)]
		}
	}
	return nil
}

func (m *fakeMem) Read(addr uint64, b []byte) error {
	s := m.find(addr, len(b))
	if s == nil {
		return unix.EFAULT
	}
	copy(b, s)
	return nil
}

func (m *fakeMem) Write(addr uint64, b []byte) error {
	s := m.find(addr, len(b))
	if s == nil {
		return unix.EFAULT
	}
	copy(s, b)
	return nil
}

func (m *fakeMem) bytes(addr uint64, n int) []byte { return m.find(addr, n) }

// ioc builds an RDMA_VERBS_IOCTL in fake memory.
type ioc struct {
	m     *fakeMem
	obj   uint16
	meth  uint16
	attrs []abi.IoctlAttr
	arg   uint64
}

func newIoc(m *fakeMem, obj, meth uint16) *ioc { return &ioc{m: m, obj: obj, meth: meth} }

func (c *ioc) add(id uint16, n int, data uint64) int {
	c.attrs = append(c.attrs, abi.IoctlAttr{AttrID: id, Len: uint16(n), Flags: abi.AttrFMandatory, Data: data})
	return len(c.attrs) - 1
}
func (c *ioc) constv(id uint16, v uint64) int { return c.add(id, 8, v) }
func (c *ioc) u32(id uint16, v uint32) int    { return c.add(id, 4, abi.InlineU32(v)) }
func (c *ioc) in(id uint16, b []byte) int {
	if len(b) <= 8 {
		return c.add(id, len(b), abi.InlineBytes(b))
	}
	return c.add(id, len(b), c.m.put(b))
}
func (c *ioc) out(id uint16, n int) int { return c.add(id, n, c.m.alloc(n)) }

func (c *ioc) do(t *testing.T, d *Device, fd int) unix.Errno {
	t.Helper()
	h := abi.IoctlHdr{Length: uint16(24 + 16*len(c.attrs)), ObjectID: c.obj, MethodID: c.meth, NumAttrs: uint16(len(c.attrs)), DriverID: abi.RDMADriverMLX5}
	b := append([]byte(nil), abi.Bytes(&h)...)
	for i := range c.attrs {
		b = append(b, abi.Bytes(&c.attrs[i])...)
	}
	c.arg = c.m.put(b)
	_, _, e := d.Ioctl(c.m, fd, abi.RDMAVerbsIoctl, c.arg, -1)
	// Read back the attributes (flags, data).
	raw := c.m.bytes(c.arg+24, 16*len(c.attrs))
	for i := range c.attrs {
		c.attrs[i] = abi.Decode[abi.IoctlAttr](raw[16*i:])
	}
	return e
}

func (c *ioc) outBytes(i int) []byte { return c.m.bytes(c.attrs[i].Data, int(c.attrs[i].Len)) }

// wr builds a legacy write command: header, core request (the response
// pointer first when resp > 0), driver data.
func wr(m *fakeMem, cmd uint32, core []byte, drv []byte, resp, drvOut int) (buf uint64, n int, respAddr uint64) {
	if resp+drvOut > 0 {
		respAddr = m.alloc(resp + drvOut)
		ne.PutUint64(core, respAddr)
	}
	body := append(append([]byte(nil), core...), drv...)
	h := abi.UverbsCmdHdr{Command: cmd, InWords: uint16((8 + len(body)) / 4), OutWords: uint16((resp + drvOut) / 4)}
	b := append(append([]byte(nil), abi.Bytes(&h)...), body...)
	return m.put(b), len(b), respAddr
}

// openCtx runs GET_CONTEXT over ioctl (after the DEVX-less retry) and
// returns the mlx5 context response.
func openCtx(t *testing.T, d *Device, m *fakeMem, fd int, libCaps uint64) abi.MLX5AllocUcontextResp {
	t.Helper()
	req := abi.MLX5AllocUcontextReqV2{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, MaxCQEVersion: 1, LibCaps: libCaps}
	c := newIoc(m, 0, 3)
	c.out(0, 4)
	c.out(1, 8)
	c.in(uhwIn, abi.Bytes(&req))
	o := c.out(uhwOut, 72)
	if e := c.do(t, d, fd); e != 0 {
		t.Fatalf("GET_CONTEXT: %v", e)
	}
	return abi.Decode[abi.MLX5AllocUcontextResp](c.outBytes(o))
}
