/*
 * bench.c: libibverbs + NVIDIA's libmlx5 doing post send plus poll against
 * the simulated device, the C half of the data-path benchmark (the Go half
 * is BenchmarkVsLibmlx5 in ../bench_test.go, which runs this program under
 * the shim and compares).
 *
 *   usage: bench CASE ITERATIONS
 *
 * CASE is one of
 *   send_inline64  one signalled SEND with 64 bytes inline per iteration
 *   write_sge1     one signalled RDMA WRITE of 4 KiB with one SGE
 *   batch16        sixteen signalled SENDs of 64 bytes (one SGE) in one
 *                  post, then one poll of sixteen completions
 * Per iteration the program posts, writes the requester CQEs the device
 * would write (through the CQ buffer mlx5dv hands out) and polls them
 * back; it prints "CASE NS_PER_WR CPU_NS_PER_WR" on stdout: wall time
 * (CLOCK_MONOTONIC) and this thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
 * which leaves out the time the thread waited for a CPU on a loaded
 * machine. Only the timed loop runs
 * without system calls; set-up goes through the shim like every scenario.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#define QUEUE_DEPTH 256
#define MR_SIZE 65536

static void die(const char *what)
{
	fprintf(stderr, "bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

struct rig {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *cqbuf;
	uint32_t ncqe;
	uint32_t ci;	  /* next CQE slot this program writes */
	uint16_t wqe_idx; /* the send queue's producer index, in WQEBBs */
};

static void setup(struct rig *r)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n < 1)
		die("no device");
	r->ctx = ibv_open_device(list[0]);
	if (!r->ctx)
		die("open");
	r->pd = ibv_alloc_pd(r->ctx);
	if (!r->pd)
		die("alloc pd");
	void *buf = aligned_alloc(4096, MR_SIZE);
	if (!buf)
		die("buffer");
	memset(buf, 0x5a, MR_SIZE);
	r->mr = ibv_reg_mr(r->pd, buf, MR_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr)
		die("reg mr");
	r->cq = ibv_create_cq(r->ctx, QUEUE_DEPTH, NULL, NULL, 0);
	if (!r->cq)
		die("create cq");
	struct ibv_qp_init_attr ia = {
		.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = QUEUE_DEPTH, .max_recv_wr = 1, .max_send_sge = 1,
			.max_recv_sge = 1, .max_inline_data = 64},
	};
	r->qp = ibv_create_qp(r->pd, &ia);
	if (!r->qp)
		die("create qp");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify init");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x123;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 192;
	a.ah_attr.grh.dgid.raw[14] = 2;
	a.ah_attr.grh.dgid.raw[15] = 2;
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify rtr");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify rts");

	struct mlx5dv_cq dcq;
	struct mlx5dv_obj obj = {.cq = {.in = r->cq, .out = &dcq}};
	if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ))
		die("mlx5dv_init_obj");
	if (dcq.cqe_size != 64)
		die("cqe size");
	r->cqbuf = dcq.buf;
	r->ncqe = dcq.cqe_cnt;
}

/* complete writes the requester CQE the device would write for the WQE
 * that starts at WQEBB index counter (mlx5_cqe64: srqn_uidx at 32,
 * sop_drop_qpn at 56, wqe_counter at 60, op_own at 63). The user index is
 * 0: the QP is the context's first. */
static void complete(struct rig *r, uint16_t counter, uint8_t opcode)
{
	uint8_t *cqe = r->cqbuf + (size_t)(r->ci & (r->ncqe - 1)) * 64;
	uint32_t sop = htobe32((uint32_t)opcode << 24 | r->qp->qp_num);
	uint16_t ctr = htobe16(counter);
	memset(cqe, 0, 56);
	memcpy(cqe + 56, &sop, 4);
	memcpy(cqe + 60, &ctr, 2);
	cqe[62] = 0;
	cqe[63] = (uint8_t)(0 << 4 | ((r->ci / r->ncqe) & 1)); /* MLX5_CQE_REQ, owner */
	r->ci++;
}

static double now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bench CASE ITERATIONS\n");
		return 2;
	}
	const char *name = argv[1];
	long iters = atol(argv[2]);
	struct rig r = {0};
	setup(&r);

	uint8_t *mem = r.mr->addr;
	struct ibv_sge sge = {.addr = (uintptr_t)mem, .length = 64, .lkey = r.mr->lkey};
	struct ibv_send_wr wrs[16], *bad;
	struct ibv_wc wc[16];
	int batch = 1, bbs = 1;
	uint8_t sop = 0x0a; /* MLX5_OPCODE_SEND */
	memset(wrs, 0, sizeof wrs);
	if (!strcmp(name, "send_inline64")) {
		wrs[0].opcode = IBV_WR_SEND;
		wrs[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		bbs = 2; /* ctrl 16 + inline 4 + 64, padded: 96 bytes */
	} else if (!strcmp(name, "write_sge1")) {
		sge.length = 4096;
		wrs[0].opcode = IBV_WR_RDMA_WRITE;
		wrs[0].send_flags = IBV_SEND_SIGNALED;
		wrs[0].wr.rdma.remote_addr = 0x7f0000001000;
		wrs[0].wr.rdma.rkey = 0x1234;
		sop = 0x08; /* MLX5_OPCODE_RDMA_WRITE */
	} else if (!strcmp(name, "batch16")) {
		batch = 16;
		for (int i = 0; i < 16; i++) {
			wrs[i].opcode = IBV_WR_SEND;
			wrs[i].send_flags = IBV_SEND_SIGNALED;
			wrs[i].next = i < 15 ? &wrs[i + 1] : NULL;
		}
	} else {
		fprintf(stderr, "bench: unknown case %s\n", name);
		return 2;
	}
	for (int i = 0; i < batch; i++) {
		wrs[i].wr_id = i;
		wrs[i].sg_list = &sge;
		wrs[i].num_sge = 1;
	}

	/* A short warm-up, then the timed loop. */
	double start = 0, cpu_start = 0;
	for (long it = -iters / 10 - 1; it < iters; it++) {
		if (it == 0) {
			start = now_ns(CLOCK_MONOTONIC);
			cpu_start = now_ns(CLOCK_THREAD_CPUTIME_ID);
		}
		if (ibv_post_send(r.qp, wrs, &bad))
			die("post send");
		for (int i = 0; i < batch; i++) {
			complete(&r, r.wqe_idx, sop);
			r.wqe_idx += bbs;
		}
		int got = 0;
		while (got < batch) {
			int n = ibv_poll_cq(r.cq, batch - got, wc + got);
			if (n < 0)
				die("poll");
			got += n;
		}
		for (int i = 0; i < batch; i++)
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)i) {
				fprintf(stderr, "bench: completion %d: status %d wr_id %llu\n", i,
					wc[i].status, (unsigned long long)wc[i].wr_id);
				return 1;
			}
	}
	double cpu = (now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start) / ((double)iters * batch);
	double ns = (now_ns(CLOCK_MONOTONIC) - start) / ((double)iters * batch);
	printf("%s %.2f %.2f\n", name, ns, cpu);
	return 0;
}
