package exrun

import "testing"

func TestWaits(t *testing.T) {
	tb := `SIGQUIT: quit
PC=0x40acce m=0 sigcode=0

goroutine 0 gp=0xc92940 m=0 mp=0xc93b20 [idle]:
internal/runtime/syscall/linux.Syscall6()
	/usr/local/go/src/internal/runtime/syscall/linux/asm_linux_amd64.s:36 +0xe fp=0x7ffce729aff0 sp=0x7ffce729afe8 pc=0x40acce

goroutine 12 gp=0x1700291dab40 m=nil [select]:
runtime.gopark(0x1700291dab40?, 0x3?, 0x1?, 0x0?, 0x17002917b2ca?)
	/usr/local/go/src/runtime/proc.go:462 +0xce fp=0x17002917b220 sp=0x17002917b200 pc=0x4886ce
github.com/go-rdma/rdmacm/rsocket.(*Conn).await(0x170029200008, 0x17002913eee0, 0x170029200780)
	/work/main/rsocket/conn_linux.go:384 +0x179 fp=0x17002917b2e8 sp=0x17002917b240 pc=0x6f29f9
github.com/go-rdma/rdmacm/rsocket.(*Conn).Write(0x170029200008, {0x17002920a000, 0x8000, 0x8000})
	/work/main/rsocket/conn_linux.go:639 +0x2d6 fp=0x17002917b490 sp=0x17002917b368 pc=0x6f44f6
net/http.(*conn).serve(0x17002918cbd0, {0x851a68, 0x17002914f920})
	/usr/local/go/src/net/http/server.go:2067 +0x690 fp=0x17002917bfb8 sp=0x17002917bb58 pc=0x63c370
created by net/http.(*Server).Serve in goroutine 1
	/usr/local/go/src/net/http/server.go:3464 +0x2c5

goroutine 13 gp=0x1147f2d2c780 m=nil [select]:
net/http.(*persistConn).writeLoop(0x1147f2d14140)
	/usr/local/go/src/net/http/transport.go:2652 +0xe6 fp=0x1147f2d13fc8 sp=0x1147f2d13eb8 pc=0x6e6bc6
`
	want := "goroutine 12 [select] rsocket.(*Conn).await < rsocket.(*Conn).Write < http.(*conn).serve\n"
	if got := Waits(tb); got != want {
		t.Errorf("Waits:\n%q\nwant\n%q", got, want)
	}
	if got := Waits("no traceback"); got != "" {
		t.Errorf("Waits of no traceback: %q", got)
	}
}
