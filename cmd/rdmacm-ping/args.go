package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-rdma/rdmacm/ece"
)

// config holds the command line. Short options follow rping (getopt
// style: "-vV" and "-C10" work); long options are this tool's additions.
type config struct {
	server, client bool
	addr           string
	source         string
	port           int
	portSet        bool
	count          int
	size           int
	verbose        bool
	validate       bool
	debug          bool
	persistent     bool
	selfQP         bool

	ece         ece.ECE
	eceSet      bool
	rejectECE   bool
	connectOnly bool
	// disconnectFirst: a -connect-only server sends the DREQ itself.
	disconnectFirst bool
	backend         string
	cmtime          int
	timeout         int // seconds for each blocking step
	cpuprofile      string
	pcap            string // -pcap FILE: the user backend's MADs, RoCEv2-framed
	umadSends       bool   // -umad-sends: the user backend sends through umad
	cmtimeOwnCQs    bool   // -cmtime-own-cqs: every QP makes its own CQs (cmtime shares the first QP's)
	lineBuffered    bool   // -line-buffered: -cmtime writes each line at once (as on a terminal)
	cmtimeUsage     bool   // -cmtime-usage: -cmtime prints each step's context switches and minor faults
}

const usageText = `usage:
  rdmacm-ping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P] [-q]
  rdmacm-ping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port] [-q]
	-c		client side
	-s		server side
	-a addr		address (server: bind address, default any)
	-I addr		source address for the client
	-p port		port (default 7174; 7471 with -cmtime, as cmtime)
	-C count	ping count (default: forever)
	-S size		ping data size (default 64)
	-v		print each ping's data
	-V		validate ping data
	-d		debug output
	-P		persistent server: serve connections one after another
	-q		use a QP created and modified by this program (external QP)
	-ece VENDOR:OPTIONS	offer ECE (C number syntax, e.g. 0x15b3:0x30000001)
	-reject-ece	server: reject the first request with REJ reason 35, exit 0
	-connect-only	establish, print the remote ECE and private data length, disconnect
	-disconnect-first	with -connect-only on a server: disconnect first instead of waiting for the peer
	-backend kernel|user|auto	connection manager backend (default auto)
	-pcap FILE	write the CM MADs the user backend sends and receives (RoCEv2 framing)
	-umad-sends	user backend: send MADs through umad, not from a UD QP (slower; for comparison)
	-cmtime N	client: time N connections as cmtime does; server: serve them
	-cmtime-own-cqs	with -cmtime: two CQs per QP (cmtime's QPs share the first one's)
	-line-buffered	with -cmtime: write each output line at once, as on a terminal (default: at exit, as cmtime's stdio into a pipe)
	-cmtime-usage	with -cmtime: print each step's context switches and minor faults (getrusage) to stderr
	-t seconds	timeout of each step (default 30)
	-cpuprofile FILE	write a CPU profile (for tuning)`

// longFlags take the whole argument as a name; anything else is a cluster
// of short options.
var longFlags = map[string]bool{
	"ece": true, "reject-ece": true, "connect-only": true, "disconnect-first": true, "backend": true, "cmtime": true, "help": true,
	"cpuprofile": true, "pcap": true, "umad-sends": true, "cmtime-own-cqs": true, "line-buffered": true, "cmtime-usage": true,
}

