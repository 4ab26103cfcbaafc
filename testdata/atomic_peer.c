/*
 * atomic_peer: a librdmacm peer for the endpoint layer's atomics
 * (atomic_guest_test.go), built on the host by go generate and run in
 * the vmtest guests.
 *
 *   atomic_peer -s -a ADDR -p PORT -n CONNS [-i INIT]
 *       Serves two 8-byte words, word 0 = INIT (the counter) and word 1 =
 *       1000, registered for remote atomics. Accepts CONNS connections,
 *       each REP carrying the words' RemoteBuf (16 bytes, big-endian:
 *       address, rkey, length). Prints "listening" once it listens, and
 *       "counter N word1 M" once every client has disconnected.
 *
 *   atomic_peer -c -a ADDR -p PORT -k K
 *       Connects, reads the RemoteBuf from the REP, fetch-and-adds 1 to
 *       word 0 K times, printing "old V" for each, then on word 1 a
 *       compare-and-swap that must miss (compare 1), one that hits
 *       (compare 1000, swap 2000+K) and a fetch-and-add of 0, printing
 *       "cas MISS HIT AFTER". Exits 0 when every completion succeeded.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define MAX_CONNS 64

static void die(const char *what)
{
	fprintf(stderr, "atomic_peer: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct rdma_addrinfo *resolve(const char *addr, const char *port, int passive)
{
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

static void qp_attr(struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->cap.max_send_wr = a->cap.max_recv_wr = 16;
	a->cap.max_send_sge = a->cap.max_recv_sge = 1;
	a->qp_type = IBV_QPT_RC;
}

static int server(const char *addr, const char *port, int n, uint64_t init)
{
	struct rdma_cm_id *listen_id, *ids[MAX_CONNS];
	struct rdma_conn_param param;
	struct ibv_qp_init_attr attr;
	struct ibv_mr *mr = NULL;
	struct rdma_cm_event *ev;
	uint8_t pd[16];
	uint64_t *words;

	if (n < 1 || n > MAX_CONNS) {
		fprintf(stderr, "atomic_peer: -n %d out of range\n", n);
		return 2;
	}
	if (posix_memalign((void **)&words, 4096, 4096))
		die("posix_memalign");
	memset(words, 0, 4096);
	words[0] = init;
	words[1] = 1000;
	qp_attr(&attr);
	if (rdma_create_ep(&listen_id, resolve(addr, port, 1), NULL, &attr))
		die("rdma_create_ep");
	if (rdma_listen(listen_id, n))
		die("rdma_listen");
	printf("listening\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		if (rdma_get_request(listen_id, &ids[i]))
			die("rdma_get_request");
		if (!mr) {
			/* Every connection on the device shares librdmacm's PD. */
			mr = ibv_reg_mr(ids[i]->pd, words, 4096,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
			if (!mr)
				die("ibv_reg_mr");
		}
		uint64_t a = htobe64((uintptr_t)words);
		uint32_t k = htobe32(mr->rkey), l = htobe32(16);
		memcpy(pd, &a, 8);
		memcpy(pd + 8, &k, 4);
		memcpy(pd + 12, &l, 4);
		memset(&param, 0, sizeof(param));
		param.responder_resources = 4;
		param.initiator_depth = 4;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		param.private_data = pd;
		param.private_data_len = sizeof(pd);
		if (rdma_accept(ids[i], &param))
			die("rdma_accept");
	}
	for (int i = 0; i < n; i++) {
		for (;;) {
			if (rdma_get_cm_event(ids[i]->channel, &ev))
				die("rdma_get_cm_event");
			enum rdma_cm_event_type t = ev->event;
			rdma_ack_cm_event(ev);
			if (t == RDMA_CM_EVENT_DISCONNECTED)
				break;
		}
		/* No rdma_disconnect: on a synchronous ID it would wait for the
		 * next event, the time-wait's end; destroying the ID answers the
		 * DREQ. */
	}
	printf("counter %" PRIu64 " word1 %" PRIu64 "\n",
	       ((volatile uint64_t *)words)[0], ((volatile uint64_t *)words)[1]);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		rdma_destroy_ep(ids[i]);
	ibv_dereg_mr(mr);
	rdma_destroy_ep(listen_id);
	return 0;
}

