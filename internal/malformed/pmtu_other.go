//go:build !linux

package malformed

import "github.com/go-rdma/rdmacm/internal/unix"

// setPMTUDiscDo: IP_MTU_DISCOVER is Linux's; NewSender fails elsewhere.
func setPMTUDiscDo(uintptr) error { return unix.ErrNotSupported }
