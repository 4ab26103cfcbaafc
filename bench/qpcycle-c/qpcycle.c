// qpcycle.c: the verbs of cmtime's create qp and disconnect steps through
// libibverbs and librxe, without the CM or a peer, as qpcycle/main.go does
// them through this module's uverbs (docs/benchmarks.md, "Connection lifecycle").
// N RC QPs on rxe0 (caps 1/1/1/1, one CQ): create and INIT each, then ERR
// and destroy each, timing every call; it prints the medians in us.
//
// KTOUCH=1 has the kernel write to a 4 MiB buffer before each timed call
// (outside the timing; uname(2) into it), as the Go runtime's syscalls
// write to goroutine stacks on the heap; the buffer is on transparent
// huge pages (with THP "always") unless NOHUGE=1 (MADV_NOHUGEPAGE).
//
// SWEEP=N (up to 1024) calls N distinct tiny functions before each timed
// call, outside the timing: N more translated blocks between syscalls, as
// a bigger user-space code path has, to show what that costs the timed
// calls in TCG (docs/benchmarks.md, create qp). SWEEPALIGN=4096 puts
// each function on its own page (default: 16 bytes apart).
//
// QPCYCLE_MARK=FILE replaces FILE (a file in the 9p share) with a line
// naming the loop that ends there ("c start", "c create-init", "c
// err-destroy") and sleeps 100 ms: ../tbcount's plugin dumps its
// counts at each replacement.
//
//	gcc -O2 -o DIR/qpcycle-c qpcycle.c -libverbs
//	/host/qpcycle-c [N [ROUNDS]]       # in guest a
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp);
	return v[n / 2];
}

static char *kbuf;

// anon_huge_kb: the process's memory on transparent huge pages
// (AnonHugePages of /proc/self/smaps_rollup), -1 if unknown.
static long anon_huge_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "AnonHugePages: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

// The SWEEP functions: 1024 distinct ones (their constants differ, so
// the compiler cannot fold them into one), packed and page-aligned.
#define SWF(al, n) __attribute__((noinline, aligned(al))) static int sw##al##_##n(int x) { return x * 3 + 0##n; }
#define SW1(al, p) SWF(al, p##0) SWF(al, p##1) SWF(al, p##2) SWF(al, p##3)
#define SW2(al, p) SW1(al, p##0) SW1(al, p##1) SW1(al, p##2) SW1(al, p##3)
#define SW3(al, p) SW2(al, p##0) SW2(al, p##1) SW2(al, p##2) SW2(al, p##3)
#define SW4(al, p) SW3(al, p##0) SW3(al, p##1) SW3(al, p##2) SW3(al, p##3)
#define SW5(al, p) SW4(al, p##0) SW4(al, p##1) SW4(al, p##2) SW4(al, p##3)
#define SWT(al, n) sw##al##_##n,
#define SWT1(al, p) SWT(al, p##0) SWT(al, p##1) SWT(al, p##2) SWT(al, p##3)
#define SWT2(al, p) SWT1(al, p##0) SWT1(al, p##1) SWT1(al, p##2) SWT1(al, p##3)
#define SWT3(al, p) SWT2(al, p##0) SWT2(al, p##1) SWT2(al, p##2) SWT2(al, p##3)
#define SWT4(al, p) SWT3(al, p##0) SWT3(al, p##1) SWT3(al, p##2) SWT3(al, p##3)
#define SWT5(al, p) SWT4(al, p##0) SWT4(al, p##1) SWT4(al, p##2) SWT4(al, p##3)
SW5(16, 1)
SW5(4096, 1)
static int (*const sweep16[1024])(int) = {SWT5(16, 1)};
static int (*const sweep4096[1024])(int) = {SWT5(4096, 1)};
static int (*const *sweep)(int) = sweep16;
static int sweepn;
static volatile int sweepsink;

