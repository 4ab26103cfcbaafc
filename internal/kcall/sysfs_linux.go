//go:build linux

package kcall

import (
	"io/fs"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device discovery reads sysfs with plain syscalls, without package os's
// file objects and their netpoller registration (os.ReadFile, os.ReadDir,
// os.Stat). Errors are *fs.PathError around the errno, as package os
// gives them.

// SysfsReadFile reads a whole sysfs attribute (kernfs fills at most a
// page at the first read; the loop reads on to EOF anyway).
func SysfsReadFile(path string) ([]byte, error) {
	fd, err := sysfsOpen(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer Close(fd)
	buf := make([]byte, 0, 128)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// SysfsReadDir lists a directory's entries but "." and "..", sorted by
// name as os.ReadDir sorts them.
func SysfsReadDir(path string) ([]string, error) {
	fd, err := sysfsOpen(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer Close(fd)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, _, e := unix.Syscall(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		runtime.KeepAlive(buf)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return nil, &fs.PathError{Op: "readdirent", Path: path, Err: e}
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	slices.Sort(names)
	return names, nil
}

// SysfsExists reports whether path names something (faccessat F_OK,
// following symbolic links as os.Stat does).
func SysfsExists(path string) bool {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return false
	}
	_, _, e := unix.Syscall(unix.SYS_FACCESSAT, atFDCWD, uintptr(unsafe.Pointer(p)), unix.F_OK)
	runtime.KeepAlive(p)
	return e == 0
}

func sysfsOpen(path string, mode int) (int, error) {
	for {
		fd, err := UcmaOpen(path, mode, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}
