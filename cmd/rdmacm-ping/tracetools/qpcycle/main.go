// Command qpcycle is ../qpcycle.c over this module's uverbs: the verbs of
// cmtime's create qp and disconnect steps without the CM or a peer (issue
// 17, docs/benchmarks.md "Eighth pass"). N RC QPs on rxe0 (caps 1/1/1/1,
// one CQ): create and INIT each, then ERR and close each, timing every
// call; it prints the medians in µs. QPCYCLE_CPUPROFILE=FILE writes a CPU
// profile. QPCYCLE_MARK=FILE marks the loops' edges for
// tracetools/tbcount, as qpcycle.c does ("go start", "go create-init", "go
// err-destroy").
//
//	CGO_ENABLED=0 go build -o DIR/qpcycle-go ./cmd/rdmacm-ping/tracetools/qpcycle
//	/host/qpcycle-go [N [ROUNDS]]                      # in guest a
//	GODEBUG=disablethp=1 /host/qpcycle-go [N [ROUNDS]]  # the heap off huge pages
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

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

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

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
		mark("start")
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
			qps[i], cr[i], in[i] = q, us(m.Sub(s)), us(e.Sub(m))
		}
		mark("create-init")
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
			er[i], de[i] = us(m.Sub(s)), us(e.Sub(m))
		}
		t2 := time.Now()
		mark("err-destroy")
		fmt.Printf("go create %.1f init %.1f err %.1f destroy %.1f us (medians); loops %.1f %.1f ms; AnonHugePages %d kB\n", median(cr), median(in), median(er), median(de),
			float64(t1.Sub(t0).Microseconds())/1e3, float64(t2.Sub(t1).Microseconds())/1e3, anonHugeKB())
	}
	return nil
}

// anonHugeKB is the process's memory on transparent huge pages
// (AnonHugePages of /proc/self/smaps_rollup), -1 if unknown.
func anonHugeKB() int {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// mark replaces $QPCYCLE_MARK (a file in the 9p share that tbcount's
// plugin watches) with "go LABEL", by a rename so that the host sees one
// change, and waits 100 ms for the host to dump.
func mark(label string) {
	p := os.Getenv("QPCYCLE_MARK")
	if p == "" {
		return
	}
	err := os.WriteFile(p+".tmp", []byte("go "+label+"\n"), 0o644)
	if err == nil {
		err = os.Rename(p+".tmp", p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "qpcycle: mark:", err) // the window is lost, the run goes on
	}
	time.Sleep(100 * time.Millisecond)
}
