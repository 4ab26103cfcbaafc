// tbcount.c: a QEMU TCG plugin (plugin API version 1, QEMU 7.2 as in the
// guests' host) that counts, per translated block, its executions and
// the guest memory accesses of its instructions. A host thread watches a
// trigger file; each time the file is replaced (a new inode or mtime), it
// writes every block that ran since the last dump to OUT/dump-NNN.txt
// (first line "# " and the trigger's first line; then "vaddr insns execs
// mems" in hex and decimal) and zeroes the counts. A guest program marks
// the edges of what it measures by replacing the trigger file in the 9p
// share (qpcycle's QPCYCLE_MARK). Used for the create qp step (docs/benchmarks.md
// "Connection lifecycle"): distinct user-space blocks per QP, Go against C.
//
//	gcc -O2 -shared -fPIC -o tbcount.so tbcount.c -lpthread
//	qemu-system-x86_64 ... -plugin tbcount.so,trig=DIR/trig,out=OUTDIR
//
// The declarations below are the few of QEMU's qemu-plugin.h (API v1)
// this plugin calls; the symbols come from the QEMU binary.
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_vcpu_mem_inline(struct qemu_plugin_insn *, enum qemu_plugin_mem_rw, enum qemu_plugin_op,
					  void *, uint64_t);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

// One record per translation (a block translated again gets another;
// the dump adds them up by address). Records are never freed, so the
// inline counters' addresses stay valid.
struct rec {
	uint64_t vaddr;
	uint64_t execs;
	uint64_t mems;
	uint32_t ninsn;
};

#define CHUNK 65536
static struct rec *chunks[4096];
static int nrec;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char trig[512], outdir[512];

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	pthread_mutex_lock(&mu);
	if (nrec == CHUNK * 4096) {
		pthread_mutex_unlock(&mu);
		return;
	}
	int i = nrec++;
	if (!chunks[i / CHUNK])
		chunks[i / CHUNK] = calloc(CHUNK, sizeof(struct rec));
	struct rec *r = &chunks[i / CHUNK][i % CHUNK];
	pthread_mutex_unlock(&mu);
	r->vaddr = qemu_plugin_tb_vaddr(tb);
	r->ninsn = qemu_plugin_tb_n_insns(tb);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &r->execs, 1);
	for (size_t k = 0; k < r->ninsn; k++)
		qemu_plugin_register_vcpu_mem_inline(qemu_plugin_tb_get_insn(tb, k), QEMU_PLUGIN_MEM_RW,
						     QEMU_PLUGIN_INLINE_ADD_U64, &r->mems, 1);
}

static void dump(int seq, const char *label)
{
	char path[600];
	snprintf(path, sizeof path, "%s/dump-%03d.txt", outdir, seq);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "# %s\n", label[0] ? label : "?");
	pthread_mutex_lock(&mu);
	int n = nrec;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++) {
		struct rec *r = &chunks[i / CHUNK][i % CHUNK];
		uint64_t e = __atomic_exchange_n(&r->execs, 0, __ATOMIC_RELAXED);
		uint64_t m = __atomic_exchange_n(&r->mems, 0, __ATOMIC_RELAXED);
		if (e)
			fprintf(f, "%" PRIx64 " %u %" PRIu64 " %" PRIu64 "\n", r->vaddr, r->ninsn, e, m);
	}
	fclose(f);
}

static void *watch(void *arg)
{
	struct timespec last = {0};
	ino_t lastino = 0;
	int seq = 0;
	(void)arg;
	for (;;) {
		struct stat st;
		if (stat(trig, &st) == 0 &&
		    (st.st_ino != lastino || st.st_mtim.tv_sec != last.tv_sec || st.st_mtim.tv_nsec != last.tv_nsec)) {
			last = st.st_mtim;
			lastino = st.st_ino;
			char label[256] = "";
			FILE *f = fopen(trig, "r");
			if (f) {
				if (!fgets(label, sizeof label, f))
					label[0] = 0;
				label[strcspn(label, "\n")] = 0;
				fclose(f);
			}
			dump(seq++, label);
		}
		usleep(100);
	}
	return NULL;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
							       int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "trig=", 5))
			snprintf(trig, sizeof trig, "%s", argv[i] + 5);
		if (!strncmp(argv[i], "out=", 4))
			snprintf(outdir, sizeof outdir, "%s", argv[i] + 4);
	}
	if (!trig[0] || !outdir[0]) {
		fprintf(stderr, "tbcount: want trig=FILE,out=DIR\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	pthread_t t;
	pthread_create(&t, NULL, watch, NULL);
	return 0;
}
