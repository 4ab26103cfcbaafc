/*
 * scenario.c: the C interpreter of mlx5sim scenarios (../README.md, section
 * 4), the twin of the Go interpreter. It drives libibverbs (and through it
 * NVIDIA's libmlx5) against the simulated device; the shim (shim.c,
 * LD_PRELOAD) forwards the system calls and provides sim_snapshot, sim_exec
 * and sim_record, and sim_trace_begin/sim_trace_end, which every data-path
 * verb (ibv_post_send, ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq,
 * ibv_req_notify_cq, and
 * only those) runs between, so that the device sees where libmlx5's
 * fences sit (x86-64; README section 4).
 *
 *   usage: scenario [-v] FILE.scn
 *
 * Exit status: 0 when every line ran (verbs may have failed: those failures
 * are in the trace as "err" records), 1 when "open" failed (nothing is
 * recorded for it), 2 on a malformed scenario or a missing shim. -v echoes
 * every label and record on stdout.
 *
 * Conventions both interpreters share, beyond the README:
 *   - A line's text is the line with its comment ('#' to the end) removed
 *     and its words joined by single spaces; blank lines are skipped. A
 *     label is "L<n>: <text>", n the 1-based line number in the file; a
 *     "cqe" line goes to the device as its text.
 *   - mr, qp and ah use the most recently allocated PD (none once that PD
 *     is destroyed).
 *   - The k-th "mr" line (from 0, failed ones included) maps its buffer at
 *     MR_BASE + k*MR_STRIDE, as the Go interpreter does, so that WQE
 *     addresses compare byte for byte.
 *   - "ah" sets GRH flow_label 0x12345: without one libmlx5 draws a random
 *     UDP source port for a RoCE v2 AV (mlx5_ah_set_udp_sport).
 *   - Missing numeric arguments (qp caps, send imm/raddr/rkey/rqpn/qkey,
 *     set_ece options) are 0.
 *   - The ibv_wc array is zeroed before ibv_poll_cq, so fields a provider
 *     leaves alone print as 0.
 *   - A failing verb's errno: a positive return value is the errno; a
 *     negative one means errno, or -ret if errno is 0 (ibv_poll_cq); a NULL
 *     pointer means errno.
 *   - "dump MR OFF LEN" prints OFF in decimal.
 *   - A "cqe" line the device refuses (sim_exec returns nonzero) is a
 *     malformed scenario.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "mlx5sim.h"

#define DEVICE_NAME "mlx5_0"
#define MAX_TOKENS 64
#define MAX_OBJS 256
#define MAX_SGE 32
#define MAX_COUNT 1024 /* WRs in one send/recv line */
#define MAX_POLL 4096  /* completions in one poll line */
#define MR_BASE 0x600000000000ull
#define MR_STRIDE 0x1000000ull
#define AH_FLOW_LABEL 0x12345
#define PCI_VENDOR_MELLANOX 0x15b3

/* ---------------------------------------------------------------------------
 * The shim's functions, found at run time.
 */

static void (*snapshot_fn)(const char *);
static int (*exec_fn)(const char *);
static void (*record_fn)(const char *);
static void (*trace_begin_fn)(void);
static void (*trace_end_fn)(void);
static bool verbose;

static void find_shim(void)
{
	snapshot_fn = (void (*)(const char *))dlsym(RTLD_DEFAULT, "sim_snapshot");
	exec_fn = (int (*)(const char *))dlsym(RTLD_DEFAULT, "sim_exec");
	record_fn = (void (*)(const char *))dlsym(RTLD_DEFAULT, "sim_record");
	trace_begin_fn = (void (*)(void))dlsym(RTLD_DEFAULT, "sim_trace_begin");
	trace_end_fn = (void (*)(void))dlsym(RTLD_DEFAULT, "sim_trace_end");
	if (!snapshot_fn || !exec_fn || !record_fn || !trace_begin_fn || !trace_end_fn) {
		fprintf(stderr, "scenario: sim_snapshot/sim_exec/sim_record/sim_trace_begin/"
				"sim_trace_end not found: run with LD_PRELOAD=libmlx5sim_shim.so\n");
		exit(2);
	}
}

/* ---------------------------------------------------------------------------
 * Interpreter state.
 */

static const char *scn_file;
static int lineno;           /* the line being run, 1-based */
static struct ibv_context *ctx;

enum obj_kind { OBJ_PD, OBJ_MR, OBJ_CHANNEL, OBJ_CQ, OBJ_QP, OBJ_AH, OBJ_SRQ };

struct obj {
	char name[64];
	enum obj_kind kind;
	union {
		struct ibv_pd *pd;
		struct {
			struct ibv_mr *mr;
			uint8_t *buf; /* NULL for a dma-buf MR */
			size_t len;
			uint64_t base; /* what SGEs address: buf, or the IOVA */
		} mr;
		struct ibv_comp_channel *channel;
		struct ibv_cq *cq;
		struct ibv_qp *qp;
		struct ibv_ah *ah;
		struct ibv_srq *srq;
	} u;
};

static struct obj objs[MAX_OBJS];
static int nobjs;
static struct ibv_pd *cur_pd; /* the most recently allocated PD, or NULL */
static unsigned int nmr;      /* "mr" lines so far: the next buffer's slot */

/* A malformed scenario: stop with status 2. */
__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "scenario: %s:%d: ", scn_file, lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* Put a line in the trace. */
__attribute__((format(printf, 1, 2)))
static void record(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (verbose)
		printf("  %s\n", buf);
	record_fn(buf);
}

static void record_err(int err)
{
	record("err L%d: errno=%d", lineno, err);
}

/* The errno of a failed int-returning verb (see the conventions above). */
static int verb_errno(int ret)
{
	if (ret > 0)
		return ret;
	return errno ? errno : -ret;
}

static struct obj *find_obj(const char *name)
{
	for (int i = 0; i < nobjs; i++)
		if (!strcmp(objs[i].name, name))
			return &objs[i];
	return NULL;
}

