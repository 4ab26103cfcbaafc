package uverbs

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// Replies built by hand as the kernel writes them (include/uapi/rdma/
// rdma_netlink.h, drivers/infiniband/core/nldev.c): an nlmsghdr, then
// host-endian attributes, each padded to 4 bytes.

const (
	testSeq = 7
	testPID = 4242
)

var (
	typeGet     = abi.RDMANLType(abi.RDMANLNldev, abi.RDMANldevCmdGet)
	typeChardev = abi.RDMANLType(abi.RDMANLNldev, abi.RDMANldevCmdGetChardev)
	xGet        = nlExchange{typ: typeGet, seq: testSeq, pid: testPID, dump: true}
	xChardev    = nlExchange{typ: typeChardev, seq: testSeq, pid: testPID}
)

func nlU32(v uint32) []byte { return abi.Native.AppendUint32(nil, v) }
func nlU64(v uint64) []byte { return abi.Native.AppendUint64(nil, v) }

// nlMsg is one netlink message: header and body, padded.
func nlMsg(typ, flags uint16, seq, pid uint32, body []byte) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(body)+3)
	abi.Native.PutUint32(b[0:], uint32(unix.NLMSG_HDRLEN+len(body)))
	abi.Native.PutUint16(b[4:], typ)
	abi.Native.PutUint16(b[6:], flags)
	abi.Native.PutUint32(b[8:], seq)
	abi.Native.PutUint32(b[12:], pid)
	b = append(b, body...)
	for len(b)%unix.NLMSG_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

// chardevAttrs is a GET_CHARDEV reply body for rxe's uverbs0: the driver
// id first (ib_uverbs_get_nl_info), then nldev_get_chardev's attributes.
func chardevAttrs() []byte {
	var b []byte
	b = nlAttr(b, abi.RDMANldevAttrUverbsDriverID, nlU32(abi.RDMADriverRXE))
	b = nlAttr(b, abi.RDMANldevAttrChardev, nlU64(231<<8|192))
	b = nlAttr(b, abi.RDMANldevAttrChardevABI, nlU64(6))
	b = nlAttr(b, abi.RDMANldevAttrChardevName, []byte("uverbs0\x00"))
	return b
}

// devAttrs is a GET dump entry as fill_dev_info writes it: the handle,
// then the port count, capability flags (u64 after an empty PAD
// attribute, as nla_put_u64_64bit writes it where alignment needs it),
// firmware, GUIDs, node type and protocol.
func devAttrs(idx uint32, name string) []byte {
	var b []byte
	b = nlAttr(b, abi.RDMANldevAttrDevIndex, nlU32(idx))
	b = nlAttr(b, abi.RDMANldevAttrDevName, []byte(name+"\x00"))
	b = nlAttr(b, 3, nlU32(1)) // PORT_INDEX
	b = nlAttr(b, 0, nil)      // PAD
	b = nlAttr(b, 4, nlU64(0)) // CAP_FLAGS
	b = nlAttr(b, 5, []byte("1.0.0\x00"))
	b = nlAttr(b, 6, nlU64(0x505400fffe000001)) // NODE_GUID
	b = nlAttr(b, 7, nlU64(0))                  // SYS_IMAGE_GUID
	b = nlAttr(b, 14, []byte{1})                // DEV_NODE_TYPE, a u8
	b = nlAttr(b, 16, []byte("roce\x00"))       // DEV_PROTOCOL
	return b
}

func doneMsg(status int32) []byte {
	return nlMsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, testSeq, testPID, nlU32(uint32(status)))
}

// errMsg is NLMSG_ERROR answering req with -errno; tlvs, if any, are
// extended ack attributes (NLM_F_ACK_TLVS).
func errMsg(errno unix.Errno, req []byte, capped bool, tlvs []byte) []byte {
	body := nlU32(uint32(-int32(errno)))
	var flags uint16
	if capped {
		body = append(body, req[:unix.NLMSG_HDRLEN]...)
		flags |= unix.NLM_F_CAPPED
	} else {
		body = append(body, req...)
	}
	if tlvs != nil {
		body = append(body, tlvs...)
		flags |= unix.NLM_F_ACK_TLVS
	}
	return nlMsg(unix.NLMSG_ERROR, flags, testSeq, testPID, body)
}

