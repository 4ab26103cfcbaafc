//go:build linux

package mlx5sim

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Fences: c/fenceplugin.c, a QEMU TCG plugin, reports each barrier
// instruction a traced guest thread is about to execute (kind 9, with its
// address). Only the provider's own barriers are compared: a Device with
// a FenceFilter records a barrier (Device.Fence) only when the filter
// attributes its address to the provider's code, and notes every report
// in its fence log either way. The C program's libc and the Go runtime
// execute barriers of their own (glibc's non-temporal memcpy ends with
// sfence; Go's mallocgc publishes with DMB ISHST on arm64), which depend
// on the allocator and the C library, not on the provider.

// FenceFilter attributes the barrier at pc in process pid: where names
// the code (for the fence log) and provider says whether it is the
// provider's.
type FenceFilter func(pid int, pc uint64) (where string, provider bool)

// SetFenceFilter makes kind 9 requests go through f (nil: every one is
// recorded).
func (d *Device) SetFenceFilter(f FenceFilter) {
	d.mu.Lock()
	d.fenceFilter = f
	d.mu.Unlock()
}

// FenceLog returns one line per barrier reported (kind 9): "NAME at
// WHERE", with " (not the provider's)" for the ones not recorded.
func (d *Device) FenceLog() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.fenceLog...)
}

// reportedFence serves a kind 9 request.
func (d *Device) reportedFence(mem ProcMem, instr string, pc uint64) {
	d.mu.Lock()
	f := d.fenceFilter
	d.mu.Unlock()
	where, ok := fmt.Sprintf("%#x", pc), true
	if f != nil {
		where, ok = f(mem.Pid, pc)
	}
	line := instr + " at " + where
	if !ok {
		line += " (not the provider's)"
	}
	d.mu.Lock()
	d.fenceLog = append(d.fenceLog, line)
	d.mu.Unlock()
	if ok {
		d.Fence(mem, instr)
	}
}

// LibFenceFilter attributes a barrier to the shared library mapped at its
// address (/proc/PID/maps; qemu-user maps a 64-bit guest at guest_base 0,
// so guest addresses are the emulator's): the provider's when the file's
// name starts with prefix ("libmlx5").
func LibFenceFilter(prefix string) FenceFilter {
	return func(pid int, pc uint64) (string, bool) {
		f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
		if err != nil {
			return fmt.Sprintf("%#x (maps: %v)", pc, err), false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// start-end perms offset dev inode path
			fl := strings.Fields(sc.Text())
			if len(fl) < 6 {
				continue
			}
			lo, hi, ok := strings.Cut(fl[0], "-")
			if !ok {
				continue
			}
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			off, err3 := strconv.ParseUint(fl[2], 16, 64)
			if err1 != nil || err2 != nil || err3 != nil || pc < start || pc >= end {
				continue
			}
			base := filepath.Base(fl[5])
			return fmt.Sprintf("%s+%#x", base, pc-start+off), strings.HasPrefix(base, prefix)
		}
		return fmt.Sprintf("%#x (unmapped)", pc), false
	}
}

// GoFenceFilter attributes a barrier to the function of the Go executable
// bin (not position-independent: its addresses are those of its
// pclntab, which even a stripped test binary keeps) that contains it: the
// provider's when the function is in a package under modPrefix
// ("github.com/go-rdma/rdmacm/").
func GoFenceFilter(bin, modPrefix string) (FenceFilter, error) {
	ef, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("mlx5sim: %w", err)
	}
	defer ef.Close()
	if ef.Type != elf.ET_EXEC {
		return nil, fmt.Errorf("mlx5sim: %s is position-independent: build it with -buildmode=exe", bin)
	}
	pcln, text := ef.Section(".gopclntab"), ef.Section(".text")
	if pcln == nil || text == nil {
		return nil, fmt.Errorf("mlx5sim: %s has no .gopclntab or .text", bin)
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, fmt.Errorf("mlx5sim: %s: %w", bin, err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil, fmt.Errorf("mlx5sim: %s: %w", bin, err)
	}
	var mu sync.Mutex
	return func(_ int, pc uint64) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		f := tab.PCToFunc(pc)
		if f == nil {
			return fmt.Sprintf("%#x (no function)", pc), false
		}
		return fmt.Sprintf("%s+%#x", f.Name, pc-f.Entry), strings.HasPrefix(f.Name, modPrefix)
	}, nil
}
