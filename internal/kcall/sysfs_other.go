//go:build !linux

package kcall

import "os"

// SysfsReadFile is os.ReadFile where there is no sysfs.
func SysfsReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

// SysfsReadDir is os.ReadDir's names where there is no sysfs.
func SysfsReadDir(path string) ([]string, error) {
	entries, err := os.ReadDir(path)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, err
}

// SysfsExists is os.Stat's success where there is no sysfs.
func SysfsExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
