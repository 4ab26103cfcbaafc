package scenario

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
	"golang.org/x/sys/unix"
)

// Device is what the runner needs of the simulated device: snapshots
// after each verb, CQE injection, and record lines in its trace.
type Device interface {
	Snapshot(label string)
	Exec(line string) error
	Record(line string)
}

// MRBase is where the k-th MR buffer is mapped (MRBase + k*MRStride) in
// both interpreters, so that WQE addresses compare byte for byte.
const (
	MRBase   = 0x600000000000
	MRStride = 0x1000000
)

// Runner runs scenario lines through uverbs.
type Runner struct {
	Dev       Device
	Discovery uverbs.Discovery
	Options   *uverbs.Options

	ctx      *uverbs.Context
	pd       *uverbs.PD
	pds      map[string]*uverbs.PD
	mrs      map[string]*mr
	nmr      int
	channels map[string]*uverbs.CompChannel
	cqs      map[string]*uverbs.CQ
	qps      map[string]*uverbs.QP
	ahs      map[string]*uverbs.AH
	srqs     map[string]*uverbs.SRQ
	wc       []uverbs.WC
}

type mr struct {
	buf *uverbs.Buffer
	mr  *uverbs.MR
}

// Run runs every line. A verb that fails is recorded as
// "err L<n>: errno=<errno>" and the run goes on, as in scenario.c; a
// malformed line or a failed open ends it.
func (r *Runner) Run(lines []Line) error {
	r.pds = map[string]*uverbs.PD{}
	r.mrs = map[string]*mr{}
	r.channels = map[string]*uverbs.CompChannel{}
	r.cqs = map[string]*uverbs.CQ{}
	r.qps = map[string]*uverbs.QP{}
	r.ahs = map[string]*uverbs.AH{}
	r.srqs = map[string]*uverbs.SRQ{}
	defer r.cleanup()
	for _, l := range lines {
		switch l.Verb {
		case "profile":
			continue
		case "cqe", "notify":
			if err := r.Dev.Exec(l.Text); err != nil {
				return fmt.Errorf("line %d: device refused %q: %w", l.Num, l.Text, err)
			}
			continue
		}
		err := r.step(l)
		var bad *lineError
		if errors.As(err, &bad) {
			return err
		}
		if err != nil {
			if l.Verb == "open" {
				return fmt.Errorf("line %d: open: %w", l.Num, err)
			}
			r.Dev.Record(fmt.Sprintf("err L%d: errno=%d", l.Num, errnoOf(err)))
		}
		r.Dev.Snapshot(l.Label())
	}
	return nil
}

// lineError is a malformed scenario line (not a verb failure).
type lineError struct{ err error }

