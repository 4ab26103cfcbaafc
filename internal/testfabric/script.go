package testfabric

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// Case is one command of a transcript with its expected output.
type Case struct {
	Line     int
	Command  string
	Expected string
}

// ParseTranscript splits a transcript file into cases. The format:
//
//	# comment lines and blank lines between cases are ignored
//	command args...
//	----
//	expected output, one line per entry
//	(a blank line ends the case)
func ParseTranscript(text string) ([]Case, error) {
	lines := strings.Split(text, "\n")
	var cases []Case
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := Case{Line: i + 1, Command: l}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "----" {
			return nil, fmt.Errorf("line %d: command %q without a ---- separator", i+1, l)
		}
		i += 2
		var exp []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			exp = append(exp, lines[i])
		}
		c.Expected = strings.Join(exp, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

// FormatTranscript writes cases back, with the comments of the original
// dropped only where they sat between a command and its output.
func FormatTranscript(original string, cases []Case, outputs []string) string {
	lines := strings.Split(original, "\n")
	var b strings.Builder
	ci := 0
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if ci < len(cases) && i+1 == cases[ci].Line {
			b.WriteString(cases[ci].Command + "\n----\n")
			if outputs[ci] != "" {
				b.WriteString(outputs[ci] + "\n")
			}
			// skip the old output
			i += 2
			for i < len(lines) && lines[i] != "" {
				i++
			}
			b.WriteString("\n")
			ci++
			continue
		}
		if l == "" && strings.HasSuffix(b.String(), "\n\n") {
			continue
		}
		b.WriteString(lines[i] + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// Script runs transcript commands on a fabric it creates with "nodes".
type Script struct {
	F       *Fabric
	out     []string
	aliases map[uint32]string
	owner   map[string]int // alias → node index
	count   []int
	last    []engine.ID // last ID an event named, per node
	lastReq []engine.ID
	timed   bool
	lastMAD map[mad.AttributeID]packet
}

// NewScript returns an empty script; its first command must be "nodes".
func NewScript() *Script { return &Script{} }

var hexID = regexp.MustCompile(`0x[0-9a-f]{6,8}\b`)

func (s *Script) trace(line string) {
	line = hexID.ReplaceAllStringFunc(line, func(h string) string {
		v, err := strconv.ParseUint(h[2:], 16, 32)
		if err != nil {
			return h
		}
		if a, ok := s.aliases[uint32(v)]; ok {
			return a
		}
		return h
	})
	if s.timed {
		line = fmt.Sprintf("@%v %s", s.F.Now.Sub(Epoch), line)
	}
	s.out = append(s.out, line)
}

// alias names an ID the first time a node shows it: "<node>:<n>".
func (s *Script) alias(node int, id engine.ID) string {
	if a, ok := s.aliases[uint32(id)]; ok {
		return a
	}
	s.count[node]++
	a := fmt.Sprintf("%d:%d", node+1, s.count[node])
	s.aliases[uint32(id)] = a
	s.owner[a] = node
	return a
}

// Run executes one command and returns its output.
func (s *Script) Run(cmd string) (string, error) {
	s.out = s.out[:0]
	s.timed = false
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return "", fmt.Errorf("empty command")
	}
	args := map[string]string{}
	var pos []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	if f[0] != "nodes" && s.F == nil {
		return "", fmt.Errorf("the first command must be nodes")
	}
	if err := s.exec(f[0], pos, args); err != nil {
		return "", err
	}
	if s.F != nil {
		if err := s.F.Err(); err != nil {
			s.F.Errors = nil
			s.out = append(s.out, "ERROR "+err.Error())
		}
	}
	return strings.Join(s.out, "\n"), nil
}

func (s *Script) node(a string) (int, error) {
	n, err := strconv.Atoi(a)
	if err != nil || n < 1 || n > len(s.F.Nodes) {
		return 0, fmt.Errorf("bad node %q", a)
	}
	return n - 1, nil
}

func (s *Script) pair(a string) (int, int, error) {
	x, y, ok := strings.Cut(a, "->")
	if !ok {
		return 0, 0, fmt.Errorf("want i->j, got %q", a)
	}
	i, err := s.node(x)
	if err != nil {
		return 0, 0, err
	}
	j, err := s.node(y)
	return i, j, err
}

// id resolves id=<alias> or the node's default.
func (s *Script) id(node int, args map[string]string, def engine.ID) (engine.ID, error) {
	a, ok := args["id"]
	if !ok {
		if def == 0 {
			return 0, fmt.Errorf("no id= and no default ID on node %d", node+1)
		}
		return def, nil
	}
	for v, al := range s.aliases {
		if al == a {
			return engine.ID(v), nil
		}
	}
	return 0, fmt.Errorf("unknown ID alias %q", a)
}

func parseECE(v string) (ece.ECE, error) {
	a, b, _ := strings.Cut(v, "/")
	x, err := strconv.ParseUint(a, 0, 32)
	if err != nil {
		return ece.ECE{}, err
	}
	y, err := strconv.ParseUint(b, 0, 32)
	return ece.ECE{VendorID: uint32(x), Options: uint32(y)}, err
}

func num(args map[string]string, k string, def uint64) (uint64, error) {
	v, ok := args[k]
	if !ok {
		return def, nil
	}
	return strconv.ParseUint(v, 0, 64)
}

func portSpace(v string) (rdma.PortSpace, error) {
	switch v {
	case "", "tcp":
		return rdma.PortSpaceTCP, nil
	case "udp":
		return rdma.PortSpaceUDP, nil
	case "ib":
		return rdma.PortSpaceIB, nil
	}
	return 0, fmt.Errorf("port space %q", v)
}

var attrNames = map[string]mad.AttributeID{"REQ": mad.AttrREQ, "MRA": mad.AttrMRA, "REJ": mad.AttrREJ,
	"REP": mad.AttrREP, "RTU": mad.AttrRTU, "DREQ": mad.AttrDREQ, "DREP": mad.AttrDREP,
	"SIDR_REQ": mad.AttrSIDRREQ, "SIDR_REP": mad.AttrSIDRREP, "LAP": mad.AttrLAP, "APR": mad.AttrAPR}

func attrSet(v string) (map[mad.AttributeID]bool, error) {
	m := map[mad.AttributeID]bool{}
	if v == "" {
		return m, nil
	}
	for _, n := range strings.Split(v, ",") {
		a, ok := attrNames[n]
		if !ok {
			return nil, fmt.Errorf("unknown message %q", n)
		}
		m[a] = true
	}
	return m, nil
}

func (s *Script) onEvent(n *Node, ev *engine.Event) {
	s.last[n.Index] = ev.ID
	if ev.Type == engine.EventConnectRequest || ev.Type == engine.EventSIDRRequest {
		s.lastReq[n.Index] = ev.ID
	}
}

// scriptCommand runs one command; cmd is its name, for the commands that
// share a handler.
type scriptCommand func(s *Script, cmd string, pos []string, args map[string]string) error

// commands maps each script command to its handler.
var commands = map[string]scriptCommand{
	"nodes":      (*Script).cmdNodes,
	"policy":     (*Script).cmdPolicy,
	"listen":     (*Script).cmdListen,
	"connect":    (*Script).cmdConnect,
	"sidr":       (*Script).cmdConnect,
	"accept":     idCommand((*Script).opAccept),
	"reject":     idCommand((*Script).opReject),
	"establish":  idCommand((*Script).opEstablish),
	"mra":        idCommand((*Script).opMRA),
	"disconnect": idCommand((*Script).opDisconnect),
	"destroy":    idCommand((*Script).opDestroy),
	"notify":     idCommand((*Script).opNotify),
	"sidr-reply": idCommand((*Script).opSIDRReply),
	"deliver":    (*Script).cmdDeliver,
	"stabilize":  (*Script).cmdStabilize,
	"advance":    (*Script).cmdAdvance,
	"run":        (*Script).cmdRun,
	"replay":     (*Script).cmdReplay,
	"crash":      (*Script).cmdCrashRestart,
	"restart":    (*Script).cmdCrashRestart,
	"partition":  (*Script).cmdPartition,
	"heal":       (*Script).cmdPartition,
	"state":      (*Script).cmdState,
}

func (s *Script) exec(cmd string, pos []string, args map[string]string) error {
	h, ok := commands[cmd]
	if !ok {
		return fmt.Errorf("unknown command %q", cmd)
	}
	return h(s, cmd, pos, args)
}

func (s *Script) now() time.Time { return s.F.Now }

// nodes <n> [seed=<s>] [ib=true]
func (s *Script) cmdNodes(_ string, pos []string, args map[string]string) error {
	if len(pos) != 1 {
		return fmt.Errorf("nodes <n>")
	}
	n, err := strconv.Atoi(pos[0])
	if err != nil || n < 1 || n > 250 {
		return fmt.Errorf("nodes %q", pos[0])
	}
	seed, err := num(args, "seed", 1)
	if err != nil {
		return err
	}
	if args["ib"] == "true" {
		s.F = NewInfiniBand(n, seed, nil)
	} else {
		s.F = New(n, seed)
	}
	s.F.Trace = s.trace
	s.F.NameID = func(node int, id engine.ID) { s.alias(node, id) }
	for _, nd := range s.F.Nodes {
		s.F.boot(nd) // again, now recording state changes
		nd.OnEvent = s.onEvent
	}
	s.aliases, s.owner = map[uint32]string{}, map[string]int{}
	s.count, s.last, s.lastReq = make([]int, n), make([]engine.ID, n), make([]engine.ID, n)
	s.lastMAD = map[mad.AttributeID]packet{}
	return nil
}

// policy <node> flags...
func (s *Script) cmdPolicy(_ string, pos []string, _ map[string]string) error {
	if len(pos) < 1 {
		return fmt.Errorf("usage: policy <node> flags")
	}
	i, err := s.node(pos[0])
	if err != nil {
		return err
	}
	var p Policy
	for _, fl := range pos[1:] {
		switch fl {
		case "auto-accept":
			p.AutoAccept = true
		case "auto-establish":
			p.AutoEstablish = true
		case "auto-drep":
			p.AutoDisconnect = true
		case "auto-destroy":
			p.AutoDestroy = true
		case "manage-qp":
			p.ManageQP = true
		case "none":
		default:
			return fmt.Errorf("unknown policy %q", fl)
		}
	}
	s.F.Nodes[i].Policy = p
	return nil
}

// listen <node> [ps=] [port=] [backlog=] [qp=ud] [addr=]
func (s *Script) cmdListen(_ string, pos []string, args map[string]string) error {
	if len(pos) < 1 {
		return fmt.Errorf("listen <node> [port=<p>] [ps=...]")
	}
	i, err := s.node(pos[0])
	if err != nil {
		return err
	}
	ps, err := portSpace(args["ps"])
	if err != nil {
		return err
	}
	port, err := num(args, "port", 0)
	if err != nil {
		return err
	}
	backlog, err := num(args, "backlog", 0)
	if err != nil {
		return err
	}
	p := engine.ListenParams{PortSpace: ps, Port: uint16(port), Backlog: int(backlog)}
	if args["qp"] == "ud" {
		p.QPType = qp.UD
	}
	if a, ok := args["addr"]; ok {
		p.Addr, err = netip.ParseAddr(a)
		if err != nil {
			return err
		}
	}
	id, err := s.F.Nodes[i].Engine.Listen(s.now(), p)
	return s.report(i, id, err)
}

// connect|sidr i->j port=<p> [manage-qp=true] [ece=] [pd=] [ps=]
func (s *Script) cmdConnect(cmd string, pos []string, args map[string]string) error {
	if len(pos) != 1 {
		return fmt.Errorf("%s i->j port=<p>", cmd)
	}
	i, j, err := s.pair(pos[0])
	if err != nil {
		return err
	}
	port, err := num(args, "port", 0)
	if err != nil {
		return err
	}
	n := s.F.Nodes[i]
	p := n.ConnectParams(s.F.Nodes[j], uint16(port))
	if args["manage-qp"] == "true" {
		p.ManageQP = true
	}
	if v, ok := args["ece"]; ok {
		if p.ECE, err = parseECE(v); err != nil {
			return err
		}
	}
	p.PrivateData = []byte(args["pd"])
	var id engine.ID
	if cmd == "sidr" {
		id, err = n.Engine.ResolveSIDR(s.now(), engine.SIDRParams{PortSpace: rdma.PortSpaceUDP,
			Src: p.Src, Dst: p.Dst, Path: p.Path, PrivateData: p.PrivateData})
	} else {
		if p.PortSpace, err = portSpace(args["ps"]); err != nil {
			return err
		}
		id, err = n.Engine.Connect(s.now(), p)
	}
	return s.report(i, id, err)
}

// idOp is one engine call on an ID. It returns an error only for a bad
// argument; the engine's own error is traced with traceErr.
type idOp func(s *Script, node int, id engine.ID, args map[string]string) error

// idCommand wraps op as "<cmd> <node> [id=<alias>]": the ID defaults to
// the last one an event named on the node (the last request, for accept
// and sidr-reply), and the fabric is flushed after the call.
func idCommand(op idOp) scriptCommand {
	return func(s *Script, cmd string, pos []string, args map[string]string) error {
		if len(pos) != 1 {
			return fmt.Errorf("%s <node> [id=...]", cmd)
		}
		i, err := s.node(pos[0])
		if err != nil {
			return err
		}
		def := s.last[i]
		if cmd == "accept" || cmd == "sidr-reply" {
			def = s.lastReq[i]
		}
		id, err := s.id(i, args, def)
		if err != nil {
			return err
		}
		if err := op(s, i, id, args); err != nil {
			return err
		}
		s.F.Flush()
		return nil
	}
}

// traceErr records an engine call's error in the output.
func (s *Script) traceErr(err error) {
	if err != nil {
		s.trace("error: " + err.Error())
	}
}

func (s *Script) opAccept(i int, id engine.ID, args map[string]string) error {
	p := s.F.Nodes[i].AcceptParams(1, 1)
	p.PrivateData, p.ManageQP = []byte(args["pd"]), args["manage-qp"] == "true"
	if v, ok := args["ece"]; ok {
		var err error
		if p.ECE, err = parseECE(v); err != nil {
			return err
		}
	}
	s.traceErr(s.F.Nodes[i].Engine.Accept(s.now(), id, p))
	return nil
}

func (s *Script) opReject(i int, id engine.ID, args map[string]string) error {
	r, err := num(args, "reason", 28)
	if err != nil {
		return err
	}
	s.traceErr(s.F.Nodes[i].Engine.Reject(s.now(), id, mad.RejectReason(r), nil, []byte(args["pd"])))
	return nil
}

func (s *Script) opEstablish(i int, id engine.ID, args map[string]string) error {
	s.traceErr(s.F.Nodes[i].Engine.Establish(s.now(), id, []byte(args["pd"])))
	return nil
}

func (s *Script) opMRA(i int, id engine.ID, args map[string]string) error {
	t, err := num(args, "timeout", 24)
	if err != nil {
		return err
	}
	s.traceErr(s.F.Nodes[i].Engine.MRA(s.now(), id, uint8(t), []byte(args["pd"])))
	return nil
}

func (s *Script) opDisconnect(i int, id engine.ID, args map[string]string) error {
	s.traceErr(s.F.Nodes[i].Engine.Disconnect(s.now(), id, []byte(args["pd"])))
	return nil
}

func (s *Script) opDestroy(i int, id engine.ID, _ map[string]string) error {
	s.traceErr(s.F.Nodes[i].Engine.Destroy(s.now(), id))
	return nil
}

func (s *Script) opNotify(i int, id engine.ID, _ map[string]string) error {
	s.traceErr(s.F.Nodes[i].Engine.Notify(s.now(), id))
	return nil
}

func (s *Script) opSIDRReply(i int, id engine.ID, args map[string]string) error {
	qpn, _ := num(args, "qpn", 0x33)
	qkey, _ := num(args, "qkey", 0x01234567)
	st, _ := num(args, "status", 0)
	s.traceErr(s.F.Nodes[i].Engine.ReplySIDR(s.now(), id,
		engine.SIDRReplyParams{Status: mad.SIDRStatus(st), QPN: uint32(qpn), QKey: uint32(qkey)}))
	return nil
}

// deliver [drop=MSG,...] [dup=MSG,...]
func (s *Script) cmdDeliver(_ string, _ []string, args map[string]string) error {
	drop, err := attrSet(args["drop"])
	if err != nil {
		return err
	}
	dup, err := attrSet(args["dup"])
	if err != nil {
		return err
	}
	s.deliverOnce(drop, dup)
	return nil
}

// stabilize
func (s *Script) cmdStabilize(string, []string, map[string]string) error {
	s.withRecord(s.F.Stabilize)
	return nil
}

// advance <duration>
func (s *Script) cmdAdvance(_ string, pos []string, _ map[string]string) error {
	if len(pos) != 1 {
		return fmt.Errorf("advance <duration>")
	}
	d, err := time.ParseDuration(pos[0])
	if err != nil {
		return err
	}
	s.timed = true
	s.withRecord(func() { s.F.Advance(d) })
	return nil
}

// run
func (s *Script) cmdRun(string, []string, map[string]string) error {
	s.timed = true
	s.withRecord(func() {
		if !s.F.Run(100000) {
			s.trace("still busy after 100000 steps")
		}
	})
	return nil
}

// replay <MSG>
func (s *Script) cmdReplay(_ string, pos []string, _ map[string]string) error {
	if len(pos) != 1 {
		return fmt.Errorf("replay <MSG>")
	}
	a, ok := attrNames[pos[0]]
	p, seen := s.lastMAD[a]
	if !ok || !seen {
		return fmt.Errorf("no %s delivered yet", pos[0])
	}
	s.F.fifo = append(s.F.fifo, p)
	s.withRecord(s.F.Stabilize)
	return nil
}

// crash <node> | restart <node> [same-ids]
func (s *Script) cmdCrashRestart(cmd string, pos []string, _ map[string]string) error {
	if len(pos) < 1 {
		return fmt.Errorf("%s <node>", cmd)
	}
	i, err := s.node(pos[0])
	if err != nil {
		return err
	}
	switch {
	case cmd == "crash":
		s.F.Crash(i)
	case len(pos) > 1 && pos[1] == "same-ids":
		s.F.RestartSameIDs(i)
		s.F.Nodes[i].OnEvent = s.onEvent
	default:
		s.F.Restart(i)
		s.F.Nodes[i].OnEvent = s.onEvent
	}
	return nil
}

// partition|heal <i> <j>
func (s *Script) cmdPartition(cmd string, pos []string, _ map[string]string) error {
	if len(pos) != 2 {
		return fmt.Errorf("%s <i> <j>", cmd)
	}
	i, err := s.node(pos[0])
	if err != nil {
		return err
	}
	j, err := s.node(pos[1])
	if err != nil {
		return err
	}
	if cmd == "partition" {
		s.F.Partition(i, j)
	} else {
		s.F.Heal(i, j)
	}
	return nil
}

// state: every live ID's state, in alias order, then each node's counts.
func (s *Script) cmdState(string, []string, map[string]string) error {
	var names []string
	for a := range s.owner {
		names = append(names, a)
	}
	slices.SortFunc(names, func(x, y string) int {
		xn, xi, _ := strings.Cut(x, ":")
		yn, yi, _ := strings.Cut(y, ":")
		a, _ := strconv.Atoi(xn + fmt.Sprintf("%06s", xi))
		b, _ := strconv.Atoi(yn + fmt.Sprintf("%06s", yi))
		return a - b
	})
	for _, a := range names {
		n := s.F.Nodes[s.owner[a]]
		if n.Crashed {
			continue
		}
		id, _ := s.id(0, map[string]string{"id": a}, 0)
		if st, ok := n.Engine.State(id); ok {
			s.trace(fmt.Sprintf("%s %v", a, st))
		}
	}
	for _, n := range s.F.Nodes {
		if !n.Crashed {
			s.trace(fmt.Sprintf("node %s: %d IDs, %d timers", n.Name, n.Engine.Len(), n.Engine.Timers()))
		}
	}
	return nil
}

func (s *Script) report(node int, id engine.ID, err error) error {
	if err != nil {
		s.trace("error: " + err.Error())
		return nil
	}
	a := s.alias(node, id)
	s.last[node] = id
	s.trace(fmt.Sprintf("-> %s", a))
	s.F.Flush()
	return nil
}

// withRecord runs fn remembering the last MAD of each type delivered.
func (s *Script) withRecord(fn func()) {
	prev := s.F.Filter
	s.F.Filter = func(from, to *Node, m []byte) Action {
		var p packet
		p.from, p.to = from.Index, to.Index
		copy(p.mad[:], m)
		s.lastMAD[attrOf(m)] = p
		if prev != nil {
			return prev(from, to, m)
		}
		return Deliver
	}
	fn()
	s.F.Filter = prev
}

// deliverOnce delivers the MADs queued now, dropping or duplicating the
// named messages; MADs they cause stay queued.
func (s *Script) deliverOnce(drop, dup map[mad.AttributeID]bool) {
	f := s.F
	queued := append([]packet(nil), f.fifo[f.fifoAt:]...)
	f.fifo, f.fifoAt = f.fifo[:0], 0
	s.withRecord(func() {
		prev := f.Filter
		f.Filter = func(from, to *Node, m []byte) Action {
			prev(from, to, m)
			a := attrOf(m)
			switch {
			case drop[a]:
				return Drop
			case dup[a]:
				return Duplicate
			}
			return Deliver
		}
		for i := range queued {
			f.deliver(&queued[i])
			f.Flush()
		}
		f.Filter = prev
	})
}
