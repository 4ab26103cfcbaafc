/*
 * fenceplugin.c: a QEMU TCG plugin (qemu-user, x86-64 and aarch64 guests)
 * that reports every barrier instruction a traced guest thread executes
 * to the simulated device, before it executes (../README.md, "Fences").
 *
 * At translation, each guest instruction's bytes are matched against the
 * barrier encodings (x86-64: lfence, sfence, mfence; aarch64: DMB and DSB
 * with their option, ISB) and a matching one gets an execution callback.
 * The callback runs on the guest thread, before the instruction and after
 * every guest store before it: inside a trace window it sends a SIM_FENCE
 * request (kind 9: the name, a0 = the guest PC) on its own connection to
 * $MLX5SIM_SOCK and blocks until the device has replied, so the device
 * reads the doorbell records and UAR pages (process_vm_readv on this
 * process: qemu-user maps a 64-bit guest at guest_base 0, guest addresses
 * are ours) as they are just before the barrier.
 *
 * A trace window is per guest thread (qemu-user's vcpu index): the thread
 * opens it with prctl(SIM_PRCTL_TRACE, 1) and closes it with
 * prctl(SIM_PRCTL_TRACE, 0), which the plugin sees in its system call
 * callback; the kernel then fails the prctl with EINVAL, so the same
 * program runs unchanged natively, where nothing is traced.
 *
 * The plugin API is declared here from QEMU 7.2's include/qemu/qemu-plugin.h
 * (API version 1), which Debian does not ship: only what is used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mlx5sim.h"

/* --- QEMU 7.2 plugin API (version 1), the parts used. --- */

typedef uint64_t qemu_plugin_id_t;

typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index,
					      int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
					      uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
					      uint64_t a8);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_cb_t cb);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

/* --- Barrier encodings. --- */

enum arch { ARCH_X86_64, ARCH_AARCH64 };

static enum arch arch;
static int64_t prctl_nr; /* the guest's prctl number */

/*
 * x86-64: NP 0F AE /5, /6, /7 with mod = 11: 0F AE E8..EF lfence, F0..F7
 * mfence, F8..FF sfence. Segment overrides, address size and a REX prefix
 * do not change the meaning; with 66, F2 or F3 the same bytes are other
 * instructions (pcommit, tpause, umonitor, umwait, incssp) and F0 (lock)
 * makes them undefined: not barriers.
 */
static const char *x86_barrier(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && (p[i] == 0x26 || p[i] == 0x2e || p[i] == 0x36 || p[i] == 0x3e ||
			 p[i] == 0x64 || p[i] == 0x65 || p[i] == 0x67))
		i++;
	if (i < n && (p[i] & 0xf0) == 0x40)
		i++;
	if (i + 3 != n || p[i] != 0x0f || p[i + 1] != 0xae)
		return NULL;
	switch (p[i + 2] & 0xf8) {
	case 0xe8:
		return "lfence";
	case 0xf0:
		return "mfence";
	case 0xf8:
		return "sfence";
	}
	return NULL;
}

/*
 * aarch64 (Arm ARM, "Barriers"): DMB 0xd50330bf, DSB 0xd503309f, ISB
 * 0xd50330df, each with the option in CRm (bits 11:8). DSB with CRm 0
 * and 4 are SSBB and PSSBB.
 */
static const char *a64_option(unsigned crm)
{
	static const char *const names[16] = {
		[1] = "oshld", [2] = "oshst", [3] = "osh", [5] = "nshld", [6] = "nshst", [7] = "nsh",
		[9] = "ishld", [10] = "ishst", [11] = "ish", [13] = "ld", [14] = "st", [15] = "sy",
	};
	static const char *const num[16] = {
		"#0", "#1", "#2", "#3", "#4", "#5", "#6", "#7",
		"#8", "#9", "#10", "#11", "#12", "#13", "#14", "#15",
	};
	return names[crm] ? names[crm] : num[crm];
}

/* "dmb OPT", "dsb OPT", "isb [OPT]" by CRm; filled at install. */
static char a64_names[3][16][16];

static void a64_fill(void)
{
	for (unsigned c = 0; c < 16; c++) {
		snprintf(a64_names[0][c], sizeof(a64_names[0][c]), "dmb %s", a64_option(c));
		snprintf(a64_names[1][c], sizeof(a64_names[1][c]), "dsb %s", a64_option(c));
		if (c == 15)
			snprintf(a64_names[2][c], sizeof(a64_names[2][c]), "isb");
		else
			snprintf(a64_names[2][c], sizeof(a64_names[2][c]), "isb %s", a64_option(c));
	}
}