func (e *lineError) Error() string { return e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

func bad(format string, a ...any) error { return &lineError{fmt.Errorf(format, a...)} }

// errnoOf finds the errno in err, as libibverbs' verbs return it; a
// failure this package finds before any syscall maps as libmlx5's
// equivalent check would (EINVAL, ENOMEM for a full queue).
func errnoOf(err error) int {
	var e unix.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	switch {
	case errors.Is(err, uverbs.ErrQueueFull):
		return int(unix.ENOMEM)
	case errors.Is(err, uverbs.ErrNotSupported):
		return int(unix.EOPNOTSUPP)
	}
	return int(unix.EINVAL)
}

func (r *Runner) cleanup() {
	for _, q := range r.qps {
		q.Close()
	}
	for _, s := range r.srqs {
		s.Close()
	}
	for _, a := range r.ahs {
		a.Close()
	}
	for _, c := range r.cqs {
		c.Close()
	}
	for _, c := range r.channels {
		c.Close()
	}
	for _, m := range r.mrs {
		m.mr.Close()
		if m.buf != nil {
			m.buf.Close()
		}
	}
	for _, p := range r.pds {
		p.Close()
	}
	if r.ctx != nil {
		r.ctx.Close()
	}
}

func (r *Runner) step(l Line) error {
	if l.Verb != "open" && r.ctx == nil {
		return bad("line %d: %q before open", l.Num, l.Verb)
	}
	switch l.Verb {
	case "open":
		dev, err := r.Discovery.Device("mlx5_0")
		if err != nil {
			return err
		}
		r.ctx, err = uverbs.OpenDevice(dev, r.Options)
		return err
	case "pd":
		name, err := l.arg(0)
		if err != nil {
			return bad("%v", err)
		}
		pd, err := r.ctx.AllocPD()
		if err != nil {
			return err
		}
		r.pds[name], r.pd = pd, pd
		return nil
	case "mr":
		return r.mr(l)
	case "dmabuf_mr":
		return r.dmabufMR(l)
	case "rereg":
		return r.rereg(l)
	case "channel":
		name, err := l.arg(0)
		if err != nil {
			return bad("%v", err)
		}
		ch, err := r.ctx.CreateCompChannel()
		if err != nil {
			return err
		}
		r.channels[name] = ch
		return nil
	case "cq":
		return r.cq(l)
	case "qp":
		return r.qp(l)
	case "modify":
		return r.modify(l)
	case "state":
		return r.state(l)
	case "ah":
		return r.ah(l)
	case "send":
		return r.send(l)
	case "recv":
		return r.recv(l)
	case "poll":
		return r.poll(l)
	case "arm":
		cq, err := r.cqArg(l, 0)
		if err != nil {
			return err
		}
		return cq.RequestNotify(l.Flag["solicited"])
	case "query_ece":
		q, err := r.qpArg(l, 0)
		if err != nil {
			return err
		}
		e, err := q.QueryECE()
		if err != nil {
			return err
		}
		r.Dev.Record(fmt.Sprintf("ece vendor=0x%x options=0x%x comp_mask=0x%x", e.VendorID, e.Options, e.CompMask))
		return nil
	case "set_ece":
		q, err := r.qpArg(l, 0)
		if err != nil {
			return err
		}
		opts, err1 := l.u64("options", 0)
		vendor, err2 := l.u64("vendor", 0x15b3)
		if err := errors.Join(err1, err2); err != nil {
			return bad("%v", err)
		}
		return q.SetECE(ece.ECE{VendorID: uint32(vendor), Options: uint32(opts)})
	case "srq", "srq_recv", "arm_srq", "query_srq":
		return r.srqStep(l)
	case "setenv", "unsetenv", "get_event", "reset":
		return r.cqStep(l)
	case "dump":
		return r.dump(l)
	case "destroy":
		return r.destroy(l)
	case "close":
		err := r.ctx.Close()
		r.ctx = nil
		return err
	}
	return bad("line %d: unknown verb %q", l.Num, l.Verb)
}

func (r *Runner) mr(l Line) error {
	name, err := l.arg(0)
	if err != nil {
		return bad("%v", err)
	}
	s, err := l.arg(1)
	if err != nil {
		return bad("%v", err)
	}
	n, err := num(s)
	if err != nil || n == 0 || n > MRStride {
		return bad("line %d: mr length %q", l.Num, s)
	}
	if r.pd == nil {
		return bad("line %d: mr before pd", l.Num)
	}
	buf, err := uverbs.AllocBufferAt(MRBase+uint64(r.nmr)*MRStride, int(n))
	r.nmr++
	if err != nil {
		return err
	}
	b := buf.Bytes()
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	m, err := r.regMR(l, buf)
	if err != nil {
		buf.Close()
		return err
	}
	r.mrs[name] = &mr{buf: buf, mr: m}
	return nil
}

func (r *Runner) cq(l Line) error {
	name, err := l.arg(0)
	if err != nil {
		return bad("%v", err)
	}
	s, err := l.arg(1)
	if err != nil {
		return bad("%v", err)
	}
	n, err := num(s)
	if err != nil {
		return bad("line %d: cqe %q", l.Num, s)
	}
	var ch *uverbs.CompChannel
	if c, ok := l.KV["channel"]; ok {
		if ch = r.channels[c]; ch == nil {
			return bad("line %d: no channel %q", l.Num, c)
		}
	}
	cq, err := r.ctx.CreateCQ(int(n), ch, 0)
	if err != nil {
		return err
	}
	r.cqs[name] = cq
	return nil
}

func (r *Runner) cqArg(l Line, i int) (*uverbs.CQ, error) {
	name, err := l.arg(i)
	if err != nil {
		return nil, bad("%v", err)
	}
	cq := r.cqs[name]
	if cq == nil {
		return nil, bad("line %d: no CQ %q", l.Num, name)
	}
	return cq, nil
}

func (r *Runner) qpArg(l Line, i int) (*uverbs.QP, error) {
	name, err := l.arg(i)
	if err != nil {
		return nil, bad("%v", err)
	}
	q := r.qps[name]
	if q == nil {
		return nil, bad("line %d: no QP %q", l.Num, name)
	}
	return q, nil
}

var qpTypes = map[string]qp.QPType{"rc": qp.RC, "uc": qp.UC, "ud": qp.UD}

func (r *Runner) qp(l Line) error {
	name, err := l.arg(0)
	if err != nil {
		return bad("%v", err)
	}
	ts, err := l.arg(1)
	if err != nil {
		return bad("%v", err)
	}
	typ, ok := qpTypes[ts]
	if !ok {
		return bad("line %d: QP type %q", l.Num, ts)
	}
	scq, err := r.cqArg(l, 2)
	if err != nil {
		return err
	}
	rcq, err := r.cqArg(l, 3)
	if err != nil {
		return err
	}
	var c [5]uint64
	var errs []error
	for i, k := range []string{"sq", "rq", "ssge", "rsge", "inline"} {
		var e error
		c[i], e = l.u64(k, 0)
		errs = append(errs, e)
	}
	sigall, e := l.u64("sigall", 0)
	if err := errors.Join(append(errs, e)...); err != nil {
		return bad("%v", err)
	}
	if r.pd == nil {
		return bad("line %d: qp before pd", l.Num)
	}
	srq, err := r.srqOpt(l)
	if err != nil {
		return err
	}
	q, err := r.pd.CreateQP(uverbs.QPInit{
		Type: typ, SendCQ: scq, RecvCQ: rcq, SignalAll: sigall != 0, SRQ: srq,
		Cap: qp.Cap{MaxSendWR: uint32(c[0]), MaxRecvWR: uint32(c[1]), MaxSendSGE: uint32(c[2]), MaxRecvSGE: uint32(c[3]), MaxInlineData: uint32(c[4])},
	})
	if err != nil {
		return err
	}
	r.qps[name] = q
	return nil
}

// peerAH is the fixed address vector of the README: port 1, GRH to
// ::ffff:192.0.2.2, SGID index 0, hop limit 64.
func peerAH() qp.AH {
	return qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{
		DGID: netip.AddrFrom4([4]byte{192, 0, 2, 2}).As16(), SGIDIndex: 0, HopLimit: 64,
	}}
}

