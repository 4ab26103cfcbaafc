// mtid (docs/benchmarks.md, "What is left above 1.0"): time N rdma_create_id then N rdma_destroy_id, optionally with an
// idle second thread alive (as any Go process has), to test whether a
// multi-threaded process pays more per ucma command (fdget takes a file
// reference when the fd table is shared).
#include <rdma/rdma_cma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static void *idle(void *a) { pause(); return NULL; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char **argv) {
	int n = 200, threads = argc > 1 && strcmp(argv[1], "mt") == 0;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id **ids = calloc(n, sizeof *ids);
	pthread_t t;
	if (threads) pthread_create(&t, NULL, idle, NULL);
	double t0 = now(), cmin = 1e9, dmin = 1e9, a, b;
	for (int i = 0; i < n; i++) { a = now(); if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP)) { perror("create"); return 1; } b = now(); if (b - a < cmin) cmin = b - a; }
	double t1 = now();
	for (int i = 0; i < n; i++) { a = now(); rdma_destroy_id(ids[i]); b = now(); if (b - a < dmin) dmin = b - a; }
	double t2 = now();
	printf("%s create %.2f ms (min %.1f us) destroy %.2f ms (min %.1f us)\n", threads ? "mt" : "st", t1 - t0, cmin * 1e3, t2 - t1, dmin * 1e3);
	return 0;
}
