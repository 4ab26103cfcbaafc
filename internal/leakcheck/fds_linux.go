package leakcheck

import (
	"os"
	"strconv"
	"syscall"
)

// listFDs reads /proc/self/fd, leaving out the fd of the listing itself.
// An fd closed between the listing and its readlink is left out too.
func listFDs() (map[int]fdInfo, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	self := int(d.Fd())
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	fds := make(map[int]fdInfo, len(names))
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd == self {
			continue
		}
		p := "/proc/self/fd/" + name
		target, err := os.Readlink(p)
		if err != nil {
			continue
		}
		info := fdInfo{target: target}
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil {
			info.dev, info.ino = uint64(st.Dev), st.Ino
		}
		fds[fd] = info
	}
	return fds, nil
}