func (r *Runner) modify(l Line) error {
	q, err := r.qpArg(l, 0)
	if err != nil {
		return err
	}
	to, err := l.arg(1)
	if err != nil {
		return bad("%v", err)
	}
	typ := q.Type()
	var a qp.Attr
	var m qp.Mask
	switch to {
	case "init":
		a = qp.Attr{State: qp.Init, PKeyIndex: 0, Port: 1}
		m = qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort
		switch typ {
		case qp.UD:
			a.QKey, m = 0x11111111, m|qp.MaskQKey
		case qp.RC:
			a.AccessFlags, m = qp.AccessRemoteWrite|qp.AccessRemoteRead, m|qp.MaskAccessFlags
		default:
			a.AccessFlags, m = qp.AccessRemoteWrite, m|qp.MaskAccessFlags
		}
		if v, ok := l.KV["access"]; ok && typ != qp.UD {
			acc, err := num(v)
			if err != nil {
				return bad("line %d: access=%q", l.Num, v)
			}
			a.AccessFlags = qp.Access(acc)
		}
	case "rtr":
		a = qp.Attr{State: qp.RTR}
		m = qp.MaskState
		if typ != qp.UD {
			a.AH, a.PathMTU, a.DestQPN, a.RQPSN = peerAH(), rdma.MTU1024, 0x123, 0
			m |= qp.MaskAV | qp.MaskPathMTU | qp.MaskDestQPN | qp.MaskRQPSN
		}
		if typ == qp.RC {
			a.MaxDestRdAtomic, a.MinRNRTimer = 1, 12
			m |= qp.MaskMaxDestRdAtomic | qp.MaskMinRNRTimer
		}
	case "rts":
		a = qp.Attr{State: qp.RTS, SQPSN: 0}
		m = qp.MaskState | qp.MaskSQPSN
		if typ == qp.RC {
			a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRdAtomic = 14, 7, 7, 1
			m |= qp.MaskTimeout | qp.MaskRetryCnt | qp.MaskRNRRetry | qp.MaskMaxQPRdAtomic
		}
	default:
		return bad("line %d: modify to %q", l.Num, to)
	}
	return q.Modify(&a, m)
}

