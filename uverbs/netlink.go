package uverbs

import (
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// nlChardev is what RDMA_NLDEV_CMD_GET_CHARDEV reports for a device's
// uverbs node.
type nlChardev struct {
	name     string
	abi      uint64
	driverID uint32
	hasID    bool
}

// nlAttr appends one netlink attribute (4-byte aligned).
func nlAttr(b []byte, typ uint16, payload []byte) []byte {
	n := unix.NLA_HDRLEN + len(payload)
	var h [4]byte
	abi.Native.PutUint16(h[0:], uint16(n))
	abi.Native.PutUint16(h[2:], typ)
	b = append(b, h[:]...)
	b = append(b, payload...)
	for len(b)%unix.NLA_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

// parseNLAttrs walks the attributes of one message body.
func parseNLAttrs(b []byte, fn func(typ uint16, payload []byte)) {
	for len(b) >= unix.NLA_HDRLEN {
		n := int(abi.Native.Uint16(b[0:]))
		typ := abi.Native.Uint16(b[2:]) & 0x3fff // strip NLA_F_NESTED / NET_BYTEORDER
		if n < unix.NLA_HDRLEN || n > len(b) {
			return
		}
		fn(typ, b[unix.NLA_HDRLEN:n])
		adv := (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1)
		if adv > len(b) {
			return
		}
		b = b[adv:]
	}
}

// nlRequest sends one RDMA netlink request and calls fn for each reply
// message body until the kernel is done.
func nlRequest(op uint16, flags uint16, attrs []byte, fn func(body []byte)) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, abi.NetlinkRDMA)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(attrs))
	msg = append(msg, attrs...)
	abi.Native.PutUint32(msg[0:], uint32(len(msg)))
	abi.Native.PutUint16(msg[4:], abi.RDMANLType(abi.RDMANLNldev, op))
	abi.Native.PutUint16(msg[6:], unix.NLM_F_REQUEST|flags)
	abi.Native.PutUint32(msg[8:], 1) // seq
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 32<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		for b := buf[:n]; len(b) >= unix.NLMSG_HDRLEN; {
			mlen := int(abi.Native.Uint32(b[0:]))
			typ := abi.Native.Uint16(b[4:])
			mflags := abi.Native.Uint16(b[6:])
			if mlen < unix.NLMSG_HDRLEN || mlen > len(b) {
				return unix.EBADMSG
			}
			data := b[unix.NLMSG_HDRLEN:mlen]
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(data) < 4 {
					return unix.EIO
				}
				if e := int32(abi.Native.Uint32(data)); e != 0 {
					return unix.Errno(-e)
				}
				return nil
			}
			fn(data)
			if mflags&unix.NLM_F_MULTI == 0 {
				return nil
			}
			adv := (mlen + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
			if adv > len(b) {
				break
			}
			b = b[adv:]
		}
	}
}

// nlDeviceIndex finds the kernel index of the device called name.
func nlDeviceIndex(name string) (uint32, error) {
	var idx uint32
	found := false
	err := nlRequest(abi.RDMANldevCmdGet, unix.NLM_F_DUMP, nil, func(body []byte) {
		var i uint32
		var n string
		parseNLAttrs(body, func(typ uint16, p []byte) {
			switch typ {
			case abi.RDMANldevAttrDevIndex:
				if len(p) >= 4 {
					i = abi.Native.Uint32(p)
				}
			case abi.RDMANldevAttrDevName:
				n = cString(p)
			}
		})
		if n == name && !found {
			idx, found = i, true
		}
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%w: netlink lists no device %q", ErrNoDevice, name)
	}
	return idx, nil
}

// nlUverbsChardev asks the kernel for a device's uverbs node and driver id.
func nlUverbsChardev(name string) (nlChardev, error) {
	var out nlChardev
	idx, err := nlDeviceIndex(name)
	if err != nil {
		return out, err
	}
	var attrs []byte
	var u32 [4]byte
	abi.Native.PutUint32(u32[:], idx)
	attrs = nlAttr(attrs, abi.RDMANldevAttrDevIndex, u32[:])
	attrs = nlAttr(attrs, abi.RDMANldevAttrChardevType, []byte("uverbs\x00"))
	err = nlRequest(abi.RDMANldevCmdGetChardev, 0, attrs, func(body []byte) {
		parseNLAttrs(body, func(typ uint16, p []byte) {
			switch typ {
			case abi.RDMANldevAttrChardevName:
				out.name = cString(p)
			case abi.RDMANldevAttrChardevABI:
				if len(p) >= 8 {
					out.abi = abi.Native.Uint64(p)
				}
			case abi.RDMANldevAttrUverbsDriverID:
				// The kernel writes a u32 (nla_put_u32) although the
				// header comment says u64; accept both.
				switch {
				case len(p) >= 8:
					out.driverID, out.hasID = uint32(abi.Native.Uint64(p)), true
				case len(p) >= 4:
					out.driverID, out.hasID = abi.Native.Uint32(p), true
				}
			}
		})
	})
	if err != nil {
		return out, err
	}
	if out.name == "" {
		return out, errors.New("netlink GET_CHARDEV: no chardev name in reply")
	}
	return out, nil
}

func cString(p []byte) string {
	for i, c := range p {
		if c == 0 {
			return string(p[:i])
		}
	}
	return string(p)
}