static const char *a64_barrier(const uint8_t *p, size_t n)
{
	uint32_t w;
	unsigned crm;

	if (n != 4)
		return NULL;
	memcpy(&w, p, 4); /* aarch64 code is little-endian, as the hosts we run on */
	crm = (w >> 8) & 0xf;
	switch (w & 0xfffff0ffu) {
	case 0xd50330bf:
		return a64_names[0][crm];
	case 0xd503309f:
		if (crm == 0)
			return "ssbb";
		if (crm == 4)
			return "pssbb";
		return a64_names[1][crm];
	case 0xd50330df:
		return a64_names[2][crm];
	}
	return NULL;
}

/* --- Trace windows and the device connection. --- */

#define MAX_VCPUS 4096
/* The socket is moved to an fd at or above this, out of the way of the
 * guest's fd numbers (qemu-user shares its fd table with the guest). */
#define SOCK_FD_MIN 950

static volatile bool window[MAX_VCPUS];
static pthread_mutex_t sock_lock = PTHREAD_MUTEX_INITIALIZER;
static int sock = -1;

static void die(const char *msg)
{
	fprintf(stderr, "mlx5sim fenceplugin: %s\n", msg);
	abort();
}

static int io_all(bool wr, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = wr ? write(sock, p, n) : read(sock, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Connect on the first window: the guest has set MLX5SIM_SOCK by then
 * (it is in our environment, which qemu-user hands to the guest). */
static void connect_locked(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv("MLX5SIM_SOCK");
	int fd, hi;

	if (sock >= 0)
		return;
	if (!path || strlen(path) >= sizeof(sa.sun_path))
		die("MLX5SIM_SOCK is not set (or too long)");
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("cannot connect to the device");
	hi = fcntl(fd, F_DUPFD_CLOEXEC, SOCK_FD_MIN);
	if (hi < 0)
		die("cannot move the socket");
	close(fd);
	sock = hi;
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
		       uint64_t a7, uint64_t a8)
{
	(void)id, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
	if (num != prctl_nr || (uint32_t)a1 != SIM_PRCTL_TRACE)
		return;
	if (vcpu >= MAX_VCPUS)
		die("too many guest threads");
	if (a2) {
		pthread_mutex_lock(&sock_lock);
		connect_locked();
		pthread_mutex_unlock(&sock_lock);
	}
	window[vcpu] = a2 != 0;
}

/* A barrier found at translation: its name and guest address. */
struct barrier {
	const char *name;
	uint64_t pc;
};

static void on_barrier(unsigned int vcpu, void *udata)
{
	const struct barrier *b = udata;
	struct sim_req req = { .kind = SIM_FENCE, .fd = -1, .spare_fd = -1 };
	struct sim_rep rep;

	if (vcpu >= MAX_VCPUS || !window[vcpu])
		return;
	req.len = (uint32_t)strlen(b->name);
	req.a0 = b->pc;
	req.pid = (uint64_t)getpid();
	pthread_mutex_lock(&sock_lock);
	if (io_all(true, &req, sizeof(req)) || io_all(true, (void *)b->name, req.len) ||
	    io_all(false, &rep, sizeof(rep)))
		die("lost the device (fence request)");
	pthread_mutex_unlock(&sock_lock);
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *p = qemu_plugin_insn_data(insn);
		size_t len = qemu_plugin_insn_size(insn);
		const char *name = arch == ARCH_X86_64 ? x86_barrier(p, len) : a64_barrier(p, len);
		struct barrier *b;

		if (!name)
			continue;
		/* One per translation, never freed: a TB is translated
		 * again only after the code cache is flushed, rarely. */
		b = malloc(sizeof(*b));
		if (!b)
			die("out of memory");
		b->name = name;
		b->pc = qemu_plugin_insn_vaddr(insn);
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_barrier, QEMU_PLUGIN_CB_NO_REGS, b);
	}
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)argc, (void)argv;
	if (info->system_emulation) {
		fprintf(stderr, "mlx5sim fenceplugin: qemu-user only\n");
		return -1;
	}
	if (!strcmp(info->target_name, "x86_64")) {
		arch = ARCH_X86_64;
		prctl_nr = 157;
	} else if (!strcmp(info->target_name, "aarch64")) {
		arch = ARCH_AARCH64;
		prctl_nr = 167;
		a64_fill();
	} else {
		fprintf(stderr, "mlx5sim fenceplugin: guest %s not supported\n", info->target_name);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
	qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
	return 0;
}
