package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest"
)

// BenchmarkREQFloodVM floods guest b's CM with well-formed REQs from a
// node that never answers the REPs (guest a: no kernel CM, so its REPs
// are dropped), while a legitimate client connects, once with b's kernel
// CM and once with our engine (b's CM modules unloaded), behind the same
// server: `rdmacm-ping -s -cmtime 1`, which accepts every request (a QP
// each) and frees those that end unreachable or rejected. For each
// backend it reports the legitimate client's connect time per connection
// without and during the flood, how many of its connections completed,
// the server's peak RSS, b's kernel memory (MemAvailable) used during the
// flood, the QPs b holds when the flood ends, and how many REQs went out.
// FLOOD_REQS (20000), FLOOD_RATE (REQs/s, 2000) and FLOOD_CONNS (20)
// tune it; docs/reliability.md has the figures.
//
//	VMTEST=1 go test -run '^$' -bench REQFloodVM -benchtime 1x -timeout 30m ./cmd/rdmacm-ping/
func BenchmarkREQFloodVM(b *testing.B) {
	p := userPair(b)
	reqs, rate, conns := envInt("FLOOD_REQS", 20000), envInt("FLOOD_RATE", 2000), envInt("FLOOD_CONNS", 20)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	bin := filepath.Join(p.Share, "bin", "malformed-mad")
	build := exec.Command("go", "build", "-o", bin, "../../internal/malformed/cmd/malformed-mad")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build malformed-mad: %v\n%s", err, out)
	}
	const flooder = "/host/bin/malformed-mad"
	local := localPing(b, ctx, p.A)
	srvBin := localPing(b, ctx, p.B)
	run := func(m *vmtest.Machine, cmd string) string {
		r, err := m.Run(ctx, cmd)
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("guest %s: %s: %v %+v", m.Name, cmd, err, r)
		}
		return r.Stdout
	}
	memAvail := func() int {
		n, _ := strconv.Atoi(strings.TrimSpace(run(p.B, "awk '/^MemAvailable:/ {print $2}' /proc/meminfo")))
		return n
	}
	client := func() (perConn float64, ok bool, out string) {
		r, err := p.A.Run(ctx, fmt.Sprintf("%s -backend user -c -a %s -cmtime %d", local, p.B.Addr, conns))
		if r == nil {
			b.Fatalf("client: %v", err)
		}
		perConn, found := cmtimePerConn(r.Stdout, "connect")
		return perConn, found && r.ExitCode == 0 && !strings.Contains(r.Stdout+r.Stderr, "error"), r.Stdout + r.Stderr
	}
	type result struct {
		quiet, flood      float64
		quietOK, floodOK  bool
		rssKiB, kernelKiB int
		qps               string
		sent              string
	}
	results := map[string]result{}
	for _, backend := range []string{"kernel", "user"} {
		if backend == "user" {
			run(p.B, "rmmod rdma_ucm rdma_cm iw_cm ib_cm")
		}
		log := "/tmp/flood-server-" + backend + ".log"
		srv, err := p.B.Start(ctx, fmt.Sprintf("%s -backend %s -s -cmtime 1 -a %s >%s 2>&1", srvBin, backend, p.B.Addr, log))
		if err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			if r, err := p.B.Run(ctx, "grep -q 'listening on' "+log); err == nil && r.ExitCode == 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s server never listened:\n%s", backend, run(p.B, "cat "+log))
			}
		}
		var res result
		var out string
		if res.quiet, res.quietOK, out = client(); !res.quietOK {
			b.Fatalf("%s: the legitimate client without a flood failed:\n%s\nserver:\n%s", backend, out, run(p.B, "cat "+log))
		}
		before := memAvail()
		fl, err := p.A.Start(ctx, fmt.Sprintf("%s -src %s -dst %s -flood %d -port 7471 -rate %d", flooder, p.A.Addr, p.B.Addr, reqs, rate))
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second)
		res.flood, res.floodOK, out = client()
		fr, err := fl.Wait(ctx)
		if err != nil || fr.ExitCode != 0 {
			b.Fatalf("flood: %v %+v", err, fr)
		}
		res.sent = strings.TrimSpace(fr.Stdout)
		res.kernelKiB = before - memAvail()
		res.qps = strings.TrimSpace(run(p.B, "rdma resource show qp | grep -vc 'qpn 1 '"))
		pid := strings.TrimSpace(run(p.B, "pidof rdmacm-ping || true"))
		if pid != "" {
			hwm := regexp.MustCompile(`VmHWM:\s+(\d+)`).FindStringSubmatch(run(p.B, "cat /proc/"+strings.Fields(pid)[0]+"/status"))
			if hwm != nil {
				res.rssKiB, _ = strconv.Atoi(hwm[1])
			}
		}
		srv.Stop(context.Background())
		if backend == "user" {
			run(p.B, "for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko || exit 1; done")
		}
		if !res.floodOK {
			fmt.Fprintf(os.Stderr, "%s: the legitimate client during the flood:\n%s\n", backend, out)
		}
		results[backend] = res
		b.ReportMetric(res.flood, backend+"-flood-us/conn")
		b.ReportMetric(res.quiet, backend+"-quiet-us/conn")
	}
	var t strings.Builder
	fmt.Fprintf(&t, "| b's CM | connect, quiet (µs/conn) | connect, flood | client completed (quiet, flood) | server peak RSS | kernel memory used | QPs at the end | flood sent |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range []string{"kernel", "user"} {
		r := results[k]
		fmt.Fprintf(&t, "| %s | %.0f | %.0f | %v, %v | %d KiB | %d KiB | %s | %s |\n", k, r.quiet, r.flood, r.quietOK, r.floodOK,
			r.rssKiB, r.kernelKiB, r.qps, r.sent)
	}
	fmt.Fprintf(os.Stderr, "%d REQs at %d/s, client %d connections:\n%s", reqs, rate, conns, t.String())
}

// cmtimePerConn is the us/conn column of one cmtime row.
func cmtimePerConn(out, step string) (float64, bool) {
	for _, r := range cmtimeRow.FindAllStringSubmatch(out, -1) {
		if r[1] == step {
			v, err := strconv.ParseFloat(r[5], 64)
			return v, err == nil
		}
	}
	return 0, false
}
