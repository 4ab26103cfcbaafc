package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
)

// Exit statuses.
const (
	exitOK    = 0
	exitInput = 1
	exitUsage = 2
)

// More link types carrying raw IP (pcap LINKTYPE_IPV4, LINKTYPE_IPV6).
const (
	linkTypeIPv4 pcap.LinkType = 228
	linkTypeIPv6 pcap.LinkType = 229
)

// stats counts what the dump saw, for the summary line.
type stats struct {
	frames, cm, skipped, malformed int
}

type dumper struct {
	out       *bufio.Writer
	errOut    io.Writer
	json      bool
	checkICRC bool
	describe  bool // -describe: each line is followed by mad.Describe's
	stats     stats
	enc       *json.Encoder
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cmdump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object per CM MAD with every decoded field")
	checkICRC := fs.Bool("icrc", true, "verify the RoCEv2 ICRC; frames with a wrong one are malformed")
	describe := fs.Bool("describe", false, "after each line, the message as the CM engine's logs and transcripts show it (mad.Describe)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cmdump [-json] [-describe] [-icrc=false] [file.pcap ...]   (no file or \"-\": standard input)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	d := &dumper{out: bufio.NewWriter(stdout), errOut: stderr, json: *jsonOut, checkICRC: *checkICRC, describe: *describe}
	if d.json {
		d.enc = json.NewEncoder(d.out)
	}
	status := exitOK
	for _, name := range files {
		if err := d.dumpFile(name, stdin, len(files) > 1); err != nil {
			d.out.Flush()
			fmt.Fprintf(stderr, "cmdump: %v\n", err)
			status = exitInput
		}
	}
	if err := d.out.Flush(); err != nil {
		fmt.Fprintf(stderr, "cmdump: writing output: %v\n", err)
		status = exitInput
	}
	s := d.stats
	fmt.Fprintf(stderr, "cmdump: %d frames, %d CM MADs, %d skipped (not CM), %d malformed\n", s.frames, s.cm, s.skipped, s.malformed)
	return status
}

// dumpFile decodes one capture. It returns an error only when the file
// cannot be read; bad frames are reported and skipped.
func (d *dumper) dumpFile(name string, stdin io.Reader, showName bool) error {
	var r io.Reader = stdin
	label := name
	if name == "-" {
		label = "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	pr, err := pcap.NewReader(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	lt := pr.LinkType()
	switch lt {
	case pcap.LinkTypeEthernet, pcap.LinkTypeRaw, linkTypeIPv4, linkTypeIPv6, pcap.LinkTypeLinuxSLL, pcap.LinkTypeLinuxSLL2:
	default:
		return fmt.Errorf("%s: unsupported link type %d (want Ethernet, raw IP or Linux cooked)", label, lt)
	}
	prefix := ""
	if showName {
		prefix = label + ": "
	}
	for n := 1; ; n++ {
		rec, err := pr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		d.stats.frames++
		msg, err := d.decodeFrame(lt, rec.Data)
		switch {
		case err == nil:
			d.stats.cm++
			msg.File = label
			if !showName {
				msg.File = ""
			}
			msg.Frame = n
			msg.Time = rec.Time
			if err := d.print(prefix, msg); err != nil {
				return err
			}
		case errors.Is(err, errNotCM):
			d.stats.skipped++
		default:
			d.stats.malformed++
			if rec.OrigLen > len(rec.Data) {
				err = fmt.Errorf("%w (captured %d of %d bytes)", err, len(rec.Data), rec.OrigLen)
			}
			d.out.Flush() // keep stdout and stderr in order on a terminal
			fmt.Fprintf(d.errOut, "cmdump: %sframe %d: malformed: %v\n", prefix, n, err)
		}
	}
}

// errNotCM marks frames that are skipped without a report.
var errNotCM = errors.New("not a CM MAD")

// decodeFrame turns one captured frame into a decoded CM message, or
// errNotCM, or another error for a malformed frame.
func (d *dumper) decodeFrame(lt pcap.LinkType, data []byte) (*record, error) {
	var (
		p   roce.Packet
		err error
	)
	switch lt {
	case pcap.LinkTypeEthernet:
		p, err = roce.Decode(data)
	case pcap.LinkTypeRaw, linkTypeIPv4, linkTypeIPv6:
		p, err = roce.DecodeIP(data)
	case pcap.LinkTypeLinuxSLL, pcap.LinkTypeLinuxSLL2:
		p, err = decodeCooked(lt, data)
	}
	if err != nil {
		if errors.Is(err, roce.ErrNotIP) || errors.Is(err, roce.ErrNotRoCEv2) {
			return nil, fmt.Errorf("%w: %v", errNotCM, err)
		}
		return nil, err
	}
	raw, err := p.MAD()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotCM, err)
	}
	if class := raw[1]; class != mad.ClassCM {
		return nil, fmt.Errorf("%w: management class %#02x", errNotCM, class)
	}
	if d.checkICRC {
		if err := p.CheckICRC(); err != nil {
			return nil, err
		}
	}
	view, err := mad.Parse(raw)
	if err != nil {
		return nil, err
	}
	r := newRecord(p, view)
	if d.describe {
		r.described = mad.Describe(raw)
	}
	return r, nil
}

// decodeCooked strips a Linux cooked-capture header (tcpdump -i any).
func decodeCooked(lt pcap.LinkType, data []byte) (roce.Packet, error) {
	var hdrLen, protoOff int
	if lt == pcap.LinkTypeLinuxSLL {
		hdrLen, protoOff = 16, 14
	} else {
		hdrLen, protoOff = 20, 0
	}
	if len(data) < hdrLen {
		return roce.Packet{}, fmt.Errorf("%w: %d-byte Linux cooked header", roce.ErrTruncated, len(data))
	}
	switch proto := binary.BigEndian.Uint16(data[protoOff:]); proto {
	case roce.EtherTypeIPv4, roce.EtherTypeIPv6:
		return roce.DecodeIP(data[hdrLen:])
	default:
		return roce.Packet{}, fmt.Errorf("%w: protocol %#04x", roce.ErrNotIP, proto)
	}
}

func (d *dumper) print(prefix string, r *record) error {
	if d.json {
		return d.enc.Encode(r)
	}
	_, err := fmt.Fprintf(d.out, "%s%s %s\n", prefix, r.Time.UTC().Format("15:04:05.000000"), r.line())
	if err == nil && r.described != "" {
		_, err = fmt.Fprintf(d.out, "%s    %s\n", prefix, r.described)
	}
	return err
}
