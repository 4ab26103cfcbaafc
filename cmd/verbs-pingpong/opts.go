package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-rdma/rdmacm/rdma"
)

// options are ibv_rc_pingpong's, with its defaults.
type options struct {
	port       int      // -p, --port: TCP port of the exchange (18515)
	device     string   // -d, --ib-dev: device (first found)
	ibPort     int      // -i, --ib-port: device port (1)
	size       int      // -s, --size: message size (4096)
	mtu        rdma.MTU // -m, --mtu: path MTU (1024)
	rxDepth    int      // -r, --rx-depth: receives posted at a time (500)
	iters      int      // -n, --iters: exchanges (1000)
	sl         int      // -l, --sl: service level (0)
	events     bool     // -e, --events: sleep on CQ events instead of polling
	gidIndex   int      // -g, --gid-idx: local GID index (-1: none, IB only)
	validate   bool     // -c, --chk: validate the received buffer
	serverName string   // the server to connect to; empty: be the server
	// srq (-srq, --srq) speaks ibv_srq_pingpong's protocol instead:
	// numQP RC QPs (-q, --num-qp; 16) receive from one shared receive
	// queue of rxDepth receives. Without it numQP is 1.
	srq   bool
	numQP int
}

// Limits and defaults of ibv_srq_pingpong.
const (
	maxQP        = 256 // MAX_QP: the exchange always carries this many addresses
	defaultNumQP = 16
)

func defaultOptions() options {
	return options{port: 18515, ibPort: 1, size: 4096, mtu: rdma.MTU1024, rxDepth: 500, iters: 1000, gidIndex: -1, numQP: 1}
}

const usageText = `Usage:
  %[1]s            start a server and wait for connection
  %[1]s <host>     connect to server at <host>
  %[1]s -srq ...   the same with ibv_srq_pingpong's protocol

Options:
  -p, --port=<port>      listen on/connect to port <port> (default 18515)
  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)
  -i, --ib-port=<port>   use port <port> of IB device (default 1)
  -s, --size=<size>      size of message to exchange (default 4096)
  -m, --mtu=<size>       path MTU (default 1024)
  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)
  -n, --iters=<iters>    number of exchanges (default 1000)
  -l, --sl=<sl>          service level value
  -e, --events           sleep on CQ events (default poll)
  -g, --gid-idx=<gid index> local port gid index
  -c, --chk              validate received buffer (not with -srq)
  -srq, --srq            speak ibv_srq_pingpong: QPs sharing one SRQ
  -q, --num-qp=<num>     number of QPs to use with -srq (default 16)
`

var errUsage = errors.New("usage")

// optSpec maps short and long names to whether they take an argument.
var optSpec = map[string]struct {
	short byte
	arg   bool
}{
	"port": {'p', true}, "ib-dev": {'d', true}, "ib-port": {'i', true}, "size": {'s', true},
	"mtu": {'m', true}, "rx-depth": {'r', true}, "iters": {'n', true}, "sl": {'l', true},
	"events": {'e', false}, "gid-idx": {'g', true}, "chk": {'c', false},
	// ibv_srq_pingpong's: "-srq" is a word of its own (as a bundle it
	// would read -s rq), "-q" is valid with it only.
	"srq": {0, false}, "num-qp": {'q', true},
	// ibv_rc_pingpong options this twin does not implement.
	"odp": {'o', false}, "iodp": {'O', false}, "prefetch": {'P', false}, "ts": {'t', false},
	"dm": {'j', false}, "new_send": {'N', false},
}

func shortSpec(c byte) (string, bool, bool) {
	for name, s := range optSpec {
		if s.short == c {
			return name, s.arg, true
		}
	}
	return "", false, false
}

