package scenario

import (
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
	"golang.org/x/sys/unix"
)

// The registration verbs beyond a plain "mr" (README section 4):
//
//	mr NAME LEN [iova=X] [access=A]   ibv_reg_mr_iova2 when iova= is given
//	dmabuf_mr NAME LEN [offset=O] [iova=X] [access=A]
//	rereg NAME flags=F [len=N] [pd=PD] [access=A]
//
// access defaults to local write, remote write and remote read (0x7).
// dmabuf_mr registers a memfd named DmabufName (created, registered,
// closed) as ibv_reg_dmabuf_mr; its SGEs address iova+off, and it has no
// memory to dump. rereg is ibv_rereg_mr: with the translation flag (1) it
// maps LEN bytes at the next MR slot, as "mr" does, and moves the MR
// there; otherwise (or without len=) it passes no address and length 0. pd= names the PD
// for the PD flag (2); access is passed as given (0 when absent).

// DmabufName is the memfd that stands for a dma-buf in both interpreters.
const DmabufName = "mlx5sim-dmabuf"

const defaultAccess = qp.AccessLocalWrite | qp.AccessRemoteWrite | qp.AccessRemoteRead

// regMR registers buf as the "mr" line l asks.
func (r *Runner) regMR(l Line, buf *uverbs.Buffer) (*uverbs.MR, error) {
	access, err1 := l.u64("access", uint64(defaultAccess))
	iova, err2 := l.u64("iova", 0)
	if err := errors.Join(err1, err2); err != nil {
		return nil, bad("%v", err)
	}
	if _, ok := l.KV["iova"]; ok {
		return r.pd.RegMRIOVA(buf, 0, buf.Len(), iova, qp.Access(access))
	}
	return r.pd.RegMR(buf, qp.Access(access))
}

func (r *Runner) dmabufMR(l Line) error {
	name, err1 := l.arg(0)
	s, err2 := l.arg(1)
	access, err3 := l.u64("access", uint64(defaultAccess))
	offset, err4 := l.u64("offset", 0)
	iova, err5 := l.u64("iova", 0)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return bad("%v", err)
	}
	n, err := num(s)
	if err != nil || n == 0 {
		return bad("line %d: dmabuf_mr length %q", l.Num, s)
	}
	if r.pd == nil {
		return bad("line %d: dmabuf_mr before pd", l.Num)
	}
	fd, err := unix.MemfdCreate(DmabufName, unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(offset+n)); err != nil {
		return fmt.Errorf("memfd: %w", err)
	}
	m, err := r.pd.RegDmabufMR(fd, offset, n, iova, qp.Access(access))
	if err != nil {
		return err
	}
	r.mrs[name] = &mr{mr: m}
	return nil
}

func (r *Runner) rereg(l Line) error {
	name, err1 := l.arg(0)
	flags, err2 := l.u64("flags", 0)
	access, err3 := l.u64("access", 0)
	n, err4 := l.u64("len", 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return bad("%v", err)
	}
	m := r.mrs[name]
	if m == nil {
		return bad("line %d: no MR %q", l.Num, name)
	}
	var pd *uverbs.PD
	if p, ok := l.KV["pd"]; ok {
		if pd = r.pds[p]; pd == nil {
			return bad("line %d: no PD %q", l.Num, p)
		}
	}
	var buf *uverbs.Buffer
	if uverbs.ReregFlags(flags)&uverbs.ReregTranslation != 0 && n != 0 { // n 0: no memory
		if n > MRStride {
			return bad("line %d: rereg len %d", l.Num, n)
		}
		var err error
		buf, err = uverbs.AllocBufferAt(MRBase+uint64(r.nmr)*MRStride, int(n))
		r.nmr++
		if err != nil {
			return err
		}
		b := buf.Bytes()
		for i := range b {
			b[i] = byte(i*5 + 1)
		}
	}
	err := m.mr.Rereg(uverbs.ReregFlags(flags), pd, buf, 0, int(n), qp.Access(access))
	if err != nil {
		if buf != nil {
			buf.Close()
		}
		return err
	}
	if buf != nil {
		m.buf.Close()
		m.buf = buf
	}
	return nil
}