func chardevRequest() []byte {
	var a []byte
	a = nlAttr(a, abi.RDMANldevAttrDevIndex, nlU32(0))
	a = nlAttr(a, abi.RDMANldevAttrChardevType, []byte("uverbs\x00"))
	return nlMsg(typeChardev, unix.NLM_F_REQUEST, testSeq, testPID, a)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// collect parses one datagram, gathering what the handler saw.
func collectChardev(x nlExchange, b []byte) ([]nlChardev, bool, error) {
	var got []nlChardev
	done, err := x.parse(b, func(attrs []byte) error {
		c, err := parseNLChardev(attrs)
		if err == nil {
			got = append(got, c)
		}
		return err
	})
	return got, done, err
}

type nlDev struct {
	idx  uint32
	name string
}

func collectDevs(x nlExchange, b []byte) ([]nlDev, bool, error) {
	var got []nlDev
	done, err := x.parse(b, func(attrs []byte) error {
		i, n, err := parseNLDevice(attrs)
		if err == nil {
			got = append(got, nlDev{i, n})
		}
		return err
	})
	return got, done, err
}

func TestNetlinkChardevReply(t *testing.T) {
	want := nlChardev{name: "uverbs0", abi: 6, driverID: abi.RDMADriverRXE, hasID: true}
	for _, pid := range []uint32{testPID, 0} {
		got, done, err := collectChardev(xChardev, nlMsg(typeChardev, 0, testSeq, pid, chardevAttrs()))
		if err != nil || !done || len(got) != 1 || got[0] != want {
			t.Errorf("pid %d: %+v done=%v %v, want %+v", pid, got, done, err, want)
		}
	}
	// A u64 driver id (the uapi comment's type), unknown and empty
	// attributes, a valid nested one, and a last attribute without
	// its padding are all accepted.
	var a []byte
	a = nlAttr(a, 0, nil)
	a = nlAttr(a, 200, []byte{1, 2, 3})
	a = nlAttr(a, 201|unix.NLA_F_NESTED, nlAttr(nlAttr(nil, 1, nlU32(5)), 2|unix.NLA_F_NESTED, nlAttr(nil, 3, nil)))
	a = nlAttr(a, abi.RDMANldevAttrUverbsDriverID, nlU64(uint64(abi.RDMADriverMLX5)))
	a = nlAttr(a, abi.RDMANldevAttrChardevName, []byte("uverbs12\x00"))
	a = nlAttr(a, 202, []byte{9})
	a = a[:len(a)-3]
	msg := nlMsg(typeChardev, 0, testSeq, testPID, a)
	got, done, err := collectChardev(xChardev, msg)
	if err != nil || !done || len(got) != 1 || got[0] != (nlChardev{name: "uverbs12", driverID: abi.RDMADriverMLX5, hasID: true}) {
		t.Errorf("lenient-but-valid reply: %+v done=%v %v", got, done, err)
	}
}

func TestNetlinkDump(t *testing.T) {
	m1 := nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, devAttrs(0, "rxe0"))
	m2 := nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, devAttrs(3, "mlx5_0"))
	want := []nlDev{{0, "rxe0"}, {3, "mlx5_0"}}
	got, done, err := collectDevs(xGet, cat(m1, m2, doneMsg(0)))
	if err != nil || !done || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("one datagram: %+v done=%v %v", got, done, err)
	}
	// Split over datagrams: not done until NLMSG_DONE.
	got, done, err = collectDevs(xGet, cat(m1, m2))
	if err != nil || done || len(got) != 2 {
		t.Errorf("first datagram: %+v done=%v %v", got, done, err)
	}
	got, done, err = collectDevs(xGet, doneMsg(0))
	if err != nil || !done || len(got) != 0 {
		t.Errorf("last datagram: %+v done=%v %v", got, done, err)
	}
	// A NOOP is skipped; a dump that failed midway reports its errno.
	_, done, err = collectDevs(xGet, cat(nlMsg(unix.NLMSG_NOOP, 0, testSeq, testPID, nil), doneMsg(0)))
	if err != nil || !done {
		t.Errorf("noop then done: done=%v %v", done, err)
	}
	_, _, err = collectDevs(xGet, cat(m1, doneMsg(-int32(unix.EMSGSIZE))))
	if !errors.Is(err, unix.EMSGSIZE) || errors.Is(err, unix.EBADMSG) {
		t.Errorf("failed dump: %v", err)
	}
}