// parseOptions parses args as getopt_long does for ibv_rc_pingpong and
// ibv_srq_pingpong: "-p 1", "-p1", "--port=1", "--port 1", bundled flags
// ("-ec"), options and the server name in any order, "--" ending the
// options; "-srq" is the one multi-letter word with a single dash.
func parseOptions(args []string) (options, error) {
	o := defaultOptions()
	o.numQP = 0 // not given yet
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-srq":
			o.srq = true
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			s, ok := optSpec[name]
			if !ok {
				return o, fmt.Errorf("%w: unrecognized option '--%s'", errUsage, name)
			}
			if s.arg && !hasVal {
				if i+1 == len(args) {
					return o, fmt.Errorf("%w: option '--%s' requires an argument", errUsage, name)
				}
				i++
				val = args[i]
			}
			if err := o.set(name, val); err != nil {
				return o, err
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				name, hasArg, ok := shortSpec(a[j])
				if !ok {
					return o, fmt.Errorf("%w: invalid option -- '%c'", errUsage, a[j])
				}
				if !hasArg {
					if err := o.set(name, ""); err != nil {
						return o, err
					}
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 == len(args) {
						return o, fmt.Errorf("%w: option requires an argument -- '%c'", errUsage, a[j])
					}
					i++
					val = args[i]
				}
				if err := o.set(name, val); err != nil {
					return o, err
				}
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	switch len(operands) {
	case 0:
	case 1:
		o.serverName = operands[0]
	default:
		return o, fmt.Errorf("%w: more than one server name", errUsage)
	}
	return o, o.finish()
}

// finish checks what depends on the mode, once every option is known.
func (o *options) finish() error {
	switch {
	case !o.srq && o.numQP != 0:
		return fmt.Errorf("%w: -q (--num-qp) is ibv_srq_pingpong's: give -srq too", errUsage)
	case !o.srq:
		o.numQP = 1
		if o.rxDepth < 2 {
			return fmt.Errorf("%w: rx-depth %d", errUsage, o.rxDepth)
		}
	case o.validate:
		return fmt.Errorf("%w: -c (--chk) is not an ibv_srq_pingpong option", errUsage)
	case o.numQP == 0:
		o.numQP = defaultNumQP
	}
	if o.numQP < 1 || o.numQP > maxQP {
		return fmt.Errorf("%w: num-qp %d out of range 1..%d", errUsage, o.numQP, maxQP)
	}
	return nil
}

// number parses like strtol(…, 0): decimal, 0x hex or 0 octal.
func number(name, v string) (int, error) {
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: --%s=%q is not a number", errUsage, name, v)
	}
	return int(n), nil
}

func (o *options) set(name, val string) error {
	var err error
	switch name {
	case "port":
		if o.port, err = number(name, val); err == nil && (o.port < 0 || o.port > 65535) {
			err = fmt.Errorf("%w: port %d", errUsage, o.port)
		}
	case "ib-dev":
		o.device = val
	case "ib-port":
		if o.ibPort, err = number(name, val); err == nil && o.ibPort < 1 {
			err = fmt.Errorf("%w: ib-port %d", errUsage, o.ibPort)
		}
	case "size":
		if o.size, err = number(name, val); err == nil && o.size < 1 {
			err = fmt.Errorf("%w: size %d", errUsage, o.size)
		}
	case "mtu":
		var n int
		if n, err = number(name, val); err == nil {
			var ok bool
			if o.mtu, ok = rdma.MTUFromBytes(n); !ok {
				err = fmt.Errorf("%w: mtu %d (256, 512, 1024, 2048 or 4096)", errUsage, n)
			}
		}
	case "rx-depth":
		if o.rxDepth, err = number(name, val); err == nil && o.rxDepth < 1 {
			err = fmt.Errorf("%w: rx-depth %d", errUsage, o.rxDepth)
		}
	case "iters":
		if o.iters, err = number(name, val); err == nil && o.iters < 1 {
			err = fmt.Errorf("%w: iters %d", errUsage, o.iters)
		}
	case "sl":
		o.sl, err = number(name, val)
	case "events":
		o.events = true
	case "gid-idx":
		o.gidIndex, err = number(name, val)
	case "chk":
		o.validate = true
	case "srq":
		o.srq = true
	case "num-qp":
		o.numQP, err = number(name, val)
		if err == nil && o.numQP < 1 {
			err = fmt.Errorf("%w: num-qp %d out of range 1..%d", errUsage, o.numQP, maxQP)
		}
	default:
		err = fmt.Errorf("%w: --%s is not implemented by verbs-pingpong", errUsage, name)
	}
	return err
}
