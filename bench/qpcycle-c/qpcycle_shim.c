// qpcycle_shim.c: an LD_PRELOAD for qpcycle.c (or any libibverbs program)
// that times each uverbs ioctl and each mmap of an fd, and prints the
// medians at exit: the C side's per-syscall times, to set beside the Go
// side's (timed around the same calls in ../qpcycle by hand). Ioctls are
// keyed by object*8+method (QP create is 0, QP destroy 1), INVOKE_WRITE by
// 32+command (MODIFY_QP is 58); the first and second mmap after each QP
// create are also kept apart. It prints the first QP create's attributes.
//
//	gcc -O2 -shared -fPIC -o DIR/qpcycle_shim.so bench/qpcycle-c/qpcycle_shim.c -ldl
//	LD_PRELOAD=/host/qpcycle_shim.so /host/qpcycle-c 200 2     # in guest a
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define MAXN 20000
#define RDMA_VERBS_IOCTL 0xC0181B01UL

struct ioctl_hdr {
	uint16_t length, object_id, method_id, num_attrs;
	uint64_t reserved1;
	uint32_t driver_id, reserved2;
};

static double t_ioctl[64][MAXN];
static int n_ioctl[64];
static double t_mmap[2][MAXN];
static int n_mmap[2];
static int since_create = 2; // mmaps since the last QP create

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void dump_create(const struct ioctl_hdr *h)
{
	const uint16_t *a = (const uint16_t *)(h + 1);
	fprintf(stderr, "shim QP_CREATE len %u attrs %u driver %u:", h->length, h->num_attrs, h->driver_id);
	for (int i = 0; i < h->num_attrs; i++)
		fprintf(stderr, " [id %u len %u flags %u]", a[i * 8], a[i * 8 + 1], a[i * 8 + 2]);
	fprintf(stderr, "\n");
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, void *);
	static int dumped;
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		real = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
	const struct ioctl_hdr *h = arg;
	int key = -1;
	if (req == RDMA_VERBS_IOCTL) {
		key = (h->object_id * 8 + h->method_id) & 31;
		if (h->object_id == 0 && h->method_id == 0) // INVOKE_WRITE: the command
			key = 32 + (int)(((const uint64_t *)(h + 1))[1] & 31);
		if (key == 0 && !dumped) {
			dumped = 1;
			dump_create(h);
		}
	}
	double t = now_us();
	int r = real(fd, req, arg);
	t = now_us() - t;
	if (key >= 0 && n_ioctl[key] < MAXN)
		t_ioctl[key][n_ioctl[key]++] = t;
	if (key == 0)
		since_create = 0;
	return r;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	double t = now_us();
	void *r = real(addr, len, prot, flags, fd, off);
	t = now_us() - t;
	if (fd >= 0 && since_create < 2) {
		if (n_mmap[since_create] < MAXN)
			t_mmap[since_create][n_mmap[since_create]++] = t;
		since_create++;
	}
	return r;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

__attribute__((destructor)) static void report(void)
{
	for (int k = 0; k < 64; k++)
		if (n_ioctl[k] > 10) {
			qsort(t_ioctl[k], n_ioctl[k], sizeof(double), cmp);
			fprintf(stderr, "shim ioctl key=%d n=%d median %.1f us\n", k, n_ioctl[k], t_ioctl[k][n_ioctl[k] / 2]);
		}
	for (int k = 0; k < 2; k++)
		if (n_mmap[k]) {
			qsort(t_mmap[k], n_mmap[k], sizeof(double), cmp);
			fprintf(stderr, "shim mmap#%d after create n=%d median %.1f us\n", k, n_mmap[k], t_mmap[k][n_mmap[k] / 2]);
		}
}
