package uverbs

import (
	"fmt"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// The RDMA netlink client is strict, in the manner of mdlayher/netlink:
// every reply is checked against the request that caused it (sequence
// number, port id, message type, NLM_F_MULTI for dumps), every length is
// checked before it is used, and the attributes this package reads must
// have exactly the size of their type. Anything else is a malformed
// reply: an error wrapping unix.EBADMSG that names what was wrong, never
// a panic and never a silently defaulted field.

// nlChardev is what RDMA_NLDEV_CMD_GET_CHARDEV reports for a device's
// uverbs node.
type nlChardev struct {
	name     string
	abi      uint64
	driverID uint32
	hasID    bool
}

// nlMalformedError is a reply that breaks the netlink rules.
type nlMalformedError struct{ what string }

func (e *nlMalformedError) Error() string { return "malformed RDMA netlink reply: " + e.what }
func (e *nlMalformedError) Unwrap() error { return unix.EBADMSG }

func nlMalformed(format string, args ...any) error {
	return &nlMalformedError{fmt.Sprintf(format, args...)}
}

const (
	nlaFlags        = unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER
	nlMaxNestDepth  = 8      // nested attribute levels we follow
	nlErrHeaderSize = 4 + 16 // struct nlmsgerr: the errno and the request's nlmsghdr
)

func nlaAlign(n int) int   { return (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }
func nlmsgAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

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

// nlAttrDecoder walks a run of attributes, validating each header before
// it reports it: nla_len covers at least the header and at most what is
// left, and the payload of an attribute flagged NLA_F_NESTED is itself a
// valid run of attributes. Only the last attribute may lack its padding
// (the kernel's nla_for_each_attr accepts that too); 1 to 3 bytes after
// it are an error. The typed accessors check the payload's size; the
// first failure stops the walk and is kept in err.
type nlAttrDecoder struct {
	b     []byte
	depth int
	typ   uint16 // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
	flags uint16
	data  []byte
	seen  [4]uint64 // types < 256 reported by once
	err   error
}

func newNLAttrDecoder(b []byte) *nlAttrDecoder { return &nlAttrDecoder{b: b} }

func (d *nlAttrDecoder) next() bool {
	if d.err != nil || len(d.b) == 0 {
		return false
	}
	if len(d.b) < unix.NLA_HDRLEN {
		d.err = nlMalformed("%d trailing bytes after the last attribute", len(d.b))
		return false
	}
	n := int(abi.Native.Uint16(d.b[0:]))
	raw := abi.Native.Uint16(d.b[2:])
	d.typ, d.flags = raw&^nlaFlags, raw&nlaFlags
	switch {
	case n < unix.NLA_HDRLEN:
		d.err = nlMalformed("attribute %d: nla_len %d is shorter than its header", d.typ, n)
		return false
	case n > len(d.b):
		d.err = nlMalformed("attribute %d: nla_len %d exceeds the %d bytes left", d.typ, n, len(d.b))
		return false
	}
	d.data = d.b[unix.NLA_HDRLEN:n]
	if d.flags&unix.NLA_F_NESTED != 0 {
		if d.depth >= nlMaxNestDepth {
			d.err = nlMalformed("attribute %d: nested more than %d deep", d.typ, nlMaxNestDepth)
			return false
		}
		in := &nlAttrDecoder{b: d.data, depth: d.depth + 1}
		for in.next() {
		}
		if in.err != nil {
			d.err = fmt.Errorf("in nested attribute %d: %w", d.typ, in.err)
			return false
		}
	}
	d.b = d.b[min(nlaAlign(n), len(d.b)):]
	return true
}

// fail stops the walk with a malformed-attribute error.
func (d *nlAttrDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = nlMalformed("attribute %d: %s", d.typ, fmt.Sprintf(format, args...))
	}
}

// scalar checks that the current attribute is a plain value of size n.
func (d *nlAttrDecoder) scalar(kind string, sizes ...int) bool {
	if d.flags != 0 {
		d.fail("%s with flags %#x", kind, d.flags)
		return false
	}
	for _, n := range sizes {
		if len(d.data) == n {
			return true
		}
	}
	d.fail("%s of %d bytes", kind, len(d.data))
	return false
}

// once reports whether the current attribute's type is new in this
// walk; a repeated one fails it (the kernel puts each attribute once).
func (d *nlAttrDecoder) once() bool {
	if d.typ >= 256 {
		return true
	}
	w, bit := &d.seen[d.typ/64], uint64(1)<<(d.typ%64)
	if *w&bit != 0 {
		d.fail("repeated")
		return false
	}
	*w |= bit
	return true
}

func (d *nlAttrDecoder) u32() uint32 {
	if !d.scalar("u32", 4) {
		return 0
	}
	return abi.Native.Uint32(d.data)
}

func (d *nlAttrDecoder) u64() uint64 {
	if !d.scalar("u64", 8) {
		return 0
	}
	return abi.Native.Uint64(d.data)
}

// str reads an NLA_NUL_STRING as nla_put_string writes it: the text and
// exactly one NUL, at the end.
func (d *nlAttrDecoder) str() string {
	if d.flags != 0 {
		d.fail("string with flags %#x", d.flags)
		return ""
	}
	n := len(d.data)
	switch {
	case n == 0 || d.data[n-1] != 0:
		d.fail("string without its NUL terminator")
		return ""
	}
	for i, c := range d.data[:n-1] {
		if c == 0 {
			d.fail("string with a NUL at byte %d of %d", i, n)
			return ""
		}
	}
	return string(d.data[:n-1])
}

// parseNLAttrs walks the attributes of one message body, calling fn for
// each with the NLA_F_NESTED and NLA_F_NET_BYTEORDER bits stripped from
// its type; it stops at the first malformed attribute and returns why.
func parseNLAttrs(b []byte, fn func(typ uint16, payload []byte)) error {
	d := newNLAttrDecoder(b)
	for d.next() {
		fn(d.typ, d.data)
	}
	return d.err
}

// parseNLDevice reads one RDMA_NLDEV_CMD_GET reply (fill_dev_info in the
// kernel's nldev.c): the device's index and name, both required.
func parseNLDevice(attrs []byte) (index uint32, name string, err error) {
	var hasIndex, hasName bool
	d := newNLAttrDecoder(attrs)
	for d.next() {
		switch d.typ {
		case abi.RDMANldevAttrDevIndex:
			if d.once() {
				index, hasIndex = d.u32(), true
			}
		case abi.RDMANldevAttrDevName:
			if d.once() {
				name, hasName = d.str(), true
			}
		}
	}
	switch {
	case d.err != nil:
		return 0, "", d.err
	case !hasIndex:
		return 0, "", nlMalformed("device without RDMA_NLDEV_ATTR_DEV_INDEX")
	case !hasName:
		return 0, "", nlMalformed("device %d without RDMA_NLDEV_ATTR_DEV_NAME", index)
	case name == "":
		return 0, "", nlMalformed("device %d with an empty name", index)
	}
	return index, name, nil
}

// parseNLChardev reads one RDMA_NLDEV_CMD_GET_CHARDEV reply
// (nldev_get_chardev and ib_uverbs_get_nl_info): the node's name is
// required, the ABI version and driver id are read when present.
func parseNLChardev(attrs []byte) (nlChardev, error) {
	var out nlChardev
	d := newNLAttrDecoder(attrs)
	for d.next() {
		switch d.typ {
		case abi.RDMANldevAttrChardevName:
			if d.once() {
				out.name = d.str()
			}
		case abi.RDMANldevAttrChardevABI:
			if d.once() {
				out.abi = d.u64()
			}
		case abi.RDMANldevAttrChardev:
			if d.once() {
				d.u64() // checked, not used: we open the node by name
			}
		case abi.RDMANldevAttrUverbsDriverID:
			// The kernel puts a u32 (nla_put_u32) although the uapi
			// header comment says u64; accept either size exactly.
			if d.once() && d.scalar("driver id", 4, 8) {
				if len(d.data) == 8 {
					v := abi.Native.Uint64(d.data)
					if v > 1<<32-1 {
						d.fail("driver id %d out of range", v)
						break
					}
					out.driverID = uint32(v)
				} else {
					out.driverID = abi.Native.Uint32(d.data)
				}
				out.hasID = true
			}
		}
	}
	if d.err != nil {
		return nlChardev{}, d.err
	}
	if out.name == "" {
		return nlChardev{}, nlMalformed("GET_CHARDEV reply without RDMA_NLDEV_ATTR_CHARDEV_NAME")
	}
	return out, nil
}

// nlExchange is one request, against which every reply is checked.
type nlExchange struct {
	typ  uint16 // the request's message type; data replies carry the same
	seq  uint32
	pid  uint32 // our port id (getsockname); replies carry it or 0
	dump bool   // NLM_F_DUMP: NLM_F_MULTI replies, then NLMSG_DONE
}

// parse checks one received datagram and calls fn with the attributes of
// each data message in it. done reports that the reply is complete: a
// non-dump request's one message, a dump's NLMSG_DONE, or an ack; no
// bytes may follow it. A kernel error (NLMSG_ERROR with an errno) is
// returned wrapped, with the extended ack message when there is one.
func (x nlExchange) parse(b []byte, fn func(attrs []byte) error) (done bool, err error) {
	msgs, err := x.frame(b)
	if err != nil {
		return false, err
	}
	for i, m := range msgs {
		if done {
			return false, nlMalformed("%d more message(s) after the end of the reply", len(msgs)-i)
		}
		switch {
		case m.typ == unix.NLMSG_NOOP:
		case m.typ == unix.NLMSG_ERROR:
			if err := x.parseError(m.flags, m.data); err != nil {
				return false, err
			}
			done = true // an ack
		case m.typ == unix.NLMSG_DONE:
			if !x.dump {
				return false, nlMalformed("NLMSG_DONE in reply to a request that is not a dump")
			}
			if m.flags&unix.NLM_F_MULTI == 0 {
				return false, nlMalformed("NLMSG_DONE without NLM_F_MULTI")
			}
			// netlink_dump_done: the dump's final status, an int.
			if len(m.data) != 4 {
				return false, nlMalformed("NLMSG_DONE with %d bytes of status, want 4", len(m.data))
			}
			if e := int32(abi.Native.Uint32(m.data)); e != 0 {
				return false, nlErrno(e, "")
			}
			done = true
		case m.typ < unix.NLMSG_MIN_TYPE:
			return false, nlMalformed("unexpected control message type %d", m.typ)
		case m.typ != x.typ:
			return false, nlMalformed("message type %#x, want %#x", m.typ, x.typ)
		default:
			if multi := m.flags&unix.NLM_F_MULTI != 0; multi != x.dump {
				return false, nlMalformed("message flags %#x: NLM_F_MULTI is %v for a request with dump %v", m.flags, multi, x.dump)
			}
			if !x.dump && i != len(msgs)-1 {
				return false, nlMalformed("%d more message(s) after the only reply to a request that is not a dump", len(msgs)-1-i)
			}
			if err := fn(m.data); err != nil {
				return false, err
			}
			done = !x.dump
		}
	}
	return done, nil
}

// nlMessage is one message of a datagram: its header's type and flags,
// and its body.
type nlMessage struct {
	typ, flags uint16
	data       []byte
}

// frame splits a datagram into messages, checking every header first:
// nlmsg_len covers the header and, padded to 4 bytes, fits what is left;
// the sequence number is ours; the port id is ours or the kernel's 0.
func (x nlExchange) frame(b []byte) ([]nlMessage, error) {
	var msgs []nlMessage
	for len(b) > 0 {
		if len(b) < unix.NLMSG_HDRLEN {
			return nil, nlMalformed("%d trailing bytes, shorter than a message header", len(b))
		}
		mlen := int(abi.Native.Uint32(b[0:]))
		m := nlMessage{typ: abi.Native.Uint16(b[4:]), flags: abi.Native.Uint16(b[6:])}
		seq := abi.Native.Uint32(b[8:])
		pid := abi.Native.Uint32(b[12:])
		switch {
		case mlen < unix.NLMSG_HDRLEN:
			return nil, nlMalformed("message type %#x: nlmsg_len %d is shorter than its header", m.typ, mlen)
		case mlen > len(b):
			return nil, nlMalformed("message type %#x: nlmsg_len %d exceeds the %d bytes received", m.typ, mlen, len(b))
		case nlmsgAlign(mlen) > len(b):
			return nil, nlMalformed("message type %#x: nlmsg_len %d without its padding to %d bytes", m.typ, mlen, unix.NLMSG_ALIGNTO)
		case seq != x.seq:
			return nil, nlMalformed("message type %#x: sequence %d, want %d", m.typ, seq, x.seq)
		case pid != 0 && pid != x.pid:
			return nil, nlMalformed("message type %#x: port id %d, want %d (ours) or 0", m.typ, pid, x.pid)
		}
		m.data = b[unix.NLMSG_HDRLEN:mlen]
		msgs = append(msgs, m)
		b = b[nlmsgAlign(mlen):]
	}
	return msgs, nil
}

// parseError reads an NLMSG_ERROR body: struct nlmsgerr (the errno and
// the request's header, followed by the rest of the request unless
// NLM_F_CAPPED), then extended ack attributes if NLM_F_ACK_TLVS.
func (x nlExchange) parseError(flags uint16, data []byte) error {
	if len(data) < nlErrHeaderSize {
		return nlMalformed("NLMSG_ERROR of %d bytes, want at least %d", len(data), nlErrHeaderSize)
	}
	e := int32(abi.Native.Uint32(data[0:]))
	if e > 0 {
		return nlMalformed("NLMSG_ERROR with a positive error %d", e)
	}
	req := data[4:nlErrHeaderSize]
	rlen := int(abi.Native.Uint32(req[0:]))
	if rtyp, rseq := abi.Native.Uint16(req[4:]), abi.Native.Uint32(req[8:]); rtyp != x.typ || rseq != x.seq {
		return nlMalformed("NLMSG_ERROR for message type %#x sequence %d, want %#x sequence %d", rtyp, rseq, x.typ, x.seq)
	}
	rest := data[nlErrHeaderSize:]
	if flags&unix.NLM_F_CAPPED == 0 && (e != 0 || len(rest) != 0) {
		// An error echoes the whole request (what we sent, so padded);
		// an ack only its header, with NLM_F_CAPPED since Linux 4.12.
		if rlen < unix.NLMSG_HDRLEN || nlmsgAlign(rlen)-unix.NLMSG_HDRLEN > len(rest) {
			return nlMalformed("NLMSG_ERROR echoing a request of nlmsg_len %d in %d bytes", rlen, len(data)-4)
		}
		rest = rest[nlmsgAlign(rlen)-unix.NLMSG_HDRLEN:]
	}
	var msg string
	if flags&unix.NLM_F_ACK_TLVS != 0 {
		d := newNLAttrDecoder(rest)
		for d.next() {
			if d.typ == unix.NLMSGERR_ATTR_MSG && d.once() {
				msg = d.str()
			}
		}
		if d.err != nil {
			return fmt.Errorf("in NLMSG_ERROR's extended ack: %w", d.err)
		}
	} else if len(rest) != 0 {
		return nlMalformed("NLMSG_ERROR with %d extra bytes and no NLM_F_ACK_TLVS", len(rest))
	}
	if e == 0 {
		return nil
	}
	return nlErrno(e, msg)
}

// nlErrno is the kernel's answer -e to a request, as an error that
// matches the errno.
func nlErrno(e int32, msg string) error {
	if e > 0 {
		return nlMalformed("positive error %d", e)
	}
	if msg != "" {
		return fmt.Errorf("RDMA netlink: %s: %w", msg, unix.Errno(-e))
	}
	return fmt.Errorf("RDMA netlink: %w", unix.Errno(-e))
}

var nlSeq atomic.Uint32

// nlRequest sends one RDMA netlink request and calls fn with the
// attributes of each reply message until the kernel is done.
func nlRequest(op uint16, flags uint16, attrs []byte, fn func(attrs []byte) error) error {
	// One request, answered by the kernel inside it.
	fd, pid, err := kcall.NetlinkSocket(abi.NetlinkRDMA)
	if err != nil {
		return err
	}
	defer kcall.Close(fd)
	x := nlExchange{
		typ:  abi.RDMANLType(abi.RDMANLNldev, op),
		seq:  nlSeq.Add(1),
		pid:  pid,
		dump: flags&unix.NLM_F_DUMP == unix.NLM_F_DUMP,
	}
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(attrs))
	msg = append(msg, attrs...)
	abi.Native.PutUint32(msg[0:], uint32(len(msg)))
	abi.Native.PutUint16(msg[4:], x.typ)
	abi.Native.PutUint16(msg[6:], unix.NLM_F_REQUEST|flags)
	abi.Native.PutUint32(msg[8:], x.seq)
	abi.Native.PutUint32(msg[12:], x.pid)
	if err := kcall.NetlinkSendToKernel(fd, msg); err != nil {
		return err
	}
	buf := make([]byte, 32<<10)
	for {
		// Peek with MSG_TRUNC for the datagram's real size, so that a
		// large one is read whole instead of cut short.
		n, _, err := kcall.NetlinkRecv(fd, buf, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err != nil {
			return err
		}
		if n > len(buf) {
			buf = make([]byte, n)
		}
		n, from, err := kcall.NetlinkRecv(fd, buf, 0)
		if err != nil {
			return err
		}
		if from != 0 {
			return nlMalformed("datagram from port id %d, not from the kernel", from)
		}
		done, err := x.parse(buf[:n], fn)
		if err != nil || done {
			return err
		}
	}
}

// nlDeviceIndex finds the kernel index of the device called name.
func nlDeviceIndex(name string) (uint32, error) {
	var idx uint32
	found := false
	err := nlRequest(abi.RDMANldevCmdGet, unix.NLM_F_DUMP, nil, func(attrs []byte) error {
		i, n, err := parseNLDevice(attrs)
		if err != nil {
			return err
		}
		if n == name && !found {
			idx, found = i, true
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("uverbs: %w: netlink lists no device %q", ErrNoDevice, name)
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
	got := false
	err = nlRequest(abi.RDMANldevCmdGetChardev, 0, attrs, func(attrs []byte) error {
		c, err := parseNLChardev(attrs)
		if err != nil {
			return err
		}
		out, got = c, true
		return nil
	})
	if err != nil {
		return nlChardev{}, err
	}
	if !got {
		return nlChardev{}, nlMalformed("GET_CHARDEV acknowledged without a reply")
	}
	return out, nil
}