func (r *Runner) ah(l Line) error {
	name, err := l.arg(0)
	if err != nil {
		return bad("%v", err)
	}
	if r.pd == nil {
		return bad("line %d: ah before pd", l.Num)
	}
	a, err := ahAttr(l)
	if err != nil {
		return err
	}
	ah, err := r.pd.CreateAH(a)
	if err != nil {
		return err
	}
	r.ahs[name] = ah
	return nil
}

func (r *Runner) sges(l Line) ([]uverbs.SGE, error) {
	specs, err := l.SGEs()
	if err != nil {
		return nil, bad("%v", err)
	}
	out := make([]uverbs.SGE, 0, len(specs))
	for _, s := range specs {
		m := r.mrs[s.MR]
		if m == nil {
			return nil, bad("line %d: no MR %q", l.Num, s.MR)
		}
		out = append(out, uverbs.SGE{Addr: m.mr.Addr + s.Off, Length: uint32(s.Len), LKey: m.mr.LKey})
	}
	return out, nil
}

var sendOps = map[string]uverbs.Opcode{
	"send": uverbs.OpSend, "send_imm": uverbs.OpSendWithImm, "write": uverbs.OpRDMAWrite,
	"write_imm": uverbs.OpRDMAWriteWithImm, "read": uverbs.OpRDMARead,
	"cmp_swap": uverbs.OpAtomicCompareSwap, "fetch_add": uverbs.OpAtomicFetchAdd,
}

func (r *Runner) send(l Line) error {
	q, err := r.qpArg(l, 0)
	if err != nil {
		return err
	}
	op, ok := sendOps[l.KV["op"]]
	if !ok {
		return bad("line %d: op=%q", l.Num, l.KV["op"])
	}
	sges, err := r.sges(l)
	if err != nil {
		return err
	}
	var v [8]uint64
	var errs []error
	for i, k := range []string{"id", "imm", "raddr", "rkey", "rqpn", "qkey", "compare_add", "swap"} {
		var e error
		v[i], e = l.u64(k, 0)
		errs = append(errs, e)
	}
	count, e := l.u64("count", 1)
	if err := errors.Join(append(errs, e)...); err != nil {
		return bad("%v", err)
	}
	var flags uverbs.SendFlags
	for w, f := range map[string]uverbs.SendFlags{"inline": uverbs.SendInline, "signaled": uverbs.SendSignaled, "solicited": uverbs.SendSolicited, "fence": uverbs.SendFence} {
		if l.Flag[w] {
			flags |= f
		}
	}
	var ah *uverbs.AH
	if n, ok := l.KV["ah"]; ok {
		if ah = r.ahs[n]; ah == nil {
			return bad("line %d: no AH %q", l.Num, n)
		}
	}
	if count == 0 || count > 1024 {
		return bad("line %d: count=%d", l.Num, count)
	}
	wrs := make([]uverbs.SendWR, count)
	for i := range wrs {
		wrs[i] = uverbs.SendWR{
			ID: v[0] + uint64(i), Opcode: op, Flags: flags, SGEs: sges, Imm: uint32(v[1]),
			RemoteAddr: v[2], RKey: uint32(v[3]), AH: ah, RemoteQPN: uint32(v[4]), RemoteQKey: uint32(v[5]),
			CompareAdd: v[6], Swap: v[7],
		}
	}
	if err := r.inlineData(l, wrs); err != nil {
		return err
	}
	return q.PostSend(wrs)
}

func (r *Runner) recv(l Line) error {
	q, err := r.qpArg(l, 0)
	if err != nil {
		return err
	}
	wrs, err := r.recvWRs(l)
	if err != nil {
		return err
	}
	return q.PostRecv(wrs)
}

// recvWRs is recv's and srq_recv's work requests: count receives of
// the line's SGEs with consecutive ids.
func (r *Runner) recvWRs(l Line) ([]uverbs.RecvWR, error) {
	sges, err := r.sges(l)
	if err != nil {
		return nil, err
	}
	id, err1 := l.u64("id", 0)
	count, err2 := l.u64("count", 1)
	if err := errors.Join(err1, err2); err != nil || count == 0 || count > 1024 {
		return nil, bad("line %d: id/count: %v", l.Num, err)
	}
	wrs := make([]uverbs.RecvWR, count)
	for i := range wrs {
		wrs[i] = uverbs.RecvWR{ID: id + uint64(i), SGEs: sges}
	}
	return wrs, nil
}