func TestNetlinkKernelErrors(t *testing.T) {
	req := chardevRequest()
	tlv := nlAttr(nil, unix.NLMSGERR_ATTR_MSG, []byte("Unknown device\x00"))
	tlv = nlAttr(tlv, 2, nlU32(20)) // NLMSGERR_ATTR_OFFS
	for _, tc := range []struct {
		name string
		msg  []byte
		want unix.Errno
		text string
	}{
		{"plain", errMsg(unix.EINVAL, req, false, nil), unix.EINVAL, "RDMA netlink: invalid argument"},
		{"capped", errMsg(unix.EOPNOTSUPP, req, true, nil), unix.EOPNOTSUPP, "operation not supported"},
		{"extack", errMsg(unix.ENODEV, req, false, tlv), unix.ENODEV, "Unknown device: no such device"},
		{"extack capped", errMsg(unix.ENODEV, req, true, tlv), unix.ENODEV, "Unknown device: no such device"},
	} {
		got, _, err := collectChardev(xChardev, tc.msg)
		if len(got) != 0 || !errors.Is(err, tc.want) || errors.Is(err, unix.EBADMSG) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %+v %v, want %v containing %q", tc.name, got, err, tc.want, tc.text)
		}
	}
	// An ack (error 0) ends the reply, capped (Linux 4.12+) or not.
	for _, ack := range [][]byte{errMsg(0, req, true, nil), nlMsg(unix.NLMSG_ERROR, 0, testSeq, testPID, cat(nlU32(0), req[:unix.NLMSG_HDRLEN]))} {
		got, done, err := collectChardev(xChardev, ack)
		if err != nil || !done || len(got) != 0 {
			t.Errorf("ack: %+v done=%v %v", got, done, err)
		}
	}
}

// setU32 returns a copy of b with a host-endian u32 at off.
func setU32(b []byte, off int, v uint32) []byte {
	c := bytes.Clone(b)
	abi.Native.PutUint32(c[off:], v)
	return c
}

func setU16(b []byte, off int, v uint16) []byte {
	c := bytes.Clone(b)
	abi.Native.PutUint16(c[off:], v)
	return c
}