static struct obj *need_obj(const char *name, enum obj_kind kind)
{
	static const char *const kinds[] = { "pd", "mr", "channel", "cq", "qp", "ah", "srq" };
	struct obj *o = find_obj(name);

	if (!o)
		die("no object named %s", name);
	if (o->kind != kind)
		die("%s is not a %s", name, kinds[kind]);
	return o;
}

/* A slot for a new object; the caller fills it in on success and calls
 * add_obj. */
static struct obj *new_obj(const char *name, enum obj_kind kind)
{
	struct obj *o;

	if (find_obj(name))
		die("object %s already exists", name);
	if (strlen(name) >= sizeof(objs[0].name))
		die("name too long: %s", name);
	if (nobjs == MAX_OBJS)
		die("too many objects");
	o = &objs[nobjs];
	memset(o, 0, sizeof(*o));
	strcpy(o->name, name);
	o->kind = kind;
	return o;
}

static void add_obj(struct obj *o)
{
	if (o != &objs[nobjs])
		abort(); /* new_obj and add_obj come in pairs */
	nobjs++;
}

static void remove_obj(struct obj *o)
{
	*o = objs[--nobjs];
}

/* The PD that mr, qp and ah use. */
static struct ibv_pd *current_pd(void)
{
	if (!cur_pd)
		die("no protection domain (a \"pd\" line must come first)");
	return cur_pd;
}

static void need_ctx(void)
{
	if (!ctx)
		die("the device is not open");
}

/* ---------------------------------------------------------------------------
 * Arguments: positional words, key=value pairs and bare flags.
 */

struct args {
	char *cmd;
	char *pos[MAX_TOKENS];
	int npos;
	char *key[MAX_TOKENS];
	char *val[MAX_TOKENS]; /* NULL for a bare flag */
	bool used[MAX_TOKENS];
	int nkv;
};

/* Split a line (modified in place) into words: words containing '=' are
 * key=value pairs, the others positional (see positionals() for flags). */
static void split(char *line, struct args *a)
{
	char *save = NULL;
	char *w;

	memset(a, 0, sizeof(*a));
	a->cmd = strtok_r(line, " \t", &save);
	while ((w = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(w, '=');

		if (a->npos + a->nkv >= MAX_TOKENS)
			die("too many words");
		if (eq) {
			*eq = 0;
			a->key[a->nkv] = w;
			a->val[a->nkv++] = eq + 1;
		} else {
			a->pos[a->npos++] = w;
		}
	}
}

/* A command takes min..max positional words; words beyond max are bare
 * flags (inline, signaled, solicited, ...). */
static void positionals(struct args *a, int min, int max)
{
	if (a->npos < min)
		die("%s: expected at least %d arguments", a->cmd, min);
	/* Positionals beyond max are bare flags. */
	for (int i = max; i < a->npos; i++) {
		if (a->nkv >= MAX_TOKENS)
			die("too many words");
		a->key[a->nkv] = a->pos[i];
		a->val[a->nkv++] = NULL;
	}
	if (a->npos > max)
		a->npos = max;
}

static uint64_t parse_u64(const char *what, const char *s)
{
	char *end;
	uint64_t v;

	if (!s || !*s || *s == '-')
		die("%s: bad number '%s'", what, s ? s : "");
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		die("%s: bad number '%s'", what, s);
	return v;
}

static uint32_t parse_u32(const char *what, const char *s)
{
	uint64_t v = parse_u64(what, s);

	if (v > UINT32_MAX)
		die("%s: %s does not fit in 32 bits", what, s);
	return (uint32_t)v;
}

/* The value of key=value, or NULL when absent. */
static const char *opt(struct args *a, const char *key)
{
	for (int i = 0; i < a->nkv; i++)
		if (a->val[i] && !strcmp(a->key[i], key)) {
			a->used[i] = true;
			return a->val[i];
		}
	return NULL;
}

static const char *need_opt(struct args *a, const char *key)
{
	const char *v = opt(a, key);

	if (!v)
		die("%s: missing %s=", a->cmd, key);
	return v;
}

/* key=value as a 32-bit number, 0 when absent. */
static uint32_t opt_u32(struct args *a, const char *key)
{
	const char *v = opt(a, key);

	return v ? parse_u32(key, v) : 0;
}

static bool flag(struct args *a, const char *name)
{
	for (int i = 0; i < a->nkv; i++)
		if (!a->val[i] && !strcmp(a->key[i], name)) {
			a->used[i] = true;
			return true;
		}
	return false;
}

/* Every word must have been consumed. */
static void done(struct args *a)
{
	for (int i = 0; i < a->nkv; i++)
		if (!a->used[i])
			die("%s: unexpected %s%s%s", a->cmd, a->key[i],
			    a->val[i] ? "=" : "", a->val[i] ? a->val[i] : "");
}

/* ---------------------------------------------------------------------------
 * Commands.
 */

static void cmd_open(struct args *a)
{
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	int n = 0;

	positionals(a, 0, 0);
	done(a);
	if (ctx)
		die("the device is already open");

	/* A failure ends the run (in run_line); nothing is recorded. */
	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "scenario: ibv_get_device_list: %s\n", strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), DEVICE_NAME))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "scenario: no device %s among %d\n", DEVICE_NAME, n);
		ibv_free_device_list(list);
		return;
	}
	errno = 0;
	ctx = ibv_open_device(dev);
	if (!ctx)
		fprintf(stderr, "scenario: ibv_open_device: %s\n", strerror(errno));
	ibv_free_device_list(list);
}

static void cmd_pd(struct args *a)
{
	struct obj *o;

	positionals(a, 1, 1);
	done(a);
	need_ctx();
	o = new_obj(a->pos[0], OBJ_PD);
	errno = 0;
	o->u.pd = ibv_alloc_pd(ctx);
	if (!o->u.pd) {
		record_err(errno);
		return;
	}
	add_obj(o);
	cur_pd = o->u.pd;
}

