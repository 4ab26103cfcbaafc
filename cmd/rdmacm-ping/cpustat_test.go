package main

import "testing"

func TestProcField(t *testing.T) {
	// /proc/self/io and a task's status, as Linux 6.1 prints them.
	io := []byte("rchar: 4242\nwchar: 17\nsyscr: 215\nsyscw: 400\nread_bytes: 0\n")
	status := []byte("Name:\trdmacm-ping\nvoluntary_ctxt_switches:\t914\nnonvoluntary_ctxt_switches:\t63\n")
	for _, c := range []struct {
		b    []byte
		name string
		want int64
	}{
		{io, "syscr:", 215},
		{io, "syscw:", 400},
		{status, "voluntary_ctxt_switches:", 914},
		{status, "nonvoluntary_ctxt_switches:", 63}, // not taken for the voluntary line
		{io, "cancelled_write_bytes:", 0},           // absent
		{[]byte("syscr: many\n"), "syscr:", 0},      // not a number
	} {
		if got := procField(c.b, c.name); got != c.want {
			t.Errorf("procField(%q) = %d, want %d", c.name, got, c.want)
		}
	}
}
