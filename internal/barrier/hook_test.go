package barrier

import (
	"reflect"
	"runtime"
	"testing"
)

// wantBarrierInstrs is what the hook must see for UDMAToDevice,
// UDMAFromDevice and MMIOFlushWrites, in that order, per GOARCH
// ("" = no call: the barrier emits no instruction).
func wantBarrierInstrs() [3]string {
	switch runtime.GOARCH {
	case "amd64":
		return [3]string{"", "lfence", "sfence"}
	case "arm64":
		return [3]string{"dsb st", "dsb ld", "dsb st"}
	case "ppc64", "ppc64le":
		return [3]string{"sync", "lwsync", "sync"}
	case "riscv64":
		return [3]string{"fence ow,ow", "fence ir,ir", "fence ow,ow"}
	}
	// barrier_other.go: the atomic add sync/atomic compiles to.
	f := "atomic add"
	switch runtime.GOARCH {
	case "386":
		f = "lock xadd"
	case "s390x":
		f = "laa"
	case "loong64":
		f = "amadd_db.w"
	case "mips", "mipsle", "mips64", "mips64le":
		f = "sync"
	}
	return [3]string{f, f, f}
}

func TestBarrierHook(t *testing.T) {
	var got []string
	restore := SetHook(func(instr string) { got = append(got, instr) })
	UDMAToDevice()
	UDMAFromDevice()
	MMIOFlushWrites()
	var want []string
	for _, w := range wantBarrierInstrs() {
		if w != "" {
			want = append(want, w)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hook saw %q, want %q", got, want)
	}

	// A nested hook replaces the first until restored.
	var inner []string
	restoreInner := SetHook(func(instr string) { inner = append(inner, instr) })
	got = nil
	MMIOFlushWrites()
	if len(got) != 0 || len(inner) != 1 || inner[0] != wantBarrierInstrs()[2] {
		t.Errorf("nested hook: outer saw %q, inner %q", got, inner)
	}
	restoreInner()
	MMIOFlushWrites()
	if len(got) != 1 || len(inner) != 1 {
		t.Errorf("after restoring the inner hook: outer saw %q, inner %q", got, inner)
	}

	restore()
	got = nil
	UDMAToDevice()
	UDMAFromDevice()
	MMIOFlushWrites()
	if len(got) != 0 || barrierHook.Load() != nil {
		t.Errorf("after restore the hook still saw %q", got)
	}

	// A nil hook is no hook.
	restoreNil := SetHook(nil)
	MMIOFlushWrites()
	restoreNil()
}

func BenchmarkMMIOFlushWritesNoHook(b *testing.B) {
	for b.Loop() {
		MMIOFlushWrites()
	}
}