/* The access of an MR line: access=, else local write, remote write and
 * remote read. */
static int mr_access(struct args *a)
{
	const char *s = opt(a, "access");

	return s ? (int)parse_u32("access", s) :
		   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
}

/* Map len bytes at the next MR slot, filled with a pattern of mul and
 * add; NULL (errno set) when the map fails. */
static void *map_slot(size_t len, unsigned int mul, unsigned int add)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *addr = (void *)(uintptr_t)(MR_BASE + nmr++ * MR_STRIDE);
	size_t maplen = (len + page - 1) / page * page;
	void *buf = mmap(addr, maplen, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (buf == MAP_FAILED)
		return NULL;
	if (buf != addr) /* a kernel without MAP_FIXED_NOREPLACE */
		die("cannot map a buffer at %p", addr);
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)((i * mul + add) & 0xff);
	return buf;
}

static void cmd_mr(struct args *a)
{
	const char *iova_s;
	uint64_t iova = 0;
	struct ibv_pd *pd;
	struct obj *o;
	size_t len;
	void *buf;
	int access;

	positionals(a, 2, 2);
	access = mr_access(a);
	iova_s = opt(a, "iova");
	if (iova_s)
		iova = parse_u64("iova", iova_s);
	done(a);
	need_ctx();
	o = new_obj(a->pos[0], OBJ_MR);
	len = parse_u64("mr LEN", a->pos[1]);
	if (len == 0 || len > MR_STRIDE)
		die("mr: length %zu out of range", len);
	pd = current_pd();

	/* The k-th buffer at MR_BASE + k*MR_STRIDE, as in the Go runner. */
	buf = map_slot(len, 7, 3);
	if (!buf) {
		record_err(errno);
		return;
	}

	errno = 0;
	if (iova_s)
		o->u.mr.mr = ibv_reg_mr_iova2(pd, buf, len, iova, access);
	else
		o->u.mr.mr = ibv_reg_mr(pd, buf, len, access);
	if (!o->u.mr.mr) {
		record_err(errno);
		munmap(buf, len);
		return;
	}
	o->u.mr.buf = buf;
	o->u.mr.len = len;
	o->u.mr.base = iova_s ? iova : (uintptr_t)buf;
	add_obj(o);
}

/* dmabuf_mr NAME LEN [offset=] [iova=] [access=]: a memfd stands for the
 * dma-buf (the device has no memory behind an MR); it is closed once
 * registered, as the kernel holds its own reference. */
static void cmd_dmabuf_mr(struct args *a)
{
	const char *s;
	uint64_t offset, iova, len;
	struct ibv_pd *pd;
	struct obj *o;
	int access, fd;

	positionals(a, 2, 2);
	access = mr_access(a);
	s = opt(a, "offset");
	offset = s ? parse_u64("offset", s) : 0;
	s = opt(a, "iova");
	iova = s ? parse_u64("iova", s) : 0;
	done(a);
	need_ctx();
	o = new_obj(a->pos[0], OBJ_MR);
	len = parse_u64("dmabuf_mr LEN", a->pos[1]);
	if (len == 0)
		die("dmabuf_mr: length 0");
	pd = current_pd();
	fd = memfd_create("mlx5sim-dmabuf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)(offset + len)))
		die("memfd: %s", strerror(errno));
	errno = 0;
	o->u.mr.mr = ibv_reg_dmabuf_mr(pd, offset, len, iova, fd, access);
	close(fd);
	if (!o->u.mr.mr) {
		record_err(errno);
		return;
	}
	o->u.mr.base = iova;
	add_obj(o);
}

/* rereg NAME flags=F [len=N] [pd=PD] [access=A]: ibv_rereg_mr; with
 * IBV_REREG_MR_CHANGE_TRANSLATION onto N new bytes at the next MR slot
 * (none without len=, which libibverbs refuses). */
static void cmd_rereg(struct args *a)
{
	struct ibv_pd *pd = NULL;
	struct obj *o;
	const char *s;
	uint32_t flags, access;
	size_t len;
	void *buf = NULL;
	int ret;

	positionals(a, 1, 1);
	flags = parse_u32("flags", need_opt(a, "flags"));
	access = opt_u32(a, "access");
	len = opt_u32(a, "len");
	s = opt(a, "pd");
	if (s)
		pd = need_obj(s, OBJ_PD)->u.pd;
	done(a);
	need_ctx();
	o = need_obj(a->pos[0], OBJ_MR);
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && len) { /* len 0: no memory */
		if (len > MR_STRIDE)
			die("rereg: len %zu out of range", len);
		buf = map_slot(len, 5, 1);
		if (!buf) {
			record_err(errno);
			return;
		}
	}
	errno = 0;
	ret = ibv_rereg_mr(o->u.mr.mr, (int)flags, pd, buf, buf ? len : 0, (int)access);
	if (ret) {
		record_err(errno);
		if (buf)
			munmap(buf, len);
		return;
	}
	if (buf) {
		munmap(o->u.mr.buf, o->u.mr.len);
		o->u.mr.buf = buf;
		o->u.mr.len = len;
		o->u.mr.base = (uintptr_t)buf;
	}
}

static void cmd_channel(struct args *a)
{
	struct obj *o;

	positionals(a, 1, 1);
	done(a);
	need_ctx();
	o = new_obj(a->pos[0], OBJ_CHANNEL);
	errno = 0;
	o->u.channel = ibv_create_comp_channel(ctx);
	if (!o->u.channel)
		record_err(errno);
	else
		add_obj(o);
}

