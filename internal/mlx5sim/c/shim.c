/*
 * shim.c: an LD_PRELOAD library that puts the simulated mlx5 device (Go,
 * package mlx5sim) under an unmodified libibverbs + libmlx5.
 *
 * It has no logic of its own: every system call on the device is forwarded
 * over a unix stream socket ($MLX5SIM_SOCK) as one request and one reply
 * (../README.md, section 3; the structs are in mlx5sim.h), and the device
 * reads and writes our memory with process_vm_readv/writev.
 *
 * What is intercepted:
 *   - open/open64/openat/openat64 and their _FORTIFY_SOURCE variants
 *     (__open_2, ...) of /dev/infiniband/uverbs* (where libibverbs looks
 *     for the verbs node, RDMA_CDEV_DIR) and of /dev/char/1:7 (the udev
 *     fallback of util/open_cdev.c): /dev/full is opened O_RDWR instead
 *     (a character device 1:7, matching the fake sysfs "dev" file, so
 *     libibverbs' fstat check passes) and the fd is marked as the device.
 *   - stat/lstat/fstatat (and the 64 variants) of those paths report
 *     /dev/full, for try_access_device() in libibverbs/init.c.
 *   - socket(AF_NETLINK, *, NETLINK_RDMA) fails with EPROTONOSUPPORT, so
 *     libibverbs finds devices through sysfs ($SYSFS_PATH).
 *   - ioctl, write, mmap/mmap64 and close on marked fds, and munmap of
 *     regions mapped for the device, are forwarded.
 * Everything else goes to the real libc function (dlsym(RTLD_NEXT)).
 *
 * Fence tracing (sim_trace_begin/sim_trace_end): libmlx5's barriers are
 * inline asm, invisible to an LD_PRELOAD library. The shim only opens and
 * closes the calling thread's trace window, with a prctl that the QEMU
 * plugin c/fenceplugin.c observes when the program runs under qemu-user
 * with it; the plugin reports every barrier instruction executed in the
 * window (README, "Fences"). Natively the prctl fails and nothing is
 * traced.
 *
 * The socket's own I/O uses syscall() directly, so it never recurses into
 * our wrappers; the real functions are resolved lazily, because libibverbs
 * may call us before our constructor has run.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "mlx5sim.h"

#define EXPORT __attribute__((visibility("default")))

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

/* The node libibverbs is redirected to: a character device 1:7. */
#define SIM_NODE "/dev/full"

/* The shim's socket is moved to an fd at or above this, out of the way of
 * the fd numbers the program (and so the trace) sees. */
#define SIM_SOCK_FD_MIN 900

/* ---------------------------------------------------------------------------
 * The real libc functions.
 */

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static int (*real___openat_2)(int, const char *, int);
static int (*real___openat64_2)(int, const char *, int);
static int (*real_stat)(const char *, struct stat *);
static int (*real_stat64)(const char *, struct stat64 *);
static int (*real_lstat)(const char *, struct stat *);
static int (*real_lstat64)(const char *, struct stat64 *);
static int (*real_fstatat)(int, const char *, struct stat *, int);
static int (*real_fstatat64)(int, const char *, struct stat64 *, int);
static int (*real_socket)(int, int, int);
static int (*real_ioctl)(int, unsigned long, ...);
static ssize_t (*real_write)(int, const void *, size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static void *(*real_mmap64)(void *, size_t, int, int, int, off64_t);
static int (*real_munmap)(void *, size_t);
static int (*real_close)(int);

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

/* Look up one real function; a missing one is fatal, we cannot go on. */
static void *next_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		fprintf(stderr, "mlx5sim shim: dlsym(RTLD_NEXT, %s) failed: %s\n",
			name, dlerror());
		abort();
	}
	return p;
}

/* Like next_sym, for symbols an older libc may lack (the fortify and
 * stat64 variants); NULL is fine, the wrapper then uses a sibling. */
