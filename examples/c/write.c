/* A 1 MiB RDMA WRITE with the server's address and rkey in the REP's
 * private data, with librdmacm's rdma_verbs.h (the Go twin is
 * examples/write). -n repeats the write (the server posts a receive for
 * each before it accepts); -t prints the mean time per write.
 * cc -o write write.c -lrdmacm -libverbs; write [-s] [-n COUNT] [-t] ADDR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <time.h>

#define SIZE (1 << 20)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param param;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint64_t remote[2]; /* address, then rkey and length */
	int server = 0, timed = 0, count = 1, i;
	char *addr = NULL;
	unsigned char *buf = calloc(1, SIZE), sum = 0;
	double begin, total;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s"))
			server = 1;
		else if (!strcmp(argv[i], "-t"))
			timed = 1;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			count = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-a") && i + 1 < argc)
			addr = argv[++i];
		else
			addr = argv[i];
	}
	if (!addr || count < 1) {
		fprintf(stderr, "usage: write [-s] [-n COUNT] [-t] ADDR\n");
		return 2;
	}

	memset(&hints, 0, sizeof hints);
	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, "7472", &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	memset(&attr, 0, sizeof attr);
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = server ? count : 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (rdma_create_ep(server ? &listen_id : &id, res, NULL, &attr)) {
		perror("rdma_create_ep");
		return 1;
	}
	rdma_freeaddrinfo(res);
	memset(&param, 0, sizeof param);
	param.responder_resources = param.initiator_depth = 1;
	param.retry_count = param.rnr_retry_count = 7;
	if (server) {
		if (rdma_listen(listen_id, 0) || rdma_get_request(listen_id, &id)) {
			perror("rdma_listen");
			return 1;
		}
		mr = rdma_reg_write(id, buf, SIZE);
		if (!mr) {
			perror("rdma_reg_write");
			return 1;
		}
		for (i = 0; i < count; i++)
			if (rdma_post_recv(id, NULL, buf, 0, mr)) {
				perror("rdma_post_recv");
				return 1;
			}
		remote[0] = htobe64((uintptr_t)buf);
		remote[1] = htobe64((uint64_t)mr->rkey << 32 | SIZE);
		param.private_data = remote;
		param.private_data_len = sizeof remote;
		printf("listening\n");
		fflush(stdout);
		if (rdma_accept(id, &param)) {
			perror("rdma_accept");
			return 1;
		}
		for (i = 0; i < count; i++)
			if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS) {
				perror("rdma_get_recv_comp");
				return 1;
			}
		for (i = 0; i < SIZE; i++)
			sum += buf[i];
		printf("server: %u bytes written, sum %u\n", be32toh(wc.imm_data), sum);
	} else {
		mr = rdma_reg_msgs(id, buf, SIZE);
		if (!mr || rdma_connect(id, &param)) {
			perror("rdma_connect");
			return 1;
		}
		memcpy(remote, id->event->param.conn.private_data, sizeof remote);
		for (i = 0; i < SIZE; i++)
			sum += buf[i] = i * 7;
		struct ibv_sge sge = { (uintptr_t)buf, SIZE, mr->lkey };
		struct ibv_send_wr wr = { 0 }, *bad;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(SIZE);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = be64toh(remote[0]);
		wr.wr.rdma.rkey = be64toh(remote[1]) >> 32;
		begin = now();
		for (i = 0; i < count; i++)
			if (ibv_post_send(id->qp, &wr, &bad) || rdma_get_send_comp(id, &wc) <= 0 ||
			    wc.status != IBV_WC_SUCCESS) {
				perror("write");
				return 1;
			}
		total = now() - begin;
		printf("client: %d bytes written, sum %u\n", SIZE, sum);
		if (timed)
			printf("time: %d ops, %.3f us/op\n", count, total / count);
		rdma_disconnect(id);
	}
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	if (server)
		rdma_destroy_ep(listen_id);
	free(buf);
	return 0;
}
