package uverbs

import (
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/qp"
)

// BenchmarkGuestModifyQPRaw splits a MODIFY_QP's time in the guest into
// the kernel's and ours: per
// round 50 RC QPs go to INIT and then to ERR, every other one through
// QP.Modify and the rest as the same command bytes built beforehand and
// only issued in the timed part (kcall.IoctlCall.Do), alternating.
// The difference is Modify's own code (qp.Check, the command's build, the
// scratch page).
func BenchmarkGuestModifyQPRaw(b *testing.B) {
	x, pd, cq := rxeBenchQPs(b)
	var err error
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	var initModify, initRaw, errModify, errRaw []float64
	modify := func(q *QP, a *qp.Attr, m qp.Mask) float64 {
		start := time.Now()
		if err := q.Modify(a, m); err != nil {
			b.Fatal(err)
		}
		return us(time.Since(start))
	}
	raw := func(q *QP, a *qp.Attr, m qp.Mask) float64 {
		body := modifyCmd(q, a, m)
		call := kcall.NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodInvokeWrite, x.driverID)
		call.Const(abi.UverbsAttrWriteCmd, uint64(abi.UverbsCmdModifyQP))
		call.In(abi.UverbsAttrCoreIn, abi.Bytes(&body))
		start := time.Now()
		if err := call.Do(x.fd); err != nil {
			b.Fatal(err)
		}
		d := us(time.Since(start))
		q.mu.Lock()
		q.state = a.State
		if m&qp.MaskPort != 0 {
			q.port = a.Port
		}
		q.mu.Unlock()
		return d
	}
	const perRound = 50
	initMask := qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort | qp.MaskAccessFlags
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		qps := make([]*QP, perRound)
		for j := range qps {
			if qps[j], err = pd.CreateQP(QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq, Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
				b.Fatal(err)
			}
			a := &qp.Attr{State: qp.Init, Port: 1}
			if (i+j)%2 == 0 {
				initModify = append(initModify, modify(qps[j], a, initMask))
			} else {
				initRaw = append(initRaw, raw(qps[j], a, initMask))
			}
		}
		for j, q := range qps {
			a := &qp.Attr{State: qp.Err}
			if (i+j)%2 == 0 {
				errModify = append(errModify, modify(q, a, qp.MaskState))
			} else {
				errRaw = append(errRaw, raw(q, a, qp.MaskState))
			}
			if err := q.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(medianOf(initModify), "init-Modify-µs")
	b.ReportMetric(medianOf(initRaw), "init-raw-µs")
	b.ReportMetric(medianOf(errModify), "err-Modify-µs")
	b.ReportMetric(medianOf(errRaw), "err-raw-µs")
}
