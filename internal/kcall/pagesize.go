package kcall

import "os"

// PageSizer is a TestDevice that stands for a kernel with another page
// size than the host's (a simulated arm64 kernel with 16 KiB or 64 KiB
// pages): the providers' mmap offsets, UAR and doorbell-record pages and
// buffer rounding then follow it, as they follow the kernel's.
type PageSizer interface {
	PageSize() int
}

// PageSize is the kernel's page size, what libibverbs and libmlx5 read
// with sysconf(_SC_PAGESIZE): the installed test device's when it says
// one, else the host's. Every page-size computation of the providers
// goes through it.
func PageSize() int {
	if d, ok := currentTestDevice().(PageSizer); ok {
		if n := d.PageSize(); n > 0 {
			return n
		}
	}
	return os.Getpagesize()
}