/* atomic posts one atomic and waits for its completion; it returns the
 * value the remote word held. */
static uint64_t atomic(struct rdma_cm_id *id, struct ibv_mr *mr, uint64_t *res,
		       enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		       uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = { .addr = (uintptr_t)res, .length = 8, .lkey = mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	*res = ~0ULL;
	if (ibv_post_send(id->qp, &wr, &bad))
		die("ibv_post_send");
	if (rdma_get_send_comp(id, &wc) <= 0)
		die("rdma_get_send_comp");
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "atomic_peer: completion %s (%d)\n", ibv_wc_status_str(wc.status), wc.status);
		exit(1);
	}
	if (wc.opcode != (op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD) || wc.byte_len != 8) {
		fprintf(stderr, "atomic_peer: completion opcode %d byte_len %u\n", wc.opcode, wc.byte_len);
		exit(1);
	}
	return *(volatile uint64_t *)res;
}

static int client(const char *addr, const char *port, int k)
{
	struct rdma_conn_param param;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint64_t *res, raddr;
	uint32_t rkey, rlen;

	qp_attr(&attr);
	attr.sq_sig_all = 1;
	if (rdma_create_ep(&id, resolve(addr, port, 0), NULL, &attr))
		die("rdma_create_ep");
	if (posix_memalign((void **)&res, 4096, 4096))
		die("posix_memalign");
	mr = ibv_reg_mr(id->pd, res, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	memset(&param, 0, sizeof(param));
	param.responder_resources = 4;
	param.initiator_depth = 4;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id, &param))
		die("rdma_connect");
	/* The ESTABLISHED event stays in id->event until the next call. */
	if (!id->event || id->event->param.conn.private_data_len < 16) {
		fprintf(stderr, "atomic_peer: no RemoteBuf in the REP\n");
		return 1;
	}
	const uint8_t *pd = id->event->param.conn.private_data;
	memcpy(&raddr, pd, 8);
	memcpy(&rkey, pd + 8, 4);
	memcpy(&rlen, pd + 12, 4);
	raddr = be64toh(raddr);
	rkey = be32toh(rkey);
	rlen = be32toh(rlen);
	if (rlen < 16) {
		fprintf(stderr, "atomic_peer: remote buffer of %u bytes\n", rlen);
		return 1;
	}
	for (int i = 0; i < k; i++)
		printf("old %" PRIu64 "\n", atomic(id, mr, res, IBV_WR_ATOMIC_FETCH_AND_ADD, raddr, rkey, 1, 0));
	uint64_t miss = atomic(id, mr, res, IBV_WR_ATOMIC_CMP_AND_SWP, raddr + 8, rkey, 1, 7);
	uint64_t hit = atomic(id, mr, res, IBV_WR_ATOMIC_CMP_AND_SWP, raddr + 8, rkey, 1000, 2000 + (uint64_t)k);
	uint64_t after = atomic(id, mr, res, IBV_WR_ATOMIC_FETCH_AND_ADD, raddr + 8, rkey, 0, 0);
	printf("cas %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", miss, hit, after);
	fflush(stdout);
	rdma_disconnect(id);
	ibv_dereg_mr(mr);
	rdma_destroy_ep(id);
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7461";
	int srv = 0, n = 1, k = 1, c;
	uint64_t init = 0;

	while ((c = getopt(argc, argv, "sca:p:n:k:i:")) != -1) {
		switch (c) {
		case 's': srv = 1; break;
		case 'c': srv = 0; break;
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'k': k = atoi(optarg); break;
		case 'i': init = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: atomic_peer -s|-c -a ADDR [-p PORT] [-n CONNS] [-k K] [-i INIT]\n");
			return 2;
		}
	}
	if (!addr) {
		fprintf(stderr, "atomic_peer: -a ADDR is required\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return srv ? server(addr, port, n, init) : client(addr, port, k);
}
