//go:build ignore

package main

import (
	"fmt"
	"sort"
	"syscall"
	"time"
)

func main() {
	const N = 400
	var p [N]uintptr
	var m, u, g [N]float64
	for i := range p {
		t := time.Now()
		a, _, _ := syscall.RawSyscall6(syscall.SYS_MMAP, 0, 4096, 3, 0x22|0x8000, ^uintptr(0), 0)
		m[i] = float64(time.Since(t).Nanoseconds()) / 1e3
		p[i] = a
	}
	for i := range p {
		t := time.Now()
		syscall.RawSyscall(syscall.SYS_MUNMAP, p[i], 4096, 0)
		u[i] = float64(time.Since(t).Nanoseconds()) / 1e3
	}
	for i := range g {
		t := time.Now()
		syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		g[i] = float64(time.Since(t).Nanoseconds()) / 1e3
	}
	sort.Float64s(m[:])
	sort.Float64s(u[:])
	sort.Float64s(g[:])
	fmt.Printf("go mmap med %.1f munmap med %.1f p25 %.1f getppid med %.1f\n", m[N/2], u[N/2], u[N/4], g[N/2])
}
