// icount.c: a QEMU TCG plugin (API v1, QEMU 7.2) for qemu-user that counts
// the guest instructions a program executes and prints "icount N" on stderr
// at exit. Two runs of a Go benchmark at two -test.benchtime counts give its
// user-space instructions per iteration, the same on any host: the wait
// path of uverbs (BenchmarkWaitBlockingReady) before and after a change.
// Threads add to one counter without atomics: a few may be lost.
//
//	gcc -O2 -shared -fPIC -o icount.so icount.c
//	go test -c -o wb.test ./uverbs/
//	qemu-x86_64 -plugin ./icount.so ./wb.test -test.run '^$' -test.bench WaitBlockingReady -test.benchtime 10000x -test.cpu 1
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, void *), void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t insns;

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, qemu_plugin_tb_n_insns(tb));
}

static void done(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	fprintf(stderr, "icount %" PRIu64 "\n", insns);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
							       int argc, char **argv)
{
	(void)info;
	(void)argc;
	(void)argv;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, done, NULL);
	return 0;
}