// TestNetlinkMalformed feeds one malformation at a time: each must be an
// error wrapping EBADMSG whose text names the fault.
func TestNetlinkMalformed(t *testing.T) {
	good := nlMsg(typeChardev, 0, testSeq, testPID, chardevAttrs())
	dev := nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, devAttrs(0, "rxe0"))
	withAttrs := func(attrs ...[]byte) []byte { return nlMsg(typeChardev, 0, testSeq, testPID, cat(attrs...)) }
	name := nlAttr(nil, abi.RDMANldevAttrChardevName, []byte("uverbs0\x00"))
	req := chardevRequest()
	tests := []struct {
		name string
		dump bool
		msg  []byte
		want string
	}{
		// nlmsghdr
		{"short header", false, good[:15], "15 trailing bytes, shorter than a message header"},
		{"nlmsg_len below header", false, setU32(good, 0, 15), "nlmsg_len 15 is shorter than its header"},
		{"nlmsg_len past datagram", false, setU32(good, 0, uint32(len(good)+4)), "exceeds the"},
		{"nlmsg_len unpadded", false, setU32(good, 0, uint32(len(good)-3))[:len(good)-2], "without its padding"},
		{"trailing bytes", false, cat(good, []byte{1, 2, 3, 4}), "4 trailing bytes, shorter than a message header"},
		{"trailing after done", true, cat(dev, doneMsg(0), dev), "1 more message(s) after the end of the reply"},
		{"two replies to a non-dump", false, cat(good, good), "1 more message(s) after the only reply"},
		{"wrong sequence", false, setU32(good, 8, testSeq+1), "sequence 8, want 7"},
		{"wrong port id", false, setU32(good, 12, testPID+1), "port id 4243, want 4242"},
		{"wrong type", false, setU16(good, 4, typeGet), "message type 0x1401, want 0x140f"},
		{"control type", false, setU16(good, 4, unix.NLMSG_OVERRUN), "unexpected control message type 4"},
		{"multi in non-dump", false, setU16(good, 6, unix.NLM_F_MULTI), "NLM_F_MULTI is true"},
		{"dump entry without multi", true, setU16(dev, 6, 0), "NLM_F_MULTI is false"},
		{"done in non-dump", false, doneMsg(0), "NLMSG_DONE in reply to a request that is not a dump"},
		{"done without multi", true, setU16(doneMsg(0), 6, 0), "NLMSG_DONE without NLM_F_MULTI"},
		{"done short status", true, nlMsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, testSeq, testPID, []byte{0, 0}), "NLMSG_DONE with 2 bytes"},
		{"done positive status", true, doneMsg(5), "positive error 5"},
		// NLMSG_ERROR
		{"error short", false, nlMsg(unix.NLMSG_ERROR, 0, testSeq, testPID, nlU32(0)), "NLMSG_ERROR of 4 bytes"},
		{"error positive", false, setU32(errMsg(unix.EINVAL, req, false, nil), 16, 22), "positive error 22"},
		{"error for other seq", false, setU32(errMsg(unix.EINVAL, req, false, nil), 16+4+8, 99), "sequence 99, want 0x140f sequence 7"},
		{"error echo truncated", false, nlMsg(unix.NLMSG_ERROR, 0, testSeq, testPID, cat(nlU32(negErrno(unix.EINVAL)), req[:20])), "echoing a request"},
		{"error extra bytes", false, nlMsg(unix.NLMSG_ERROR, unix.NLM_F_CAPPED, testSeq, testPID, cat(nlU32(negErrno(unix.EINVAL)), req[:16], []byte{1, 2, 3, 4})), "4 extra bytes and no NLM_F_ACK_TLVS"},
		{"error bad tlv", false, errMsg(unix.EINVAL, req, true, nlAttr(nil, unix.NLMSGERR_ATTR_MSG, []byte("no nul"))), "extended ack: malformed RDMA netlink reply: attribute 1: string without its NUL"},
		// attributes
		{"nla_len below header", false, withAttrs(name, []byte{3, 0, 70, 0}), "attribute 70: nla_len 3 is shorter than its header"},
		{"nla_len zero", false, withAttrs([]byte{0, 0, 0, 0}, name), "nla_len 0 is shorter than its header"},
		{"nla_len past body", false, withAttrs(name, []byte{12, 0, 71, 0, 1, 0, 0, 0}), "attribute 71: nla_len 12 exceeds the 8 bytes left"},
		{"trailing attr bytes", false, nlMsg(typeChardev, 0, testSeq, testPID, cat(name, []byte{1, 2})), "2 trailing bytes after the last attribute"},
		{"u64 too short", false, withAttrs(name, nlAttr(nil, abi.RDMANldevAttrChardevABI, nlU32(6))), "attribute 71: u64 of 4 bytes"},
		{"u64 too long", false, withAttrs(name, nlAttr(nil, abi.RDMANldevAttrChardev, make([]byte, 12))), "attribute 72: u64 of 12 bytes"},
		{"driver id 2 bytes", false, withAttrs(name, nlAttr(nil, abi.RDMANldevAttrUverbsDriverID, []byte{1, 0})), "attribute 73: driver id of 2 bytes"},
		{"driver id 5 bytes", false, withAttrs(name, nlAttr(nil, abi.RDMANldevAttrUverbsDriverID, make([]byte, 5))), "driver id of 5 bytes"},
		{"driver id u64 too big", false, withAttrs(name, nlAttr(nil, abi.RDMANldevAttrUverbsDriverID, nlU64(1<<32))), "driver id 4294967296 out of range"},
		{"u32 byte order flag", true, nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, cat(nlAttr(nil, abi.RDMANldevAttrDevIndex|unix.NLA_F_NET_BYTEORDER, nlU32(1)), nlAttr(nil, abi.RDMANldevAttrDevName, []byte("x\x00")))), "attribute 1: u32 with flags 0x4000"},
		{"dev index too long", true, nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, cat(nlAttr(nil, abi.RDMANldevAttrDevIndex, nlU64(1)), nlAttr(nil, abi.RDMANldevAttrDevName, []byte("x\x00")))), "attribute 1: u32 of 8 bytes"},
		{"string without NUL", false, withAttrs(nlAttr(nil, abi.RDMANldevAttrChardevName, []byte("uverbs0"))), "attribute 70: string without its NUL terminator"},
		{"empty string payload", false, withAttrs(nlAttr(nil, abi.RDMANldevAttrChardevName, nil)), "string without its NUL terminator"},
		{"string with inner NUL", false, withAttrs(nlAttr(nil, abi.RDMANldevAttrChardevName, []byte("uv\x00rbs0\x00"))), "string with a NUL at byte 2 of 8"},
		{"nested string", false, withAttrs(nlAttr(nil, abi.RDMANldevAttrChardevName|unix.NLA_F_NESTED, nlAttr(nil, 1, nil))), "string with flags 0x8000"},
		{"repeated attribute", false, withAttrs(name, name), "attribute 70: repeated"},
		{"bad nested", false, withAttrs(name, nlAttr(nil, 200|unix.NLA_F_NESTED, []byte{9, 0, 1, 0, 0, 0, 0, 0})), "in nested attribute 200: malformed RDMA netlink reply: attribute 1: nla_len 9 exceeds"},
		{"nested trailing", false, withAttrs(name, nlAttr(nil, 200|unix.NLA_F_NESTED, []byte{1, 2})), "in nested attribute 200: malformed RDMA netlink reply: 2 trailing bytes"},
		{"nested too deep", false, withAttrs(name, deepNest(nlMaxNestDepth+1)), "nested more than 8 deep"},
		{"chardev without name", false, withAttrs(nlAttr(nil, abi.RDMANldevAttrChardevABI, nlU64(6))), "without RDMA_NLDEV_ATTR_CHARDEV_NAME"},
		{"device without index", true, nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, nlAttr(nil, abi.RDMANldevAttrDevName, []byte("rxe0\x00"))), "device without RDMA_NLDEV_ATTR_DEV_INDEX"},
		{"device without name", true, nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, nlAttr(nil, abi.RDMANldevAttrDevIndex, nlU32(2))), "device 2 without RDMA_NLDEV_ATTR_DEV_NAME"},
		{"device empty name", true, nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, cat(nlAttr(nil, abi.RDMANldevAttrDevIndex, nlU32(2)), nlAttr(nil, abi.RDMANldevAttrDevName, []byte{0}))), "device 2 with an empty name"},
	}
	for _, tc := range tests {
		var err error
		var got int
		if tc.dump {
			var devs []nlDev
			devs, _, err = collectDevs(xGet, tc.msg)
			got = len(devs)
		} else {
			var cs []nlChardev
			cs, _, err = collectChardev(xChardev, tc.msg)
			got = len(cs)
		}
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.name)
		case !errors.Is(err, unix.EBADMSG):
			t.Errorf("%s: %v does not wrap EBADMSG", tc.name, err)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %q does not say %q", tc.name, err, tc.want)
		}
		if tc.dump && got > 1 || !tc.dump && got > 0 {
			t.Errorf("%s: %d replies delivered before the error", tc.name, got)
		}
	}
}

