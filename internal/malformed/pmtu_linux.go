package malformed

import "syscall"

// setPMTUDiscDo turns path MTU discovery on: DF set, IP ID 0.
func setPMTUDiscDo(fd uintptr) error {
	return syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
}
