package abi

// scratch is one page outside the Go heap that a command's user memory
// lives in while the kernel reads or writes it: a ucma command's header,
// body and the memory its user pointer names (the response, or
// SET_OPTION's value), an ioctl's PTR_IN and PTR_OUT buffers. Pointers
// into it stay valid without runtime.Pinner, whose first Pin per call
// allocates a pinner and sets a finalizer and whose Pin and Unpin lock
// the object's span: in the guests' create qp step that was about a
// quarter of the client's CPU outside syscalls (issue 17, pprof of
// cm's BenchmarkGuestCreateQP). getScratch returns nil where there is
// none (off Linux, or mmap failed): callers then pin Go memory.
type scratch struct{ mem []byte }

const scratchSize = 4096
