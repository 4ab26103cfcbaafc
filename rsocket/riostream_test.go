//go:build linux

package rsocket_test

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/go-rdma/rdmacm/rsocket"
)

// rioPeer plays librdmacm's riostream (examples/riostream.c run_test): a
// window of size bytes mapped at offset 0, a 16-byte sync exchange, then
// per iteration count WriteAts of the whole window from the client and
// count back from the server, the last one carrying the marker in the
// window's last byte, which the other side polls. With verify the first
// size-1 bytes of that last write are rstream's counter pattern.
type rioPeer struct {
	client             bool
	size, count, iters int
	verify             bool
	sendN, recvN       byte
}

func (p *rioPeer) run(c *rsocket.Conn) error {
	m, err := c.IOMap(p.size, 0)
	if err != nil {
		return err
	}
	defer m.Close()
	buf := m.Bytes()
	buf[p.size-1] = 0xff
	sync := make([]byte, 16)
	for _, send := range []bool{p.client, !p.client} {
		if send {
			_, err = c.Write(sync)
		} else {
			_, err = io.ReadFull(c, sync)
		}
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
	}
	var marker byte
	for range p.iters {
		if !p.client {
			if err := p.wait(buf, marker); err != nil {
				return err
			}
			marker++
		}
		for range p.count - 1 {
			if _, err := c.WriteAt(buf, 0); err != nil {
				return err
			}
		}
		buf[p.size-1] = marker
		marker++
		if p.verify {
			for i := range buf[:p.size-1] {
				buf[i] = p.sendN
				p.sendN++
			}
		}
		if _, err := c.WriteAt(buf, 0); err != nil {
			return err
		}
		if p.client {
			if err := p.wait(buf, marker); err != nil {
				return err
			}
			marker++
		}
	}
	return nil
}

// wait polls the window's last byte for the marker (riostream's
// recv_xfer), then checks the pattern. The function call in the loop
// makes every test a fresh load of the NIC-written byte.
func (p *rioPeer) wait(buf []byte, marker byte) error {
	deadline := time.Now().Add(30 * time.Second)
	for buf[len(buf)-1] != marker {
		if time.Now().After(deadline) {
			return fmt.Errorf("marker %d never came (last byte %d)", marker, buf[len(buf)-1])
		}
		runtime.Gosched()
	}
	if p.verify {
		for i, b := range buf[:len(buf)-1] {
			if b != p.recvN {
				return fmt.Errorf("window byte %d: %#x, want %#x", i, b, p.recvN)
			}
			p.recvN++
		}
	}
	return nil
}