static void cmd_cq(struct args *a)
{
	struct ibv_comp_channel *ch = NULL;
	const char *chname;
	struct obj *o;
	int cqe;

	positionals(a, 2, 2);
	chname = opt(a, "channel");
	done(a);
	need_ctx();
	o = new_obj(a->pos[0], OBJ_CQ);
	cqe = (int)parse_u32("cq CQE", a->pos[1]);
	if (cqe < 0)
		die("cq: CQE out of range");
	if (chname)
		ch = need_obj(chname, OBJ_CHANNEL)->u.channel;

	errno = 0;
	o->u.cq = ibv_create_cq(ctx, cqe, NULL, ch, 0);
	if (!o->u.cq)
		record_err(errno);
	else
		add_obj(o);
}

static enum ibv_qp_type parse_qp_type(const char *s)
{
	if (!strcmp(s, "rc"))
		return IBV_QPT_RC;
	if (!strcmp(s, "uc"))
		return IBV_QPT_UC;
	if (!strcmp(s, "ud"))
		return IBV_QPT_UD;
	die("qp: unknown type %s", s);
}

static void cmd_qp(struct args *a)
{
	struct ibv_qp_init_attr attr;
	const char *srq_name;
	struct obj *o;

	positionals(a, 4, 4);
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = opt_u32(a, "sq");
	attr.cap.max_recv_wr = opt_u32(a, "rq");
	attr.cap.max_send_sge = opt_u32(a, "ssge");
	attr.cap.max_recv_sge = opt_u32(a, "rsge");
	attr.cap.max_inline_data = opt_u32(a, "inline");
	attr.sq_sig_all = opt_u32(a, "sigall") != 0;
	srq_name = opt(a, "srq");
	done(a);
	need_ctx();
	if (srq_name)
		attr.srq = need_obj(srq_name, OBJ_SRQ)->u.srq;
	o = new_obj(a->pos[0], OBJ_QP);
	attr.qp_type = parse_qp_type(a->pos[1]);
	attr.send_cq = need_obj(a->pos[2], OBJ_CQ)->u.cq;
	attr.recv_cq = need_obj(a->pos[3], OBJ_CQ)->u.cq;

	errno = 0;
	o->u.qp = ibv_create_qp(current_pd(), &attr);
	if (!o->u.qp)
		record_err(errno);
	else
		add_obj(o);
}

/* The fixed address vector: port 1, GRH to ::ffff:192.0.2.2, sgid_index 0,
 * hop_limit 64, everything else 0. */
static void fixed_ah_attr(struct ibv_ah_attr *ah)
{
	static const uint8_t dgid[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
					  0, 0, 0xff, 0xff, 192, 0, 2, 2 };

	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, dgid, sizeof(dgid));
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = 64;
	ah->port_num = 1;
}

static void cmd_modify(struct args *a)
{
	struct ibv_qp_attr attr;
	enum ibv_qp_type type;
	struct ibv_qp *qp;
	const char *to;
	int mask;
	int ret;
	const char *acc;

	positionals(a, 2, 2);
	acc = opt(a, "access"); /* init: qp_access_flags instead of the fixed ones */
	done(a);
	need_ctx();
	qp = need_obj(a->pos[0], OBJ_QP)->u.qp;
	type = qp->qp_type;
	to = a->pos[1];
	memset(&attr, 0, sizeof(attr));

	if (!strcmp(to, "init")) {
		attr.qp_state = IBV_QPS_INIT;
		attr.pkey_index = 0;
		attr.port_num = 1;
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (type == IBV_QPT_UD) {
			attr.qkey = 0x11111111;
			mask |= IBV_QP_QKEY;
		} else {
			attr.qp_access_flags = type == IBV_QPT_RC ?
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ :
				IBV_ACCESS_REMOTE_WRITE;
			if (acc)
				attr.qp_access_flags = parse_u32("access", acc);
			mask |= IBV_QP_ACCESS_FLAGS;
		}
	} else if (!strcmp(to, "rtr")) {
		attr.qp_state = IBV_QPS_RTR;
		mask = IBV_QP_STATE;
		if (type != IBV_QPT_UD) {
			fixed_ah_attr(&attr.ah_attr);
			attr.path_mtu = IBV_MTU_1024;
			attr.dest_qp_num = 0x000123;
			attr.rq_psn = 0;
			mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN;
		}
		if (type == IBV_QPT_RC) {
			attr.max_dest_rd_atomic = 1;
			attr.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	} else if (!strcmp(to, "rts")) {
		attr.qp_state = IBV_QPS_RTS;
		attr.sq_psn = 0;
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (type == IBV_QPT_RC) {
			attr.timeout = 14;
			attr.retry_cnt = 7;
			attr.rnr_retry = 7;
			attr.max_rd_atomic = 1;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
	} else {
		die("modify: unknown state %s", to);
	}

	errno = 0;
	ret = ibv_modify_qp(qp, &attr, mask);
	if (ret)
		record_err(verb_errno(ret));
}

/* ---------------------------------------------------------------------------
 * Send side (begin): QP states, address-vector options, inline data.
 *
 *   state QP reset|rts|sqd|err   ibv_modify_qp with IBV_QP_STATE alone
 *   ah NAME [sl=N] [tclass=N] [hop=N] [flow=X] [sgid=N] [rate=N] [global=0|1]
 *   send ... inline inline_data=1   Go posts a copy of the SGEs' bytes as
 *                                   SendWR.InlineData; here the SGEs
 */

static void cmd_state(struct args *a)
{
	static const struct {
		const char *word;
		enum ibv_qp_state state;
	} states[] = {
		{ "reset", IBV_QPS_RESET },
		{ "rts", IBV_QPS_RTS },
		{ "sqd", IBV_QPS_SQD },
		{ "err", IBV_QPS_ERR },
	};
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;
	size_t i;
	int ret;

	positionals(a, 2, 2);
	done(a);
	need_ctx();
	qp = need_obj(a->pos[0], OBJ_QP)->u.qp;
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(states[i].word, a->pos[1]))
			break;
	if (i == sizeof(states) / sizeof(states[0]))
		die("state: unknown state %s", a->pos[1]);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = states[i].state;
	errno = 0;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (ret)
		record_err(verb_errno(ret));
}

/* The ah line's overrides of the fixed address vector. */
static void ah_options(struct args *a, struct ibv_ah_attr *attr)
{
	static const char *const keys[] = { "sl", "tclass", "hop", "sgid", "rate", "global" };
	const char *s;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		uint32_t v;

		if (!(s = opt(a, keys[i])))
			continue;
		v = parse_u32(keys[i], s);
		if (v > 0xff)
			die("ah: %s=%u out of range", keys[i], v);
		switch (i) {
		case 0: attr->sl = (uint8_t)v; break;
		case 1: attr->grh.traffic_class = (uint8_t)v; break;
		case 2: attr->grh.hop_limit = (uint8_t)v; break;
		case 3: attr->grh.sgid_index = (uint8_t)v; break;
		case 4: attr->static_rate = (uint8_t)v; break;
		case 5: attr->is_global = (uint8_t)v != 0; break;
		}
	}
	if ((s = opt(a, "flow")))
		attr->grh.flow_label = parse_u32("flow", s);
}

