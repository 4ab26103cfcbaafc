package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// testdata/common_c.golden is the output of a C program linked with
// rdma-core v44's librdmacm/examples/common.c (size_str, cnt_str) that
// prints rstream's show_perf lines with rstream's own format strings for
// the rows below; the Go twin must print the same bytes.
func TestFormatsMatchRstream(t *testing.T) {
	f, err := os.Open("testdata/common_c.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []string
	checked := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) != 3 || (fields[0] != "size" && fields[0] != "cnt" && fields[0] != "lat") {
			rows = append(rows, line)
			continue
		}
		n, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		switch fields[0] {
		case "size":
			got = sizeStr(n)
		case "cnt":
			got = cntStr(n)
		case "lat":
			got = latencyName(int(n))
		}
		if got != fields[2] {
			t.Errorf("%s(%d) = %q, C says %q", fields[0], n, got, fields[2])
		}
		checked++
	}
	if checked < 30 {
		t.Fatalf("only %d golden values", checked)
	}
	perf := []struct {
		t    test
		usec int64
	}{
		{test{"custom", 64, 100, 1}, 30391},
		{test{"64_lat", 64, 1, 100000}, 29123456},
		{test{"4k_bw", 4096, 10000, 1}, 4123457},
		{test{"1m_bw", 1 << 20, 100, 1}, 37081234},
		{test{"custom", 1 << 20, 10, 1}, 3708490},
		{test{"1.5k_lat", 1536, 1, 10000}, 7},
	}
	if len(rows) != len(perf) {
		t.Fatalf("golden has %d rows, test has %d", len(rows), len(perf))
	}
	for i, p := range perf {
		var b bytes.Buffer
		printRow(&b, p.t, p.usec)
		if got := strings.TrimSuffix(b.String(), "\n"); got != rows[i] {
			t.Errorf("row %d:\n got %q\nwant %q", i, got, rows[i])
		}
	}
}

func TestHeaderMatchesRstream(t *testing.T) {
	var b bytes.Buffer
	printHeader(&b)
	// rstream's header, byte for byte (rstream -S 64 -C 100 -I 1 in the guests).
	const want = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n"
	if b.String() != want {
		t.Errorf("header %q, want %q", b.String(), want)
	}
}

func TestDefaultSets(t *testing.T) {
	var names []string
	for _, x := range append(latencyTests(false), bandwidthTests(false)...) {
		names = append(names, x.name+":"+strconv.Itoa(x.count)+"x"+strconv.Itoa(x.iterations))
	}
	want := "64_lat:1x100000 4k_lat:1x10000 64k_lat:1x1000 1m_lat:1x100 64_bw:100000x1 4k_bw:10000x1 64k_bw:1000x1 1m_bw:100x1"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("default sets\n got %s\nwant %s", got, want)
	}
	if n := len(latencyTests(true)); n != len(testSizes) {
		t.Errorf("-S all: %d latency tests, want %d", n, len(testSizes))
	}
}
