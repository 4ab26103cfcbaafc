//go:build !linux

package rdmacm

// RegMemory returns ErrNotSupported off Linux.
func (ep *Endpoint) RegMemory(mem []byte, opts MemOptions) (*MR, error) { return nil, errNotSupported }

// RegDmabuf returns ErrNotSupported off Linux.
func (ep *Endpoint) RegDmabuf(fd int, offset, length uint64, opts MemOptions) (*MR, error) {
	return nil, errNotSupported
}

// RegMemory returns ErrNotSupported off Linux.
func (l *Listener) RegMemory(mem []byte, opts MemOptions) (*MR, error) { return nil, errNotSupported }

// RegDmabuf returns ErrNotSupported off Linux.
func (l *Listener) RegDmabuf(fd int, offset, length uint64, opts MemOptions) (*MR, error) {
	return nil, errNotSupported
}