func parseArgs(args []string) (*config, error) {
	c := &config{port: 7174, size: 64, backend: "auto", timeout: 30}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return nil, fmt.Errorf("unexpected argument %q", a)
		}
		name := strings.TrimLeft(a, "-")
		val := ""
		if k, v, ok := strings.Cut(name, "="); ok && longFlags[k] {
			name, val = k, v
		}
		if longFlags[name] {
			need := name == "ece" || name == "backend" || name == "cmtime" || name == "cpuprofile" || name == "pcap"
			if need && val == "" {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("-%s needs a value", name)
				}
				i++
				val = args[i]
			}
			if err := c.setLong(name, val); err != nil {
				return nil, err
			}
			continue
		}
		for j := 0; j < len(name); j++ {
			o := name[j]
			switch o {
			case 's':
				c.server = true
			case 'c':
				c.client = true
			case 'v':
				c.verbose = true
			case 'V':
				c.validate = true
			case 'd':
				c.debug = true
			case 'P':
				c.persistent = true
			case 'q':
				c.selfQP = true
			case 'a', 'I', 'p', 'C', 'S', 't':
				v := name[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("-%c needs a value", o)
					}
					i++
					v = args[i]
				}
				if err := c.setShort(o, v); err != nil {
					return nil, err
				}
				j = len(name)
			default:
				return nil, fmt.Errorf("unknown option -%c", o)
			}
		}
	}
	switch {
	case c.server == c.client:
		return nil, fmt.Errorf("give exactly one of -s and -c")
	case c.client && c.addr == "":
		return nil, fmt.Errorf("the client needs -a ADDR")
	case c.rejectECE && !c.server:
		return nil, fmt.Errorf("-reject-ece is a server option")
	case c.size < minSize:
		return nil, fmt.Errorf("-S %d: the size must be at least %d", c.size, minSize)
	case c.cmtime < 0:
		return nil, fmt.Errorf("-cmtime must be positive")
	}
	if c.cmtime > 0 && !c.portSet {
		c.port = 7471
	}
	return c, nil
}

func (c *config) setShort(o byte, v string) error {
	var err error
	switch o {
	case 'a':
		c.addr = v
	case 'I':
		c.source = v
	case 'p':
		c.port, err = strconv.Atoi(v)
		if err == nil && (c.port < 0 || c.port > 65535) {
			err = fmt.Errorf("out of range")
		}
		c.portSet = true
	case 'C':
		c.count, err = strconv.Atoi(v)
	case 'S':
		c.size, err = strconv.Atoi(v)
	case 't':
		c.timeout, err = strconv.Atoi(v)
	}
	if err != nil {
		return fmt.Errorf("-%c %q: %v", o, v, err)
	}
	return nil
}

func (c *config) setLong(name, v string) error {
	switch name {
	case "help":
		return fmt.Errorf("help requested")
	case "ece":
		e, err := parseECE(v)
		if err != nil {
			return err
		}
		c.ece, c.eceSet = e, true
	case "reject-ece":
		c.rejectECE = true
	case "cpuprofile":
		c.cpuprofile = v
	case "pcap":
		c.pcap = v
	case "umad-sends":
		c.umadSends = true
	case "cmtime-own-cqs":
		c.cmtimeOwnCQs = true
	case "line-buffered":
		c.lineBuffered = true
	case "cmtime-usage":
		c.cmtimeUsage = true
	case "connect-only":
		c.connectOnly = true
	case "disconnect-first":
		c.disconnectFirst = true
	case "backend":
		switch v {
		case "kernel", "user", "auto":
			c.backend = v
		default:
			return fmt.Errorf("-backend %q: want kernel, user or auto", v)
		}
	case "cmtime":
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("-cmtime %q: want a positive number of connections", v)
		}
		c.cmtime = n
	}
	return nil
}

// parseECE reads VENDOR:OPTIONS with C number syntax (0x hex, 0 octal,
// decimal) and validates it as rdma_set_local_ece would.
func parseECE(s string) (ece.ECE, error) {
	v, o, ok := strings.Cut(s, ":")
	if !ok {
		return ece.ECE{}, fmt.Errorf("-ece %q: want VENDOR:OPTIONS, e.g. 0x15b3:0x30000001", s)
	}
	vendor, err := strconv.ParseUint(v, 0, 32)
	if err != nil {
		return ece.ECE{}, fmt.Errorf("-ece vendor %q: %v", v, err)
	}
	opts, err := strconv.ParseUint(o, 0, 32)
	if err != nil {
		return ece.ECE{}, fmt.Errorf("-ece options %q: %v", o, err)
	}
	e := ece.ECE{VendorID: uint32(vendor), Options: uint32(opts)}
	if err := e.Validate(); err != nil {
		return ece.ECE{}, fmt.Errorf("-ece %q: %w", s, err)
	}
	return e, nil
}

// formatECE prints an ECE as the C fixture and this tool's tests expect.
func formatECE(e ece.ECE) string {
	return fmt.Sprintf("vendor=0x%x options=0x%x", e.VendorID, e.Options)
}
