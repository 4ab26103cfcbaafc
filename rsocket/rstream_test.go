package rsocket_test

import (
	"fmt"
	"io"
)

// rstreamPeer plays librdmacm's rstream (examples/rstream.c run_test) on
// c: a 16-byte sync exchange, then per iteration count transfers of size
// from the client and count back from the server. With verify the bytes
// are rstream's format_buf/verify_buf counter (one running counter per
// direction).
type rstreamPeer struct {
	client       bool
	size, count  int
	iters        int
	verify       bool
	sendN, recvN byte
}

func (p *rstreamPeer) run(c io.ReadWriter) error {
	buf := make([]byte, max(p.size, 16))
	if err := p.xfer(c, buf[:16], p.client); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := p.xfer(c, buf[:16], !p.client); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	for i := 0; i < p.iters; i++ {
		for range p.count {
			if err := p.xfer(c, buf[:p.size], p.client); err != nil {
				return err
			}
		}
		for range p.count {
			if err := p.xfer(c, buf[:p.size], !p.client); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *rstreamPeer) xfer(c io.ReadWriter, b []byte, send bool) error {
	if send {
		if p.verify {
			for i := range b {
				b[i] = p.sendN
				p.sendN++
			}
		}
		_, err := c.Write(b)
		return err
	}
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if p.verify {
		for i := range b {
			if b[i] != p.recvN {
				return fmt.Errorf("data verification failed at byte %d of a %d-byte transfer: %#x, want %#x", i, len(b), b[i], p.recvN)
			}
			p.recvN++
		}
	}
	return nil
}
