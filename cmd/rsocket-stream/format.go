package main

import (
	"fmt"
	"io"
)

// sizeStr formats a byte count as librdmacm's examples/common.c size_str
// does: "64", "1.5k", "4m"; one decimal only below 10 units.
func sizeStr(size int64) string {
	base, mag := int64(1), ""
	switch {
	case size >= 1<<30:
		base, mag = 1<<30, "g"
	case size >= 1<<20:
		base, mag = 1<<20, "m"
	case size >= 1<<10:
		base, mag = 1<<10, "k"
	}
	var fraction int64
	if size/base < 10 {
		fraction = (size % base) * 10 / base
	}
	if fraction != 0 {
		return fmt.Sprintf("%d.%d%s", size/base, fraction, mag)
	}
	return fmt.Sprintf("%d%s", size/base, mag)
}

// cntStr formats a count as common.c's cnt_str: decimal thousands,
// truncated ("100k", "1m").
func cntStr(cnt int64) string {
	switch {
	case cnt >= 1000000000:
		return fmt.Sprintf("%db", cnt/1000000000)
	case cnt >= 1000000:
		return fmt.Sprintf("%dm", cnt/1000000)
	case cnt >= 1000:
		return fmt.Sprintf("%dk", cnt/1000)
	}
	return fmt.Sprintf("%d", cnt)
}

// sizeToCount is common.c's size_to_count: how many transfers (or
// iterations) a default test of this size runs.
func sizeToCount(size int) int {
	switch {
	case size >= 1<<20:
		return 100
	case size >= 1<<16:
		return 1000
	case size >= 1<<10:
		return 10000
	}
	return 100000
}

// truncate is snprintf's cut to a buffer of n bytes (n-1 characters).
func truncate(s string, n int) string {
	if len(s) > n-1 {
		return s[:n-1]
	}
	return s
}

// latencyName and bandwidthName are rstream's test names: the size in a
// 5-byte buffer, the name in a 10-byte one.
func latencyName(size int) string {
	return truncate(truncate(sizeStr(int64(size)), 5)+"_lat", 10)
}

func bandwidthName(size int) string {
	return truncate(truncate(sizeStr(int64(size)), 5)+"_bw", 10)
}

// printHeader writes rstream's header line.
func printHeader(w io.Writer) {
	fmt.Fprintf(w, "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n",
		"name", "bytes", "xfers", "iters", "total", "time", "Gb/sec", "usec/xfer")
}

// test is one row of rstream's output.
type test struct {
	name       string
	size       int // bytes per transfer
	count      int // transfers each way per iteration
	iterations int
}

// printRow writes rstream's show_perf line for a test that took usec
// microseconds (whole microseconds, as gettimeofday). The float32
// arithmetic is rstream's: usec is a C float there.
func printRow(w io.Writer, t test, usec int64) {
	fusec := float32(usec)
	bytes := int64(t.iterations) * int64(t.count) * int64(t.size) * 2
	fmt.Fprintf(w, "%-10s", t.name)
	fmt.Fprintf(w, "%-8s", sizeStr(int64(t.size)))
	fmt.Fprintf(w, "%-8s", cntStr(int64(t.count)))
	fmt.Fprintf(w, "%-8s", cntStr(int64(t.iterations)))
	fmt.Fprintf(w, "%-8s", sizeStr(bytes))
	fmt.Fprintf(w, "%8.2fs%10.2f%11.2f\n",
		float64(fusec)/1000000., float64(bytes*8)/(1000.*float64(fusec)),
		float64((fusec/float32(t.iterations))/float32(t.count*2)))
}

// testSize is rstream.c's test_size table: option 0 sizes run by
// default, option 1 sizes only with -S all.
var testSizes = []struct{ size, option int }{
	{1 << 6, 0},
	{1 << 7, 1}, {(1 << 7) + (1 << 6), 1},
	{1 << 8, 1}, {(1 << 8) + (1 << 7), 1},
	{1 << 9, 1}, {(1 << 9) + (1 << 8), 1},
	{1 << 10, 1}, {(1 << 10) + (1 << 9), 1},
	{1 << 11, 1}, {(1 << 11) + (1 << 10), 1},
	{1 << 12, 0}, {(1 << 12) + (1 << 11), 1},
	{1 << 13, 1}, {(1 << 13) + (1 << 12), 1},
	{1 << 14, 1}, {(1 << 14) + (1 << 13), 1},
	{1 << 15, 1}, {(1 << 15) + (1 << 14), 1},
	{1 << 16, 0}, {(1 << 16) + (1 << 15), 1},
	{1 << 17, 1}, {(1 << 17) + (1 << 16), 1},
	{1 << 18, 1}, {(1 << 18) + (1 << 17), 1},
	{1 << 19, 1}, {(1 << 19) + (1 << 18), 1},
	{1 << 20, 0}, {(1 << 20) + (1 << 19), 1},
	{1 << 21, 1}, {(1 << 21) + (1 << 20), 1},
	{1 << 22, 1}, {(1 << 22) + (1 << 21), 1},
}

// latencyTests and bandwidthTests are the default sets (-S all: every
// size): latency is one transfer each way per iteration, bandwidth one
// iteration of many transfers.
func latencyTests(all bool) []test {
	var ts []test
	for _, s := range testSizes {
		if s.option == 0 || all {
			ts = append(ts, test{name: latencyName(s.size), size: s.size, count: 1, iterations: sizeToCount(s.size)})
		}
	}
	return ts
}

func bandwidthTests(all bool) []test {
	var ts []test
	for _, s := range testSizes {
		if s.option == 0 || all {
			ts = append(ts, test{name: bandwidthName(s.size), size: s.size, count: sizeToCount(s.size), iterations: 1})
		}
	}
	return ts
}
