package kcall

import (
	"sync"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// scratch is one page outside the Go heap that a command's user memory
// lives in while the kernel reads or writes it: a ucma command's header,
// body and the memory its user pointer names (the response, or
// SET_OPTION's value), an ioctl's PTR_IN and PTR_OUT buffers. Pointers
// into it stay valid without runtime.Pinner, whose first Pin per call
// allocates a pinner and sets a finalizer and whose Pin and Unpin lock
// the object's span: in the guests' create qp step that was about a
// quarter of the client's CPU outside syscalls (pprof of cm's
// BenchmarkGuestCreateQP). getScratch returns nil where there is
// none (off Linux, or mmap failed): callers then pin Go memory.
type scratch struct {
	mem []byte
}

const scratchSize = 4096

// SinkPtr returns the address of a word outside the Go heap that the
// kernel may write and nothing reads, shared by the whole process: the
// response of rxe's send doorbell (POST_SEND's bad_wr, always 0 for a
// doorbell without work requests; rdma-core rxe.c post_send_db). One
// page mapped once instead of a pinned word per QP (the runtime.Pinner,
// its finalizer and the word were three allocations per QP create). 0 where no page can be mapped: callers then pin Go memory.
func SinkPtr() uint64 {
	sink.once.Do(func() {
		if s := getScratch(); s != nil {
			sink.ptr = abi.SlicePtr(s.mem)
		}
	})
	return sink.ptr
}

var sink struct {
	once sync.Once
	ptr  uint64
}