// deepNest is n attributes each nested in the next, flagged NLA_F_NESTED.
func deepNest(n int) []byte {
	b := nlAttr(nil, 1, nil)
	for range n {
		b = nlAttr(nil, 1|unix.NLA_F_NESTED, b)
	}
	return b
}

// TestNetlinkKernel asks this host's kernel for a device that does not
// exist: the real GET dump (empty or not) must parse to ErrNoDevice.
func TestNetlinkKernel(t *testing.T) {
	// driverIDOf falls back, netlink or not.
	if got := driverIDOf(Device{Name: "no-such-rdma-device"}); got != abi.RDMADriverUnknown {
		t.Errorf("driverIDOf = %d", got)
	}
	_, err := nlDeviceIndex("no-such-rdma-device")
	var errno unix.Errno
	if errors.As(err, &errno) && !errors.Is(err, unix.EBADMSG) && !errors.Is(err, ErrNoDevice) {
		t.Skipf("no RDMA netlink here: %v", err)
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("got %v, want ErrNoDevice", err)
	}
}

// FuzzNetlinkParse checks arbitrary datagrams against a GET_CHARDEV and
// a GET dump exchange. Nothing panics; every failure is a malformed
// reply (EBADMSG) or a kernel errno; every body handed on lies inside
// the datagram; and a chardev reply that parses, built again from what
// was read, parses to the same values.
func FuzzNetlinkParse(f *testing.F) {
	req := chardevRequest()
	dev := nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, devAttrs(0, "rxe0"))
	f.Add(nlMsg(typeChardev, 0, testSeq, testPID, chardevAttrs()))
	f.Add(nlMsg(typeChardev, 0, testSeq, 0, chardevAttrs()))
	f.Add(cat(dev, nlMsg(typeGet, unix.NLM_F_MULTI, testSeq, testPID, devAttrs(1, "mlx5_0")), doneMsg(0)))
	f.Add(cat(dev, doneMsg(-int32(unix.EMSGSIZE))))
	f.Add(errMsg(unix.EINVAL, req, false, nil))
	f.Add(errMsg(unix.ENODEV, req, true, nlAttr(nil, unix.NLMSGERR_ATTR_MSG, []byte("Unknown device\x00"))))
	f.Add(errMsg(0, req, true, nil))
	f.Add(nlMsg(typeChardev, 0, testSeq, testPID, cat(deepNest(3), chardevAttrs())))
	f.Add(nlMsg(typeChardev, 0, testSeq, testPID, chardevAttrs()[:30]))
	f.Fuzz(func(t *testing.T, b []byte) {
		lo := uintptr(0)
		if len(b) > 0 {
			lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		}
		inside := func(p []byte) bool {
			if len(p) == 0 {
				return true
			}
			s := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
			return s >= lo && s+uintptr(len(p)) <= lo+uintptr(len(b))
		}
		check := func(err error) {
			var errno unix.Errno
			if err != nil && !errors.Is(err, unix.EBADMSG) && !errors.As(err, &errno) {
				t.Fatalf("error %v is neither EBADMSG nor an errno", err)
			}
		}
		_, err := xChardev.parse(b, func(attrs []byte) error {
			if !inside(attrs) {
				t.Fatal("chardev body outside the datagram")
			}
			c, err := parseNLChardev(attrs)
			if err != nil {
				return err
			}
			var again []byte
			again = nlAttr(again, abi.RDMANldevAttrChardevName, []byte(c.name+"\x00"))
			again = nlAttr(again, abi.RDMANldevAttrChardevABI, nlU64(c.abi))
			if c.hasID {
				again = nlAttr(again, abi.RDMANldevAttrUverbsDriverID, nlU32(c.driverID))
			}
			back, err := parseNLChardev(again)
			if err != nil || back != c {
				t.Fatalf("%+v built again parses to %+v, %v", c, back, err)
			}
			return nil
		})
		check(err)
		_, err = xGet.parse(b, func(attrs []byte) error {
			if !inside(attrs) {
				t.Fatal("device body outside the datagram")
			}
			_, name, err := parseNLDevice(attrs)
			if err == nil && (name == "" || strings.IndexByte(name, 0) >= 0) {
				t.Fatalf("device name %q", name)
			}
			return err
		})
		check(err)
	})
}

// negErrno is -e as the kernel writes it into NLMSG_ERROR.
func negErrno(e unix.Errno) uint32 { return uint32(-int32(e)) }
