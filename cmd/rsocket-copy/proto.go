package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

// rcopy's messages (librdmacm/examples/rcopy.c): a 16-byte header in the
// sender's byte order (rcopy.c: "TODO: handle byte swapping"), so both ends
// must share one; every host the guests and CI run is little-endian, and
// NativeEndian keeps a big-endian pair working the same way.
const (
	cmdNoop  = 0
	cmdOpen  = 1
	cmdClose = 2
	cmdWrite = 3
	cmdResp  = 0x80

	hdrLen   = 16 // version u8, command u8, len u16, data u32, id u64
	writeLen = hdrLen + 8
)

var order = binary.NativeEndian

// header is struct msg_hdr.
type header struct {
	version, command uint8
	length           uint16
	data             uint32
	id               uint64
}

func (h header) marshal(b []byte) {
	b[0], b[1] = h.version, h.command
	order.PutUint16(b[2:], h.length)
	order.PutUint32(b[4:], h.data)
	order.PutUint64(b[8:], h.id)
}

// errBadMessage is a header rcopy would refuse.
var errBadMessage = errors.New("rsocket-copy: bad message")

// readHeader is msg_recv_hdr: version 0 and a length covering the header.
func readHeader(r io.Reader) (header, error) {
	var b [hdrLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return header{}, err
	}
	h := header{version: b[0], command: b[1], length: order.Uint16(b[2:]), data: order.Uint32(b[4:]), id: order.Uint64(b[8:])}
	if h.version != 0 || h.length < hdrLen {
		return h, fmt.Errorf("%w: invalid version %d or length %d", errBadMessage, h.version, h.length)
	}
	return h, nil
}

func writeHeader(w io.Writer, h header) error {
	var b [hdrLen]byte
	h.marshal(b[:])
	_, err := w.Write(b[:])
	return err
}

// getResponse is msg_get_resp: the reply to cmd, its status an errno.
func getResponse(r io.Reader, cmd uint8) error {
	h, err := readHeader(r)
	if err != nil {
		return err
	}
	if h.length != hdrLen || h.command != cmd|cmdResp {
		return fmt.Errorf("%w: invalid length %d or bad command response %x:%x", errBadMessage, h.length, h.command, cmd|cmdResp)
	}
	if h.data != 0 {
		return fmt.Errorf("rsocket-copy: the server answered %w", syscall.Errno(h.data))
	}
	return nil
}

// sendResponse is msg_send_resp.
func sendResponse(w io.Writer, req header, status uint32) error {
	return writeHeader(w, header{command: req.command | cmdResp, length: hdrLen, data: status, id: req.id})
}

// copyBuffer is what the data moves through: large writes let rsocket
// grow its chunks to 64 KiB (rsend starts each call at 2 KiB).
const copyBuffer = 4 << 20

// clientCopy is rcopy's client_run after the connect: open the remote
// file, send the data, close it. It returns the bytes sent and the time
// the data took (from the write request to its reply, as rcopy times it).
func clientCopy(conn io.ReadWriter, src *os.File, dst string, log io.Writer) (int64, time.Duration, error) {
	st, err := src.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := st.Size()

	fmt.Fprint(log, "opening...")
	// msg_open: the header and the path, NUL-terminated and padded to 8.
	pathLen := (len(dst) + 8) &^ 7
	open := make([]byte, hdrLen+pathLen)
	header{command: cmdOpen, length: uint16(hdrLen + pathLen), data: uint32(st.Mode().Perm()) | syscallMode(st)}.marshal(open)
	copy(open[hdrLen:], dst)
	if _, err := conn.Write(open); err != nil {
		return 0, 0, err
	}
	if err := getResponse(conn, cmdOpen); err != nil {
		return 0, 0, err
	}

	fmt.Fprint(log, "transferring")
	var write [writeLen]byte
	header{command: cmdWrite, length: writeLen}.marshal(write[:])
	order.PutUint64(write[hdrLen:], uint64(size))
	if _, err := conn.Write(write[:]); err != nil {
		return 0, 0, err
	}
	fmt.Fprint(log, "...")
	start := time.Now()
	buf := make([]byte, min(copyBuffer, max(size, 1)))
	sent, err := io.CopyBuffer(writerOnly{conn}, io.LimitReader(src, size), buf)
	if err == nil && sent != size {
		err = fmt.Errorf("rsocket-copy: %s shrank to %d bytes while being sent", src.Name(), sent)
	}
	if err == nil {
		err = getResponse(conn, cmdWrite)
	}
	elapsed := time.Since(start)

	// client_close, whatever happened to the data.
	fmt.Fprint(log, "closing...")
	cerr := writeHeader(conn, header{command: cmdClose, length: hdrLen})
	if cerr == nil {
		cerr = getResponse(conn, cmdClose)
	}
	if err == nil {
		err = cerr
	}
	if err == nil {
		fmt.Fprintln(log, "done")
	}
	return sent, elapsed, err
}