/* Send side (end). */

static void cmd_ah(struct args *a)
{
	struct ibv_ah_attr attr;
	struct obj *o;

	positionals(a, 1, 1);
	fixed_ah_attr(&attr);
	attr.grh.flow_label = AH_FLOW_LABEL;
	ah_options(a, &attr);
	done(a);
	need_ctx();
	o = new_obj(a->pos[0], OBJ_AH);
	errno = 0;
	o->u.ah = ibv_create_ah(current_pd(), &attr);
	if (!o->u.ah)
		record_err(errno);
	else
		add_obj(o);
}

/* sge=ADDR:LEN:MR,... with ADDR an offset into MR's buffer. */
static int parse_sges(const char *spec, struct ibv_sge *sge)
{
	char buf[1024];
	char *save = NULL;
	char *item;
	int n = 0;

	if (strlen(spec) >= sizeof(buf))
		die("sge list too long");
	strcpy(buf, spec);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *c1 = strchr(item, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		struct obj *mr;
		uint64_t off;
		uint32_t len;

		if (!c2)
			die("bad sge %s (want ADDR:LEN:MR)", item);
		*c1 = *c2 = 0;
		off = parse_u64("sge ADDR", item);
		len = parse_u32("sge LEN", c1 + 1);
		mr = need_obj(c2 + 1, OBJ_MR);
		/* Not checked against the MR's size: a scenario may post an SGE
		 * outside its MR on purpose (the device moves no data). */
		if (len > 1u << 31)
			die("sge length %u out of range", len);
		if (n == MAX_SGE)
			die("too many sges");
		sge[n].addr = mr->u.mr.base + off;
		sge[n].length = len;
		sge[n].lkey = mr->u.mr.mr->lkey;
		n++;
	}
	if (n == 0)
		die("empty sge list");
	return n;
}

static uint32_t parse_count(struct args *a)
{
	const char *s = opt(a, "count");
	uint32_t k = s ? parse_u32("count", s) : 1;

	if (k < 1 || k > MAX_COUNT)
		die("count %u out of range", k);
	return k;
}

static enum ibv_wr_opcode parse_send_op(const char *s)
{
	if (!strcmp(s, "send"))
		return IBV_WR_SEND;
	if (!strcmp(s, "send_imm"))
		return IBV_WR_SEND_WITH_IMM;
	if (!strcmp(s, "write"))
		return IBV_WR_RDMA_WRITE;
	if (!strcmp(s, "write_imm"))
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	if (!strcmp(s, "read"))
		return IBV_WR_RDMA_READ;
	if (!strcmp(s, "cmp_swap"))
		return IBV_WR_ATOMIC_CMP_AND_SWP;
	if (!strcmp(s, "fetch_add"))
		return IBV_WR_ATOMIC_FETCH_AND_ADD;
	die("send: unknown op %s", s);
}

static void cmd_send(struct args *a)
{
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr *wrs, *bad = NULL;
	struct ibv_send_wr tmpl;
	const char *s;
	struct ibv_qp *qp;
	uint64_t id;
	uint32_t k;
	int nsge = 0;
	int ret;

	positionals(a, 1, 1);
	memset(&tmpl, 0, sizeof(tmpl));
	id = parse_u64("send id", need_opt(a, "id"));
	tmpl.opcode = parse_send_op(need_opt(a, "op"));
	tmpl.imm_data = htobe32(opt_u32(a, "imm"));
	if ((s = opt(a, "sge")))
		nsge = parse_sges(s, sge);
	if (flag(a, "inline"))
		tmpl.send_flags |= IBV_SEND_INLINE;
	if (flag(a, "signaled"))
		tmpl.send_flags |= IBV_SEND_SIGNALED;
	if (flag(a, "solicited"))
		tmpl.send_flags |= IBV_SEND_SOLICITED;
	if (flag(a, "fence"))
		tmpl.send_flags |= IBV_SEND_FENCE;
	/* wr.rdma and wr.ud share storage: one or the other. */
	if ((s = opt(a, "ah"))) {
		if (opt(a, "raddr") || opt(a, "rkey"))
			die("send: ah= with raddr=/rkey=");
		tmpl.wr.ud.ah = need_obj(s, OBJ_AH)->u.ah;
		tmpl.wr.ud.remote_qpn = opt_u32(a, "rqpn");
		tmpl.wr.ud.remote_qkey = opt_u32(a, "qkey");
	} else if (tmpl.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   tmpl.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		/* wr.atomic: its rkey sits after compare_add and swap. */
		if ((s = opt(a, "raddr")))
			tmpl.wr.atomic.remote_addr = parse_u64("send raddr", s);
		tmpl.wr.atomic.rkey = opt_u32(a, "rkey");
		if ((s = opt(a, "compare_add")))
			tmpl.wr.atomic.compare_add = parse_u64("send compare_add", s);
		if ((s = opt(a, "swap")))
			tmpl.wr.atomic.swap = parse_u64("send swap", s);
		opt_u32(a, "rqpn");
		opt_u32(a, "qkey");
	} else {
		if ((s = opt(a, "raddr")))
			tmpl.wr.rdma.remote_addr = parse_u64("send raddr", s);
		tmpl.wr.rdma.rkey = opt_u32(a, "rkey");
		opt_u32(a, "rqpn"); /* meaningless without ah=, as in Go */
		opt_u32(a, "qkey");
	}
	k = parse_count(a);
	opt(a, "inline_data"); /* the Go side's InlineData: the same bytes */
	done(a);
	need_ctx();
	qp = need_obj(a->pos[0], OBJ_QP)->u.qp;

	/* K linked WRs, ids id..id+K-1, each with its own copy of the SGEs. */
	wrs = calloc(k, sizeof(*wrs));
	struct ibv_sge *sges = calloc((size_t)k * (nsge ? nsge : 1), sizeof(*sges));
	if (!wrs || !sges)
		die("out of memory");
	for (uint32_t i = 0; i < k; i++) {
		wrs[i] = tmpl;
		wrs[i].wr_id = id + i;
		wrs[i].next = i + 1 < k ? &wrs[i + 1] : NULL;
		if (nsge) {
			memcpy(&sges[(size_t)i * nsge], sge, nsge * sizeof(*sge));
			wrs[i].sg_list = &sges[(size_t)i * nsge];
			wrs[i].num_sge = nsge;
		}
	}
	errno = 0;
	trace_begin_fn();
	ret = ibv_post_send(qp, wrs, &bad);
	trace_end_fn();
	if (ret)
		record_err(verb_errno(ret));
	free(sges);
	free(wrs);
}

