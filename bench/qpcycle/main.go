// Command qpcycle is ../qpcycle-c/qpcycle.c over the library's uverbs: the
// verbs of cmtime's create qp and disconnect steps without the CM or a
// peer (docs/benchmarks.md, "Connection lifecycle"). N RC QPs on rxe0
// (caps 1/1/1/1, one CQ): create and INIT each, then ERR and close each,
// timing every call; it prints the medians in µs. QPCYCLE_CPUPROFILE=FILE
// writes a CPU profile. QPCYCLE_MARK=FILE marks the loops' edges for
// ../tbcount, as qpcycle.c does ("go start", "go create-init", "go
// err-destroy").
//
//	CGO_ENABLED=0 go build -o DIR/qpcycle-go ./qpcycle  # in bench/
//	/host/qpcycle-go [N [ROUNDS]]                       # in guest a
//	GODEBUG=disablethp=1 /host/qpcycle-go [N [ROUNDS]]  # the heap off huge pages
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/go-rdma/rdmacm/bench/internal/probe"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

func main() {
	n, rounds := 200, 1
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		rounds, _ = strconv.Atoi(os.Args[2])
	}
	if f := os.Getenv("QPCYCLE_CPUPROFILE"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "qpcycle:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(w)
		defer pprof.StopCPUProfile()
	}
	if err := run(n, rounds); err != nil {
		fmt.Fprintln(os.Stderr, "qpcycle:", err)
		os.Exit(1)
	}
}

func run(n, rounds int) error {
	dev, err := uverbs.Discovery{}.Device("rxe0")
	if err != nil {
		return err
	}
	x, err := uverbs.OpenDevice(dev, nil)
	if err != nil {
		return err
	}
	defer x.Close()
	pd, err := x.AllocPD()
	if err != nil {
		return err
	}
	cq, err := x.CreateCQ(16, nil, 0)
	if err != nil {
		return err
	}
	qps := make([]*uverbs.QP, n)
	cr, in, er, de := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for r := 0; r < rounds; r++ {
		probe.Mark("go", "start")
		t0 := time.Now()
		for i := range qps {
			s := time.Now()
			q, err := pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq, Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				return err
			}
			m := time.Now()
			if err := q.Modify(&qp.Attr{State: qp.Init, Port: 1}, qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskAccessFlags); err != nil {
				return err
			}
			e := time.Now()
			qps[i], cr[i], in[i] = q, probe.US(m.Sub(s)), probe.US(e.Sub(m))
		}
		probe.Mark("go", "create-init")
		t1 := time.Now()
		for i, q := range qps {
			s := time.Now()
			if err := q.Modify(&qp.Attr{State: qp.Err}, qp.MaskState); err != nil {
				return err
			}
			m := time.Now()
			if err := q.Close(); err != nil {
				return err
			}
			e := time.Now()
			er[i], de[i] = probe.US(m.Sub(s)), probe.US(e.Sub(m))
		}
		t2 := time.Now()
		probe.Mark("go", "err-destroy")
		fmt.Printf("go create %.1f init %.1f err %.1f destroy %.1f us (medians); loops %.1f %.1f ms; AnonHugePages %d kB\n", probe.Median(cr), probe.Median(in), probe.Median(er), probe.Median(de),
			float64(t1.Sub(t0).Microseconds())/1e3, float64(t2.Sub(t1).Microseconds())/1e3, probe.AnonHugeKB())
	}
	return nil
}