// writerOnly hides ReadFrom, so io.CopyBuffer uses our large buffer.
type writerOnly struct{ io.Writer }

// destination is what the server writes a copy into (*os.File).
type destination interface {
	io.Writer
	Truncate(size int64) error
	Close() error
}

// openFunc opens a destination as server_open does.
type openFunc func(name string, perm os.FileMode) (destination, error)

// openFile is server_open's open(path, O_RDWR | O_CREAT | O_TRUNC, mode).
func openFile(name string, perm os.FileMode) (destination, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, perm)
}

// serveConn is rcopy's server_process: commands until the client goes or
// sends something rcopy would refuse.
func serveConn(conn io.ReadWriter, open openFunc, log io.Writer) error {
	s := &session{conn: conn, openFile: open, log: log}
	defer s.closeFile()
	for {
		h, err := readHeader(conn)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var status uint32
		switch h.command {
		case cmdOpen:
			status, err = s.open(h)
		case cmdClose:
			fmt.Fprint(log, "closing...")
			err := sendResponse(conn, h, 0)
			s.closeFile()
			if err != nil {
				return err
			}
			fmt.Fprintln(log, "done")
			continue
		case cmdWrite:
			status, err = s.write(h)
		default:
			sendResponse(conn, h, uint32(syscall.EINVAL))
			return fmt.Errorf("%w: command %d", errBadMessage, h.command)
		}
		if err != nil {
			return err
		}
		if err := sendResponse(conn, h, status); err != nil {
			return err
		}
		if status != 0 {
			// rcopy's loop ends on any failed command.
			return fmt.Errorf("rsocket-copy: command %d failed: %v", h.command, syscall.Errno(status))
		}
	}
}

type session struct {
	conn     io.ReadWriter
	openFile openFunc
	log      io.Writer
	file     destination
}

func (s *session) closeFile() {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
}

// open is server_open: O_RDWR|O_CREAT|O_TRUNC with the client's mode.
// A transport error is returned as err; a refusal as an errno status.
func (s *session) open(h header) (uint32, error) {
	fmt.Fprint(s.log, "opening: ")
	path := make([]byte, int(h.length)-hdrLen)
	if _, err := io.ReadFull(s.conn, path); err != nil {
		fmt.Fprintln(s.log, "error receiving path")
		return 0, err
	}
	if s.file != nil {
		fmt.Fprintln(s.log, "cannot open another file")
		return uint32(syscall.EBUSY), nil
	}
	name, _, _ := strings.Cut(string(path), "\x00")
	fmt.Fprintf(s.log, "%s, ", name)
	if name == "" {
		fmt.Fprintln(s.log, "unable to open destination file")
		return uint32(syscall.ENOENT), nil
	}
	f, err := s.openFile(name, os.FileMode(h.data).Perm())
	if err != nil {
		fmt.Fprintln(s.log, "unable to open destination file")
		return errnoOf(err), nil
	}
	s.file = f
	return 0, nil
}

// write is server_write: the size, then that many bytes into the file.
func (s *session) write(h header) (uint32, error) {
	fmt.Fprint(s.log, "transferring")
	if s.file == nil {
		fmt.Fprintln(s.log, "...file not opened")
		return uint32(syscall.EINVAL), nil
	}
	if h.length != writeLen {
		fmt.Fprintf(s.log, "...invalid message length %d\n", h.length)
		return uint32(syscall.EINVAL), nil
	}
	var b [8]byte
	if _, err := io.ReadFull(s.conn, b[:]); err != nil {
		return 0, err
	}
	size := int64(order.Uint64(b[:]))
	if size < 0 {
		return uint32(syscall.EFBIG), nil
	}
	if err := s.file.Truncate(size); err != nil {
		return errnoOf(err), nil
	}
	fmt.Fprintf(s.log, "...%d bytes...", size)
	buf := make([]byte, min(copyBuffer, max(size, 1)))
	n, err := io.CopyBuffer(writerOnly{s.file}, io.LimitReader(s.conn, size), buf)
	if err == nil && n < size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		fmt.Fprintln(s.log, "...error receiving data")
		return 0, err
	}
	return 0, nil
}

// errnoOf is the errno behind err, EIO if none.
func errnoOf(err error) uint32 {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return uint32(errno)
	}
	return uint32(syscall.EIO)
}