/* recv QP / srq_recv SRQ id=N sge=... [count=K]: count receives with
 * consecutive ids, posted in one call. */
static void post_recvs(struct args *a, int to_srq)
{
	struct ibv_sge sge[MAX_SGE];
	struct ibv_recv_wr *wrs, *bad = NULL;
	uint64_t id;
	uint32_t k;
	int nsge;
	int ret;

	positionals(a, 1, 1);
	id = parse_u64(to_srq ? "srq_recv id" : "recv id", need_opt(a, "id"));
	nsge = parse_sges(need_opt(a, "sge"), sge);
	k = parse_count(a);
	done(a);
	need_ctx();
	struct obj *o = need_obj(a->pos[0], to_srq ? OBJ_SRQ : OBJ_QP);

	wrs = calloc(k, sizeof(*wrs));
	struct ibv_sge *sges = calloc((size_t)k * nsge, sizeof(*sges));
	if (!wrs || !sges)
		die("out of memory");
	for (uint32_t i = 0; i < k; i++) {
		memcpy(&sges[(size_t)i * nsge], sge, nsge * sizeof(*sge));
		wrs[i].wr_id = id + i;
		wrs[i].next = i + 1 < k ? &wrs[i + 1] : NULL;
		wrs[i].sg_list = &sges[(size_t)i * nsge];
		wrs[i].num_sge = nsge;
	}
	errno = 0;
	trace_begin_fn();
	ret = to_srq ? ibv_post_srq_recv(o->u.srq, wrs, &bad) : ibv_post_recv(o->u.qp, wrs, &bad);
	trace_end_fn();
	if (ret)
		record_err(verb_errno(ret));
	free(sges);
	free(wrs);
}

static void cmd_recv(struct args *a)
{
	post_recvs(a, 0);
}

static void cmd_poll(struct args *a)
{
	struct ibv_wc *wc;
	struct ibv_cq *cq;
	uint32_t n;
	int got;

	positionals(a, 2, 2);
	done(a);
	need_ctx();
	cq = need_obj(a->pos[0], OBJ_CQ)->u.cq;
	n = parse_u32("poll N", a->pos[1]);
	if (n < 1 || n > MAX_POLL)
		die("poll: N %u out of range", n);

	wc = calloc(n, sizeof(*wc));
	if (!wc)
		die("out of memory");
	errno = 0;
	trace_begin_fn();
	got = ibv_poll_cq(cq, (int)n, wc);
	trace_end_fn();
	if (got < 0) {
		record_err(verb_errno(got));
		free(wc);
		return;
	}
	for (int i = 0; i < got; i++)
		record("wc wr_id=%" PRIu64 " status=%d opcode=%d vendor_err=0x%x "
		       "byte_len=%u imm=0x%x qp_num=0x%x src_qp=0x%x wc_flags=0x%x "
		       "pkey_index=%u slid=%u sl=%u dlid_path_bits=%u",
		       (uint64_t)wc[i].wr_id, (int)wc[i].status, (int)wc[i].opcode,
		       wc[i].vendor_err, wc[i].byte_len, be32toh(wc[i].imm_data),
		       wc[i].qp_num, wc[i].src_qp, wc[i].wc_flags,
		       (unsigned)wc[i].pkey_index, (unsigned)wc[i].slid,
		       (unsigned)wc[i].sl, (unsigned)wc[i].dlid_path_bits);
	record("poll n=%d", got);
	free(wc);
}

static void cmd_arm(struct args *a)
{
	struct ibv_cq *cq;
	int solicited;
	int ret;

	positionals(a, 1, 1);
	solicited = flag(a, "solicited");
	done(a);
	need_ctx();
	cq = need_obj(a->pos[0], OBJ_CQ)->u.cq;
	errno = 0;
	trace_begin_fn();
	ret = ibv_req_notify_cq(cq, solicited);
	trace_end_fn();
	if (ret)
		record_err(verb_errno(ret));
}

static void cmd_query_ece(struct args *a)
{
	struct ibv_ece ece;
	struct ibv_qp *qp;
	int ret;

	positionals(a, 1, 1);
	done(a);
	need_ctx();
	qp = need_obj(a->pos[0], OBJ_QP)->u.qp;
	memset(&ece, 0, sizeof(ece));
	errno = 0;
	ret = ibv_query_ece(qp, &ece);
	if (ret) {
		record_err(verb_errno(ret));
		return;
	}
	record("ece vendor=0x%x options=0x%x comp_mask=0x%x", ece.vendor_id,
	       ece.options, ece.comp_mask);
}

