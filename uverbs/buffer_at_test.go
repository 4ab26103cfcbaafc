package uverbs

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/internal/unix"
)

func TestAllocBufferAt(t *testing.T) {
	const addr = 0x610000000000
	b, err := AllocBufferAt(addr, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if b.Addr() != addr || b.Len() != 5000 {
		t.Fatalf("buffer at %#x, %d bytes", b.Addr(), b.Len())
	}
	b.Bytes()[4999] = 1
	if _, err := AllocBufferAt(addr, 10); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("second buffer at the same address: %v, want EEXIST", err)
	}
	if _, err := AllocBufferAt(addr+1, 10); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unaligned address: %v, want ErrInvalidArgument", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// The range is free again.
	b, err = AllocBufferAt(addr, 10)
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
