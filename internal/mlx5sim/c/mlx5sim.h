/*
 * mlx5sim.h: the wire format between the LD_PRELOAD shim (shim.c) and the
 * simulated device (Go, package mlx5sim), and the functions the shim exports
 * to the C scenario interpreter (scenario.c).
 *
 * See ../README.md, section 3. All fields are in host byte order.
 */
#ifndef MLX5SIM_H
#define MLX5SIM_H

#include <stdint.h>

/* Request kinds (struct sim_req.kind). */
enum sim_kind {
	SIM_IOCTL = 1,    /* a0 = request, a1 = argument pointer */
	SIM_WRITE = 2,    /* a0 = buffer pointer, a1 = byte count */
	SIM_MMAP = 3,     /* a0 = address (already mapped), a1 = length, a2 = offset, a3 = prot */
	SIM_MUNMAP = 4,   /* a0 = address, a1 = length */
	SIM_SNAPSHOT = 5, /* text: the snapshot label */
	SIM_EXEC = 6,     /* text: a scenario line for the device (e.g. "cqe ...") */
	SIM_CLOSE = 7,    /* fd is being closed */
	SIM_RECORD = 8,   /* text: a line to put in the trace */
	SIM_FENCE = 9,    /* text: the barrier instruction about to execute
			     ("sfence", "dsb st", ...), a0 = its address; sent
			     by c/fenceplugin.c on its own connection */
};

/* One request, followed by len bytes of text for kinds 5, 6, 8 and 9. */
struct sim_req {
	uint32_t kind;
	int32_t fd;
	int32_t spare_fd; /* a fresh eventfd the device may hand out, or -1 */
	uint32_t len;     /* bytes of text following the request */
	uint64_t a0, a1, a2, a3;
	uint64_t pid;     /* getpid() of the process whose memory a0.. point into */
	uint64_t reserved;
};

/* The reply to every request. */
struct sim_rep {
	int64_t ret;        /* syscall result (>= 0) */
	int32_t err;        /* errno, 0 on success */
	int32_t used_spare; /* 1: spare_fd now belongs to the program */
};

_Static_assert(sizeof(struct sim_req) == 64, "struct sim_req must be 64 bytes");
_Static_assert(sizeof(struct sim_rep) == 16, "struct sim_rep must be 16 bytes");

/*
 * Exported by the shim. The scenario program finds them with
 * dlsym(RTLD_DEFAULT, ...), so that it fails cleanly when run without the
 * shim preloaded.
 */

/* Ask the device for a snapshot of all device-visible memory, labelled. */
void sim_snapshot(const char *label);
/* Hand a scenario line to the device; returns the device's errno (0: ok). */
int sim_exec(const char *line);
/* Put a line in the trace. */
void sim_record(const char *line);

/* prctl option that opens (arg 1) or closes (arg 0) the calling thread's
 * trace window for c/fenceplugin.c; unknown to the kernel (EINVAL). */
#define SIM_PRCTL_TRACE 0x6d6c7835

/*
 * Fence tracing: sim_trace_begin() and sim_trace_end() open and close the
 * calling thread's trace window (they nest). Under qemu-user with
 * c/fenceplugin.c, every barrier instruction the thread executes in the
 * window is reported to the device before it executes; natively nothing
 * is traced.
 */
void sim_trace_begin(void);
void sim_trace_end(void);

#endif /* MLX5SIM_H */