static void cmd_set_ece(struct args *a)
{
	struct ibv_ece ece;
	struct ibv_qp *qp;
	const char *s;
	int ret;

	positionals(a, 1, 1);
	memset(&ece, 0, sizeof(ece));
	ece.options = opt_u32(a, "options");
	s = opt(a, "vendor");
	ece.vendor_id = s ? parse_u32("set_ece vendor", s) : PCI_VENDOR_MELLANOX;
	ece.comp_mask = 0;
	done(a);
	need_ctx();
	qp = need_obj(a->pos[0], OBJ_QP)->u.qp;
	errno = 0;
	ret = ibv_set_ece(qp, &ece);
	if (ret)
		record_err(verb_errno(ret));
}

static void cmd_dump(struct args *a)
{
	static const char hex[] = "0123456789abcdef";
	struct obj *mr;
	uint64_t off, len;
	char *out;

	positionals(a, 3, 3);
	done(a);
	need_ctx();
	mr = need_obj(a->pos[0], OBJ_MR);
	if (!mr->u.mr.buf)
		die("dump: %s has no memory", mr->name);
	off = parse_u64("dump OFF", a->pos[1]);
	len = parse_u64("dump LEN", a->pos[2]);
	if (off > mr->u.mr.len || len > mr->u.mr.len - off)
		die("dump %" PRIu64 "+%" PRIu64 " is outside %s", off, len, mr->name);
	out = malloc(2 * len + 1);
	if (!out)
		die("out of memory");
	for (uint64_t i = 0; i < len; i++) {
		uint8_t b = mr->u.mr.buf[off + i];

		out[2 * i] = hex[b >> 4];
		out[2 * i + 1] = hex[b & 15];
	}
	out[2 * len] = 0;
	record("mem %s %" PRIu64 ": %s", mr->name, off, out);
	free(out);
}

static void cmd_destroy(struct args *a)
{
	struct obj *o;
	int ret = 0;

	positionals(a, 1, 1);
	done(a);
	need_ctx();
	o = find_obj(a->pos[0]);
	if (!o)
		die("no object named %s", a->pos[0]);

	errno = 0;
	switch (o->kind) {
	case OBJ_PD:
		ret = ibv_dealloc_pd(o->u.pd);
		if (cur_pd == o->u.pd)
			cur_pd = NULL; /* as the Go runner: no fallback */
		break;
	case OBJ_MR:
		ret = ibv_dereg_mr(o->u.mr.mr);
		if (!ret && o->u.mr.buf)
			munmap(o->u.mr.buf, o->u.mr.len);
		break;
	case OBJ_CHANNEL:
		ret = ibv_destroy_comp_channel(o->u.channel);
		break;
	case OBJ_CQ:
		ret = ibv_destroy_cq(o->u.cq);
		break;
	case OBJ_QP:
		ret = ibv_destroy_qp(o->u.qp);
		break;
	case OBJ_AH:
		ret = ibv_destroy_ah(o->u.ah);
		break;
	case OBJ_SRQ:
		ret = ibv_destroy_srq(o->u.srq);
		break;
	}
	if (ret)
		record_err(verb_errno(ret));
	else
		remove_obj(o);
}

/* srq NAME max_wr=N max_sge=N: records what libmlx5 granted. */
static void cmd_srq(struct args *a)
{
	struct ibv_srq_init_attr attr;
	struct obj *o;

	positionals(a, 1, 1);
	memset(&attr, 0, sizeof(attr));
	attr.attr.max_wr = opt_u32(a, "max_wr");
	attr.attr.max_sge = opt_u32(a, "max_sge");
	done(a);
	need_ctx();
	o = new_obj(a->pos[0], OBJ_SRQ);
	errno = 0;
	o->u.srq = ibv_create_srq(current_pd(), &attr);
	if (!o->u.srq) {
		record_err(errno);
		return;
	}
	add_obj(o);
	record("srq max_wr=%u max_sge=%u", attr.attr.max_wr, attr.attr.max_sge);
}

/* srq_recv SRQ id=N sge=... [count=K], traced like recv. */
static void cmd_srq_recv(struct args *a)
{
	post_recvs(a, 1);
}

/* arm_srq SRQ limit=N: ibv_modify_srq with IBV_SRQ_LIMIT (max_wr 0). */
static void cmd_arm_srq(struct args *a)
{
	struct ibv_srq_attr attr;
	struct ibv_srq *srq;
	int ret;

	positionals(a, 1, 1);
	memset(&attr, 0, sizeof(attr));
	attr.srq_limit = opt_u32(a, "limit");
	done(a);
	need_ctx();
	srq = need_obj(a->pos[0], OBJ_SRQ)->u.srq;
	errno = 0;
	ret = ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT);
	if (ret)
		record_err(verb_errno(ret));
}

static void cmd_query_srq(struct args *a)
{
	struct ibv_srq_attr attr;
	struct ibv_srq *srq;
	int ret;

	positionals(a, 1, 1);
	done(a);
	need_ctx();
	srq = need_obj(a->pos[0], OBJ_SRQ)->u.srq;
	memset(&attr, 0, sizeof(attr));
	errno = 0;
	ret = ibv_query_srq(srq, &attr);
	if (ret) {
		record_err(verb_errno(ret));
		return;
	}
	record("srq max_wr=%u max_sge=%u limit=%u", attr.max_wr, attr.max_sge, attr.srq_limit);
}

static void cmd_close(struct args *a)
{
	int ret;

	positionals(a, 0, 0);
	done(a);
	need_ctx();
	errno = 0;
	ret = ibv_close_device(ctx);
	if (ret)
		record_err(verb_errno(ret));
	ctx = NULL;
}