// touch: a syscall that writes to kbuf, with KTOUCH; the SWEEP calls.
static void touch(void)
{
	int acc = 0;
	for (int i = 0; i < sweepn; i++)
		acc = sweep[i](acc);
	sweepsink = acc;
	if (kbuf)
		uname((struct utsname *)(kbuf + (1 << 20)));
}

// mark replaces $QPCYCLE_MARK with "c LABEL" (write, then rename: one
// change the host sees) and waits 100 ms for the host to dump.
static void mark(const char *label)
{
	const char *p = getenv("QPCYCLE_MARK");
	if (!p)
		return;
	char tmp[512];
	snprintf(tmp, sizeof tmp, "%s.tmp", p);
	FILE *f = fopen(tmp, "w");
	int bad = !f;
	if (f) {
		bad = fprintf(f, "c %s\n", label) < 0;
		bad |= fclose(f) != 0;
	}
	if (bad || rename(tmp, p) != 0)
		perror("qpcycle: mark"); // the window is lost, the run goes on
	usleep(100000);
}

int main(int argc, char **argv)
{
	if (getenv("SWEEP"))
		sweepn = atoi(getenv("SWEEP"));
	if (sweepn < 0 || sweepn > 1024)
		sweepn = 1024;
	if (getenv("SWEEPALIGN") && atoi(getenv("SWEEPALIGN")) == 4096)
		sweep = sweep4096;
	int n = argc > 1 ? atoi(argv[1]) : 200, rounds = argc > 2 ? atoi(argv[2]) : 1;
	const char *nohuge = getenv("NOHUGE");
	if (getenv("KTOUCH")) {
		kbuf = aligned_alloc(2 << 20, 4 << 20);
		if (nohuge)
			madvise(kbuf, 4 << 20, MADV_NOHUGEPAGE);
		memset(kbuf, 1, 4 << 20);
	}
	int num;
	struct ibv_device **list = ibv_get_device_list(&num);
	struct ibv_context *ctx = NULL;
	for (int i = 0; list && i < num; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "qpcycle: no rxe0\n");
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq) {
		perror("qpcycle: pd or cq");
		return 1;
	}
	struct ibv_qp **q = calloc(n, sizeof *q);
	double *cr = calloc(n, 8), *in = calloc(n, 8), *er = calloc(n, 8), *de = calloc(n, 8);
	for (int r = 0; r < rounds; r++) {
		mark("start");
		double t0 = now_us();
		for (int i = 0; i < n; i++) {
			struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
						     .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
			touch();
			double s = now_us();
			q[i] = ibv_create_qp(pd, &a);
			cr[i] = now_us() - s;
			if (!q[i]) {
				perror("qpcycle: create");
				return 1;
			}
			struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1};
			touch();
			s = now_us();
			if (ibv_modify_qp(q[i], &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
				perror("qpcycle: init");
				return 1;
			}
			in[i] = now_us() - s;
		}
		double t1 = now_us();
		mark("create-init");
		t1 = now_us();
		for (int i = 0; i < n; i++) {
			struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
			touch();
			double s = now_us();
			if (ibv_modify_qp(q[i], &at, IBV_QP_STATE)) {
				perror("qpcycle: err");
				return 1;
			}
			er[i] = now_us() - s;
			touch();
			s = now_us();
			if (ibv_destroy_qp(q[i])) {
				perror("qpcycle: destroy");
				return 1;
			}
			de[i] = now_us() - s;
		}
		double t2 = now_us();
		mark("err-destroy");
		printf("c%s create %.1f init %.1f err %.1f destroy %.1f us (medians); loops %.1f %.1f ms; AnonHugePages %ld kB\n",
		       kbuf ? (nohuge ? "-ktouch-small" : "-ktouch-huge") : "", median(cr, n), median(in, n), median(er, n),
		       median(de, n), (t1 - t0) / 1e3, (t2 - t1) / 1e3, anon_huge_kb());
	}
	return 0;
}
