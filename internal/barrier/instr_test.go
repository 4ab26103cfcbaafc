//go:build linux && (amd64 || arm64)

package barrier

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"os"
	"runtime"
	"testing"
	"unsafe"
)

// TestBarrierInstructions reads this test binary's own code and counts
// the barrier instructions in each barrier function: the fences the
// udma_barrier.h macros emit on this GOARCH, and nothing else. Where
// they execute relative to the device-visible stores is compared with
// libmlx5's under qemu-user (internal/mlx5sim TestFences).
func TestBarrierInstructions(t *testing.T) {
	// Called, so that the linker keeps them (and they run).
	UDMAToDevice()
	UDMAFromDevice()
	MMIOFlushWrites()
	var rec uint32
	var src, dst [8]uint64
	DoorbellWC(&rec, 1, unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), 64, unsafe.Pointer(&src[0]), 0)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		t.Fatalf("%s has no .text or .gopclntab", exe)
	}
	tabData, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(tabData, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	body := func(name string) []byte {
		fn := tab.LookupFunc("github.com/go-rdma/rdmacm/internal/barrier." + name)
		if fn == nil {
			t.Fatalf("%s not found in the test binary", name)
		}
		return code[fn.Entry-text.Addr : fn.End-text.Addr]
	}
	type instr struct {
		name string
		enc  []byte
	}
	var lfence, sfence, mfence, dsbST, dsbLD instr
	var all []instr
	var want map[string][]string
	switch runtime.GOARCH {
	case "amd64":
		lfence, sfence, mfence = instr{"lfence", []byte{0x0f, 0xae, 0xe8}}, instr{"sfence", []byte{0x0f, 0xae, 0xf8}}, instr{"mfence", []byte{0x0f, 0xae, 0xf0}}
		all = []instr{lfence, sfence, mfence}
		want = map[string][]string{
			"udmaToDeviceBarrier":   nil,
			"udmaFromDeviceBarrier": {"lfence"},
			"mmioFlushWrites":       {"sfence"},
			"doorbellWC":            {"sfence", "sfence"},
		}
	case "arm64":
		word := func(w uint32) []byte { return binary.LittleEndian.AppendUint32(nil, w) }
		dsbST, dsbLD = instr{"dsb st", word(0xd5033e9f)}, instr{"dsb ld", word(0xd5033d9f)}
		all = []instr{dsbST, dsbLD}
		want = map[string][]string{
			"udmaToDeviceBarrier":   {"dsb st"},
			"udmaFromDeviceBarrier": {"dsb ld"},
			"mmioFlushWrites":       {"dsb st"},
		}
	}
	for fn, w := range want {
		b := body(fn)
		var got []string
		for i := 0; i < len(b); i++ {
			for _, in := range all {
				if bytes.HasPrefix(b[i:], in.enc) && (runtime.GOARCH != "arm64" || i%4 == 0) {
					got = append(got, in.name)
				}
			}
		}
		if len(got) != len(w) {
			t.Errorf("%s: barrier instructions %q, want %q", fn, got, w)
			continue
		}
		for i := range got {
			if got[i] != w[i] {
				t.Errorf("%s: barrier instructions %q, want %q", fn, got, w)
				break
			}
		}
	}
}
