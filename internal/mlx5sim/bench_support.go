//go:build linux

package mlx5sim

// CQBuffer returns the buffer address and entry count of the CQ the
// trace names name (cq0, cq1, ... in creation order), for benchmarks
// that write the device's CQEs themselves instead of through Exec.
func (d *Device) CQBuffer(name string) (addr uint64, ncqe int, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.lookup("cq", name)
	if o == nil || o.cqBuf == 0 || o.cqeSize != 64 {
		return 0, 0, false
	}
	return o.cqBuf, o.ncqe, true
}