static void *next_sym_opt(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static void resolve_all(void)
{
	real_open = next_sym("open");
	real_open64 = next_sym_opt("open64");
	real_openat = next_sym("openat");
	real_openat64 = next_sym_opt("openat64");
	real___open_2 = next_sym_opt("__open_2");
	real___open64_2 = next_sym_opt("__open64_2");
	real___openat_2 = next_sym_opt("__openat_2");
	real___openat64_2 = next_sym_opt("__openat64_2");
	real_stat = next_sym("stat");
	real_stat64 = next_sym_opt("stat64");
	real_lstat = next_sym("lstat");
	real_lstat64 = next_sym_opt("lstat64");
	real_fstatat = next_sym("fstatat");
	real_fstatat64 = next_sym_opt("fstatat64");
	real_socket = next_sym("socket");
	real_ioctl = next_sym("ioctl");
	real_write = next_sym("write");
	real_mmap = next_sym("mmap");
	real_mmap64 = next_sym_opt("mmap64");
	real_munmap = next_sym("munmap");
	real_close = next_sym("close");
}

static inline void resolve(void)
{
	pthread_once(&resolve_once, resolve_all);
}

/* ---------------------------------------------------------------------------
 * Bookkeeping: which fds are the device, which regions were mapped for it.
 */

#define MAX_FDS 4096
static _Atomic unsigned char marked[MAX_FDS];

static int is_marked(int fd)
{
	return fd >= 0 && fd < MAX_FDS && marked[fd];
}

struct region {
	uintptr_t addr;
	size_t len;
	int fd;
};

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region *regions;
static size_t nregions, capregions;

static int add_region(void *addr, size_t len, int fd)
{
	int ret = 0;

	pthread_mutex_lock(&region_lock);
	if (nregions == capregions) {
		size_t cap = capregions ? 2 * capregions : 16;
		struct region *r = realloc(regions, cap * sizeof(*r));

		if (!r) {
			ret = -1;
			goto out;
		}
		regions = r;
		capregions = cap;
	}
	regions[nregions++] = (struct region){ (uintptr_t)addr, len, fd };
out:
	pthread_mutex_unlock(&region_lock);
	return ret;
}

/* Remove the first device region overlapping [addr, addr+len); returns 1
 * and the region's fd if there was one. */
static int take_region(void *addr, size_t len, int *fd)
{
	uintptr_t a = (uintptr_t)addr;
	int found = 0;

	pthread_mutex_lock(&region_lock);
	for (size_t i = 0; i < nregions; i++) {
		struct region *r = &regions[i];

		if (a < r->addr + r->len && r->addr < a + len) {
			*fd = r->fd;
			regions[i] = regions[--nregions];
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&region_lock);
	return found;
}

/* The paths libibverbs may open for the verbs node (see the header). */
static int is_dev_path(const char *path)
{
	return path && (strncmp(path, "/dev/infiniband/uverbs", 22) == 0 ||
			strcmp(path, "/dev/char/1:7") == 0);
}

/* ---------------------------------------------------------------------------
 * The connection to the device.
 */

static pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;
static int sim_sock = -1;
static int sim_tried;

/* Connect to $MLX5SIM_SOCK once; call with sim_lock held. */
static int sim_connect_locked(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path;
	long s, hi;

	if (sim_sock >= 0)
		return 0;
	if (sim_tried)
		return -1;
	sim_tried = 1;

	path = getenv("MLX5SIM_SOCK");
	if (!path || !*path) {
		fprintf(stderr, "mlx5sim shim: MLX5SIM_SOCK is not set\n");
		return -1;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "mlx5sim shim: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);

	s = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		perror("mlx5sim shim: socket");
		return -1;
	}
	if (syscall(SYS_connect, s, &sa, sizeof(sa)) < 0) {
		fprintf(stderr, "mlx5sim shim: connect %s: %s\n", path,
			strerror(errno));
		syscall(SYS_close, s);
		return -1;
	}
	/* Move out of the program's way, so that its fd numbers are the ones
	 * it would have without the shim. */
	hi = syscall(SYS_fcntl, s, F_DUPFD_CLOEXEC, SIM_SOCK_FD_MIN);
	if (hi >= 0) {
		syscall(SYS_close, s);
		s = hi;
	}
	sim_sock = (int)s;
	return 0;
}

static int io_all(long nr, const void *buf, size_t n)
{
	char *p = (char *)buf;

	while (n > 0) {
		long r = syscall(nr, sim_sock, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * One request and its reply. On a transport failure the reply is
 * ret -1, err EIO (and the connection is dropped: later calls fail too).
 */
static void sim_call(struct sim_req *req, const void *text, struct sim_rep *rep)
{
	int saved = errno;

	resolve();
	req->pid = (uint64_t)getpid();
	pthread_mutex_lock(&sim_lock);
	if (sim_connect_locked() ||
	    io_all(SYS_write, req, sizeof(*req)) ||
	    (req->len && io_all(SYS_write, text, req->len)) ||
	    io_all(SYS_read, rep, sizeof(*rep))) {
		if (sim_sock >= 0) {
			fprintf(stderr, "mlx5sim shim: lost the device (request kind %u)\n",
				req->kind);
			syscall(SYS_close, sim_sock);
			sim_sock = -1;
		}
		rep->ret = -1;
		rep->err = EIO;
		rep->used_spare = 0;
	}
	pthread_mutex_unlock(&sim_lock);
	errno = saved;
}

/* Forward a call that may create an fd (ioctl, write): lend the device an
 * eventfd and close it unless the device kept it. */
static long forward_with_spare(struct sim_req *req)
{
	struct sim_rep rep;

	req->spare_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	sim_call(req, NULL, &rep);
	if (req->spare_fd >= 0 && !rep.used_spare)
		real_close(req->spare_fd);
	if (rep.err) {
		errno = rep.err;
		return -1;
	}
	return (long)rep.ret;
}

/*
 * Connect at load, so that the device sees the child as soon as it starts.
 * Built with -DMLX5SIM_LAZY_CONNECT, the shim connects on first use only:
 * for debugging under wrappers (a shell, strace -E LD_PRELOAD=...) that
 * would otherwise take the device's one connection themselves.
 */
__attribute__((constructor)) static void shim_init(void)
{
	resolve();
#ifndef MLX5SIM_LAZY_CONNECT
	pthread_mutex_lock(&sim_lock);
	sim_connect_locked();
	pthread_mutex_unlock(&sim_lock);
#endif
}

/* ---------------------------------------------------------------------------
 * Exported to the scenario program.
 */

static void text_call(uint32_t kind, const char *text, struct sim_rep *rep)
{
	struct sim_req req = { .kind = kind, .fd = -1, .spare_fd = -1 };

	req.len = (uint32_t)strlen(text);
	sim_call(&req, text, rep);
}

EXPORT void sim_snapshot(const char *label)
{
	struct sim_rep rep;

	text_call(SIM_SNAPSHOT, label, &rep);
}

EXPORT int sim_exec(const char *line)
{
	struct sim_rep rep;

	text_call(SIM_EXEC, line, &rep);
	return rep.err;
}

EXPORT void sim_record(const char *line)
{
	struct sim_rep rep;

	text_call(SIM_RECORD, line, &rep);
}

/* ---------------------------------------------------------------------------
 * Fence tracing: the trace window of the calling thread, for
 * c/fenceplugin.c. Windows nest (the scenario program opens one for its
 * whole run); the prctl goes out when the depth leaves or returns to 0.
 * The kernel fails it with EINVAL: only the plugin gives it a meaning.
 */

static __thread int trace_depth;

static void trace_window(int open)
{
	int saved = errno;

	syscall(SYS_prctl, SIM_PRCTL_TRACE, (unsigned long)open, 0UL, 0UL, 0UL);
	errno = saved;
}

EXPORT void sim_trace_begin(void)
{
	if (trace_depth++ == 0)
		trace_window(1);
}

EXPORT void sim_trace_end(void)
{
	if (trace_depth <= 0) {
		fprintf(stderr, "mlx5sim shim: sim_trace_end without sim_trace_begin\n");
		abort();
	}
	if (--trace_depth == 0)
		trace_window(0);
}

/* ---------------------------------------------------------------------------
 * open: the device node becomes /dev/full, marked.
 */

static int open_device(int flags)
{
	int fd;

	resolve();
	fd = real_open(SIM_NODE, O_RDWR | (flags & (O_CLOEXEC | O_NONBLOCK)));
	if (fd < 0)
		return fd;
	if (fd >= MAX_FDS) {
		real_close(fd);
		errno = EMFILE;
		return -1;
	}
	marked[fd] = 1;
	return fd;
}

/* The mode argument is only there with O_CREAT or O_TMPFILE. */
static int wants_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define GET_MODE(flags, last, mode)				\
	do {							\
		if (wants_mode(flags)) {			\
			va_list ap;				\
			va_start(ap, last);			\
			mode = va_arg(ap, mode_t);		\
			va_end(ap);				\
		}						\
	} while (0)

EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	GET_MODE(flags, flags, mode);
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real_open(path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	GET_MODE(flags, flags, mode);
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real_open64 ? real_open64(path, flags, mode)
			   : real_open(path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	GET_MODE(flags, flags, mode);
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real_openat(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	GET_MODE(flags, flags, mode);
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real_openat64 ? real_openat64(dirfd, path, flags, mode)
			     : real_openat(dirfd, path, flags, mode);
}

/* The _FORTIFY_SOURCE entry points (no mode: they reject O_CREAT). */
EXPORT int __open_2(const char *path, int flags)
{
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real___open_2 ? real___open_2(path, flags) : real_open(path, flags);
}

EXPORT int __open64_2(const char *path, int flags)
{
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real___open64_2 ? real___open64_2(path, flags)
			       : real_open(path, flags);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real___openat_2 ? real___openat_2(dirfd, path, flags)
			       : real_openat(dirfd, path, flags);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	if (is_dev_path(path))
		return open_device(flags);
	resolve();
	return real___openat64_2 ? real___openat64_2(dirfd, path, flags)
				 : real_openat(dirfd, path, flags);
}

/* ---------------------------------------------------------------------------
 * stat: the device node looks like /dev/full.
 */

static const char *stat_path(const char *path)
{
	return is_dev_path(path) ? SIM_NODE : path;
}

EXPORT int stat(const char *restrict path, struct stat *restrict st)
{
	resolve();
	return real_stat(stat_path(path), st);
}

EXPORT int stat64(const char *restrict path, struct stat64 *restrict st)
{
	resolve();
	if (real_stat64)
		return real_stat64(stat_path(path), st);
	return real_fstatat64(AT_FDCWD, stat_path(path), st, 0);
}

EXPORT int lstat(const char *restrict path, struct stat *restrict st)
{
	resolve();
	return real_lstat(stat_path(path), st);
}

EXPORT int lstat64(const char *restrict path, struct stat64 *restrict st)
{
	resolve();
	if (real_lstat64)
		return real_lstat64(stat_path(path), st);
	return real_fstatat64(AT_FDCWD, stat_path(path), st, AT_SYMLINK_NOFOLLOW);
}

EXPORT int fstatat(int dirfd, const char *restrict path,
		   struct stat *restrict st, int flags)
{
	resolve();
	return real_fstatat(dirfd, stat_path(path), st, flags);
}

EXPORT int fstatat64(int dirfd, const char *restrict path,
		     struct stat64 *restrict st, int flags)
{
	resolve();
	if (real_fstatat64)
		return real_fstatat64(dirfd, stat_path(path), st, flags);
	return real_fstatat(dirfd, stat_path(path), (struct stat *)st, flags);
}

/* ---------------------------------------------------------------------------
 * socket: no RDMA netlink, so libibverbs reads sysfs.
 */

EXPORT int socket(int domain, int type, int protocol)
{
	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	resolve();
	return real_socket(domain, type, protocol);
}

/* ---------------------------------------------------------------------------
 * The device's fds: ioctl, write, mmap, munmap, close.
 */

EXPORT int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);

	resolve();
	if (!is_marked(fd))
		return real_ioctl(fd, request, arg);

	struct sim_req req = {
		.kind = SIM_IOCTL,
		.fd = fd,
		.a0 = request,
		.a1 = (uintptr_t)arg,
	};
	return (int)forward_with_spare(&req);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	resolve();
	if (!is_marked(fd))
		return real_write(fd, buf, count);

	struct sim_req req = {
		.kind = SIM_WRITE,
		.fd = fd,
		.a0 = (uintptr_t)buf,
		.a1 = count,
	};
	return (ssize_t)forward_with_spare(&req);
}

/*
 * Map anonymous shared memory in place of the device's pages and tell the
 * device where it is. A write-only mapping (libmlx5 maps UARs PROT_WRITE)
 * is made readable too, because process_vm_readv needs VM_READ to let the
 * device see what was written; the device is told the prot asked for.
 */
static void *device_mmap(void *addr, size_t len, int prot, int flags, int fd,
			 off64_t offset)
{
	int mprot = prot & PROT_WRITE ? prot | PROT_READ : prot;
	int mflags = MAP_SHARED | MAP_ANONYMOUS |
		     (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE));
	struct sim_req req = { .kind = SIM_MMAP, .fd = fd, .spare_fd = -1 };
	struct sim_rep rep;
	void *p;

	p = real_mmap(addr, len, mprot, mflags, -1, 0);
	if (p == MAP_FAILED)
		return p;

	req.a0 = (uintptr_t)p;
	req.a1 = len;
	req.a2 = (uint64_t)offset;
	req.a3 = (uint64_t)(unsigned int)prot;
	sim_call(&req, NULL, &rep);
	if (rep.err || add_region(p, len, fd)) {
		real_munmap(p, len);
		errno = rep.err ? rep.err : ENOMEM;
		return MAP_FAILED;
	}
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t offset)
{
	resolve();
	if (is_marked(fd))
		return device_mmap(addr, len, prot, flags, fd, offset);
	return real_mmap(addr, len, prot, flags, fd, offset);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		    off64_t offset)
{
	resolve();
	if (is_marked(fd))
		return device_mmap(addr, len, prot, flags, fd, offset);
	if (real_mmap64)
		return real_mmap64(addr, len, prot, flags, fd, offset);
	return real_mmap(addr, len, prot, flags, fd, (off_t)offset);
}

EXPORT int munmap(void *addr, size_t len)
{
	int fd;

	resolve();
	if (take_region(addr, len, &fd)) {
		struct sim_req req = {
			.kind = SIM_MUNMAP,
			.fd = fd,
			.spare_fd = -1,
			.a0 = (uintptr_t)addr,
			.a1 = len,
		};
		struct sim_rep rep;

		sim_call(&req, NULL, &rep);
	}
	return real_munmap(addr, len);
}

EXPORT int close(int fd)
{
	resolve();
	if (is_marked(fd)) {
		struct sim_req req = { .kind = SIM_CLOSE, .fd = fd, .spare_fd = -1 };
		struct sim_rep rep;

		sim_call(&req, NULL, &rep);
		marked[fd] = 0;
	}
	return real_close(fd);
}

/* ---------------------------------------------------------------------------
 * Page size (profile page=N): libibverbs and libmlx5 read the kernel's
 * page size with sysconf(_SC_PAGESIZE) (and getpagesize()); with
 * $MLX5SIM_PAGESIZE set both answer it, as a 16 KiB or 64 KiB arm64
 * kernel would. Mappings still come from the host in its pages, which
 * divide the simulated ones.
 */
static long sim_page_size(void)
{
	const char *s = getenv("MLX5SIM_PAGESIZE");

	return s && *s ? strtol(s, NULL, 0) : 0;
}

EXPORT long sysconf(int name)
{
	static long (*real_sysconf)(int);
	long n;

	if (name == _SC_PAGESIZE && (n = sim_page_size()) > 0)
		return n;
	if (!real_sysconf)
		real_sysconf = next_sym("sysconf");
	return real_sysconf(name);
}

EXPORT int getpagesize(void)
{
	static int (*real_getpagesize)(void);
	long n = sim_page_size();

	if (n > 0)
		return (int)n;
	if (!real_getpagesize)
		real_getpagesize = next_sym("getpagesize");
	return real_getpagesize();
}
/* End of the page size section. */