// FormatWC is the README's record line for one completion.
func FormatWC(w *uverbs.WC) string {
	return fmt.Sprintf("wc wr_id=%d status=%d opcode=%d vendor_err=0x%x byte_len=%d imm=0x%x qp_num=0x%x src_qp=0x%x wc_flags=0x%x pkey_index=%d slid=%d sl=%d dlid_path_bits=%d",
		w.ID, w.Status, w.Opcode, w.VendorErr, w.ByteLen, w.Imm, w.QPNum, w.SrcQP, w.Flags, w.PKeyIndex, w.SLID, w.SL, w.DLIDPathBits)
}

func (r *Runner) poll(l Line) error {
	cq, err := r.cqArg(l, 0)
	if err != nil {
		return err
	}
	s, err := l.arg(1)
	if err != nil {
		return bad("%v", err)
	}
	n, err := num(s)
	if err != nil || n == 0 || n > 4096 {
		return bad("line %d: poll count %q", l.Num, s)
	}
	if cap(r.wc) < int(n) {
		r.wc = make([]uverbs.WC, n)
	}
	wc := r.wc[:n]
	got, err := cq.Poll(wc)
	if err != nil {
		return err
	}
	for i := 0; i < got; i++ {
		r.Dev.Record(FormatWC(&wc[i]))
	}
	r.Dev.Record(fmt.Sprintf("poll n=%d", got))
	return nil
}

func (r *Runner) dump(l Line) error {
	name, err := l.arg(0)
	if err != nil {
		return bad("%v", err)
	}
	m := r.mrs[name]
	if m == nil || m.buf == nil {
		return bad("line %d: no MR %q with memory", l.Num, name)
	}
	so, err1 := l.arg(1)
	sn, err2 := l.arg(2)
	if err := errors.Join(err1, err2); err != nil {
		return bad("%v", err)
	}
	off, err1 := num(so)
	n, err2 := num(sn)
	if errors.Join(err1, err2) != nil || off+n > uint64(m.buf.Len()) {
		return bad("line %d: dump range %s+%s", l.Num, so, sn)
	}
	r.Dev.Record(fmt.Sprintf("mem %s %d: %x", name, off, m.buf.Bytes()[off:off+n]))
	return nil
}

func (r *Runner) destroy(l Line) error {
	name, err := l.arg(0)
	if err != nil {
		return bad("%v", err)
	}
	switch {
	case r.qps[name] != nil:
		err = r.qps[name].Close()
		delete(r.qps, name)
	case r.cqs[name] != nil:
		err = r.cqs[name].Close()
		delete(r.cqs, name)
	case r.mrs[name] != nil:
		m := r.mrs[name]
		err = m.mr.Close()
		if m.buf != nil {
			err = errors.Join(err, m.buf.Close())
		}
		delete(r.mrs, name)
	case r.ahs[name] != nil:
		err = r.ahs[name].Close()
		delete(r.ahs, name)
	case r.channels[name] != nil:
		err = r.channels[name].Close()
		delete(r.channels, name)
	case r.srqs[name] != nil:
		err = r.srqs[name].Close()
		delete(r.srqs, name)
	case r.pds[name] != nil:
		err = r.pds[name].Close()
		if r.pd == r.pds[name] {
			r.pd = nil
		}
		delete(r.pds, name)
	default:
		return bad("line %d: nothing called %q", l.Num, name)
	}
	return err
}

// Names of the objects alive, for a test's sanity checks.
func (r *Runner) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pds %d mrs %d cqs %d qps", len(r.pds), len(r.mrs), len(r.cqs), len(r.qps))
	return b.String()
}

func (l Line) u64(key string, def uint64) (uint64, error) {
	v, ok := l.KV[key]
	if !ok {
		return def, nil
	}
	n, err := num(v)
	if err != nil {
		return 0, fmt.Errorf("line %d: %s=%q: %w", l.Num, key, v, err)
	}
	return n, nil
}

func (l Line) arg(i int) (string, error) {
	if i >= len(l.Args) {
		return "", fmt.Errorf("line %d: %q needs %d positional arguments", l.Num, l.Verb, i+1)
	}
	return l.Args[i], nil
}
