//go:build linux

package mlx5sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// The shim protocol (README section 3): 64-byte sim_req, 16-byte sim_rep,
// host byte order; kinds 5, 6, 8 and 9 carry len bytes of text.

const (
	kindIoctl    = 1
	kindWrite    = 2
	kindMmap     = 3
	kindMunmap   = 4
	kindSnapshot = 5
	kindExec     = 6
	kindClose    = 7
	kindRecord   = 8
	kindFence    = 9 // text: the fence instruction about to execute

	reqSize  = 64
	repSize  = 16
	maxText  = 1 << 20
	sockEnv  = "MLX5SIM_SOCK"
	sockName = "mlx5sim.sock"
)

type simReq struct {
	Kind           uint32
	FD, SpareFD    int32
	Len            uint32
	A0, A1, A2, A3 uint64
	Pid            uint64
	Reserved       uint64
}

// RunChild runs cmd (the C scenario program, with LD_PRELOAD and
// SYSFS_PATH already in cmd.Env; nil Env means this process's
// environment; or a Go child with a Remote; either possibly under
// qemu-user with c/fenceplugin.c) against d: it listens on a unix socket
// in a temporary directory, passes its path in MLX5SIM_SOCK, starts the
// child and serves every connection the child makes (the shim's or
// Remote's, and the fence plugin's) until EOF. It returns the child's
// exit error, or the first protocol error.
func RunChild(ctx context.Context, cmd *exec.Cmd, d *Device) error {
	dir, err := os.MkdirTemp("", "mlx5sim")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, sockName)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	defer ln.Close()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, sockEnv+"="+path)
	if d.p.PageSize != 0 && d.p.PageSize != 4096 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("MLX5SIM_PAGESIZE=%d", d.p.PageSize)) // the shim's sysconf(_SC_PAGESIZE)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		conns    []*net.UnixConn
		serveErr error
	)
	first := make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := Serve(c, d); err != nil {
					mu.Lock()
					if serveErr == nil {
						serveErr = err
					}
					mu.Unlock()
				}
			}()
			if n == 0 {
				close(first)
			}
		}
	}()
	closeAll := func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}
	var werr error
	select {
	case <-first:
	case werr = <-waitc:
		ln.Close()
		if werr == nil {
			werr = errors.New("mlx5sim: child exited without connecting to the device")
		}
		wg.Wait()
		return werr
	case <-ctx.Done():
		cmd.Process.Kill()
		<-waitc
		ln.Close()
		closeAll()
		wg.Wait()
		return ctx.Err()
	}
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	werr = <-waitc
	// The child is gone: its connections are at EOF.
	ln.Close()
	wg.Wait()
	closeAll()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if werr != nil {
		return werr
	}
	return serveErr
}

// Serve answers shim requests on conn until EOF.
func Serve(conn io.ReadWriter, d *Device) error {
	var rb [reqSize]byte
	for {
		if _, err := io.ReadFull(conn, rb[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("mlx5sim: read request: %w", err)
		}
		var r simReq
		n := binary.NativeEndian
		r.Kind, r.FD, r.SpareFD, r.Len = n.Uint32(rb[0:]), int32(n.Uint32(rb[4:])), int32(n.Uint32(rb[8:])), n.Uint32(rb[12:])
		r.A0, r.A1, r.A2, r.A3, r.Pid = n.Uint64(rb[16:]), n.Uint64(rb[24:]), n.Uint64(rb[32:]), n.Uint64(rb[40:]), n.Uint64(rb[48:])
		var text string
		if r.Kind == kindSnapshot || r.Kind == kindExec || r.Kind == kindRecord || r.Kind == kindFence {
			if r.Len > maxText {
				return fmt.Errorf("mlx5sim: request text of %d bytes", r.Len)
			}
			t := make([]byte, r.Len)
			if _, err := io.ReadFull(conn, t); err != nil {
				return fmt.Errorf("mlx5sim: read request text: %w", err)
			}
			text = string(t)
		}
		ret, used, e := d.serveOne(r, text)
		var wb [repSize]byte
		n.PutUint64(wb[0:], uint64(ret))
		n.PutUint32(wb[8:], uint32(e))
		if used {
			n.PutUint32(wb[12:], 1)
		}
		if _, err := conn.Write(wb[:]); err != nil {
			return fmt.Errorf("mlx5sim: write reply: %w", err)
		}
	}
}

func (d *Device) serveOne(r simReq, text string) (int64, bool, unix.Errno) {
	mem := ProcMem{Pid: int(r.Pid)}
	fd, spare := int(r.FD), int(r.SpareFD)
	switch r.Kind {
	case kindIoctl:
		ret, used, e := d.Ioctl(mem, fd, r.A0, r.A1, spare)
		return max(ret, 0), used, e
	case kindWrite:
		ret, used, e := d.Write(mem, fd, r.A0, r.A1, spare)
		return max(ret, 0), used, e
	case kindMmap:
		return 0, false, d.Mmap(mem, fd, r.A0, r.A1, r.A2, int(r.A3))
	case kindMunmap:
		return 0, false, d.Munmap(mem, r.A0, r.A1)
	case kindSnapshot:
		d.Snapshot(mem, text)
		return 0, false, 0
	case kindExec:
		return 0, false, d.Exec(mem, text)
	case kindClose:
		d.Close(fd)
		return 0, false, 0
	case kindRecord:
		d.Record(text)
		return 0, false, 0
	case kindFence:
		// c/fenceplugin.c stopped a traced thread before the barrier at
		// A0: the thread waits for this reply.
		d.reportedFence(mem, text, r.A0)
		return 0, false, 0
	}
	d.mu.Lock()
	d.emit(fmt.Sprintf("UNKNOWN shim request kind=%d", r.Kind))
	d.mu.Unlock()
	return 0, false, unix.EINVAL
}