/* ---------------------------------------------------------------------------
 * CQ commands beyond cq/poll/arm (the Go twin: ../scenario/cq_linux.go).
 *
 *   setenv NAME=VALUE   the environment libmlx5 reads (MLX5_CQE_SIZE)
 *   unsetenv NAME
 *   get_event CHANNEL   ibv_get_cq_event, then ibv_ack_cq_events(cq, 1), as
 *                       the Go side's CompChannel.Wait; record "event cq=NAME"
 *   reset QP            ibv_modify_qp to RESET (libmlx5 cleans the CQs)
 *
 * and the device-side line "notify CQ", sent to the device like "cqe".
 */

static void cmd_setenv(struct args *a)
{
	positionals(a, 0, 0);
	if (a->nkv != 1 || !a->val[0])
		die("setenv: want NAME=VALUE");
	a->used[0] = true;
	done(a);
	if (setenv(a->key[0], a->val[0], 1))
		die("setenv %s: %s", a->key[0], strerror(errno));
}

static void cmd_unsetenv(struct args *a)
{
	positionals(a, 1, 1);
	done(a);
	if (unsetenv(a->pos[0]))
		die("unsetenv %s: %s", a->pos[0], strerror(errno));
}

static void cmd_get_event(struct args *a)
{
	struct ibv_comp_channel *ch;
	const char *name = "?";
	struct ibv_cq *cq;
	void *cq_ctx;

	positionals(a, 1, 1);
	done(a);
	need_ctx();
	ch = need_obj(a->pos[0], OBJ_CHANNEL)->u.channel;
	errno = 0;
	if (ibv_get_cq_event(ch, &cq, &cq_ctx)) {
		record_err(errno);
		return;
	}
	for (int i = 0; i < nobjs; i++)
		if (objs[i].kind == OBJ_CQ && objs[i].u.cq == cq)
			name = objs[i].name;
	record("event cq=%s", name);
	ibv_ack_cq_events(cq, 1);
}

static void cmd_reset(struct args *a)
{
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;
	int ret;

	positionals(a, 1, 1);
	done(a);
	need_ctx();
	qp = need_obj(a->pos[0], OBJ_QP)->u.qp;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RESET;
	errno = 0;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (ret)
		record_err(verb_errno(ret));
}

/* End of the CQ commands. */

/* ---------------------------------------------------------------------------
 * The main loop.
 */

struct command {
	const char *name;
	void (*run)(struct args *);
};

static const struct command commands[] = {
	{ "open", cmd_open },
	{ "pd", cmd_pd },
	{ "mr", cmd_mr },
	{ "dmabuf_mr", cmd_dmabuf_mr },
	{ "rereg", cmd_rereg },
	{ "channel", cmd_channel },
	{ "cq", cmd_cq },
	{ "qp", cmd_qp },
	{ "modify", cmd_modify },
	{ "state", cmd_state },
	{ "ah", cmd_ah },
	{ "send", cmd_send },
	{ "recv", cmd_recv },
	{ "poll", cmd_poll },
	{ "arm", cmd_arm },
	{ "query_ece", cmd_query_ece },
	{ "set_ece", cmd_set_ece },
	{ "srq", cmd_srq },
	{ "srq_recv", cmd_srq_recv },
	{ "arm_srq", cmd_arm_srq },
	{ "query_srq", cmd_query_srq },
	{ "dump", cmd_dump },
	{ "destroy", cmd_destroy },
	{ "close", cmd_close },
	{ "setenv", cmd_setenv },
	{ "unsetenv", cmd_unsetenv },
	{ "get_event", cmd_get_event },
	{ "reset", cmd_reset },
};

/* The line's text, in place: the comment removed, the words joined by
 * single spaces (as the Go parser's Line.Text). */
static char *clean_line(char *line)
{
	char *hash = strchr(line, '#');
	char *r = line, *w = line;

	if (hash)
		*hash = 0;
	for (;;) {
		while (isspace((unsigned char)*r))
			r++;
		if (!*r)
			break;
		if (w != line)
			*w++ = ' ';
		while (*r && !isspace((unsigned char)*r))
			*w++ = *r++;
	}
	*w = 0;
	return line;
}

static void run_line(char *text)
{
	char label[4200];
	char work[4096];
	struct args a;
	int ret;

	snprintf(label, sizeof(label), "L%d: %s", lineno, text);
	if (strlen(text) >= sizeof(work))
		die("line too long");
	strcpy(work, text);
	split(work, &a);

	if (!strcmp(a.cmd, "profile"))
		return; /* device side only */
	if (!strcmp(a.cmd, "cqe") || !strcmp(a.cmd, "notify")) {
		/* Device side: it writes the CQE. No snapshot. */
		if (verbose)
			printf("%s\n", label);
		ret = exec_fn(text);
		if (ret)
			die("the device refused \"%s\" (errno %d)", text, ret);
		return;
	}

	if (verbose)
		printf("%s\n", label);
	const struct command *c = NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, a.cmd))
			c = &commands[i];
	if (!c)
		die("unknown command %s", a.cmd);
	c->run(&a);
	if (c->run == cmd_open && !ctx) {
		fprintf(stderr, "scenario: %s:%d: open failed\n", scn_file, lineno);
		exit(1);
	}
	snapshot_fn(label);
}

int main(int argc, char **argv)
{
	char line[4096];
	FILE *f;

	if (argc == 3 && !strcmp(argv[1], "-v")) {
		verbose = true;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s [-v] FILE.scn\n", argv[0]);
		return 2;
	}
	scn_file = argv[1];
	find_shim();
	if (verbose)
		setvbuf(stdout, NULL, _IOLBF, 0);

	f = fopen(scn_file, "r");
	if (!f) {
		perror(scn_file);
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char *text;

		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			die("line too long");
		text = clean_line(line);
		if (*text)
			run_line(text);
	}
	if (ferror(f)) {
		perror(scn_file);
		return 2;
	}
	fclose(f);
	return 0;
}
