//go:build !linux

package rdmacm

func (ep *Endpoint) RegAtomic(size int) (*MR, error) { return nil, errNotSupported }
func (l *Listener) RegAtomic(size int) (*MR, error)  { return nil, errNotSupported }
func (ep *Endpoint) PostCompareSwap(m *MR, off int, dst RemoteBuf, compare, swap uint64) error {
	return errNotSupported
}
func (ep *Endpoint) PostFetchAdd(m *MR, off int, dst RemoteBuf, add uint64) error {
	return errNotSupported
}
