/* RC echo of 1,000 x 4 KiB messages with latency percentiles, with
 * librdmacm's rdma_verbs.h (the Go twin is examples/echo). The server
 * echoes -n messages, then disconnects; -t prints the mean round trip.
 * cc -o echo echo.c -lrdmacm -libverbs; echo -s 192.0.2.1 / echo 192.0.2.1
 * [-n COUNT] [-size BYTES] [-t] [-a ADDR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

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
	struct rdma_cm_id *listen_id, *id;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int server = 0, timed = 0, count = 1000, size = 4096, i;
	char *addr = NULL, *buf;
	double *lat, begin, total;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s"))
			server = 1;
		else if (!strcmp(argv[i], "-t"))
			timed = 1;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			count = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-size") && i + 1 < argc)
			size = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-a") && i + 1 < argc)
			addr = argv[++i];
		else
			addr = argv[i];
	}
	if (!addr || count < 1 || size < 1) {
		fprintf(stderr, "usage: echo [-s] [-n COUNT] [-size BYTES] [-t] ADDR\n");
		return 2;
	}
	buf = malloc(size);
	lat = malloc(count * sizeof *lat);

	memset(&hints, 0, sizeof hints);
	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, "7471", &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	memset(&attr, 0, sizeof attr);
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (rdma_create_ep(server ? &listen_id : &id, res, NULL, &attr)) {
		perror("rdma_create_ep");
		return 1;
	}
	rdma_freeaddrinfo(res);
	if (server) {
		if (rdma_listen(listen_id, 0) || rdma_get_request(listen_id, &id)) {
			perror("rdma_listen");
			return 1;
		}
	}
	mr = rdma_reg_msgs(id, buf, size);
	if (!mr) {
		perror("rdma_reg_msgs");
		return 1;
	}
	if (server) {
		printf("listening\n");
		fflush(stdout);
		if (rdma_post_recv(id, NULL, buf, size, mr) || rdma_accept(id, NULL)) {
			perror("rdma_accept");
			return 1;
		}
		/* A peer's disconnect does not flush the QP: count, not wait. */
		for (i = 0; i < count; i++) {
			if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS ||
			    rdma_post_recv(id, NULL, buf, size, mr) ||
			    rdma_post_send(id, NULL, buf, wc.byte_len, mr, 0) ||
			    rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS) {
				perror("echo");
				return 1;
			}
		}
		printf("server: echoed %d messages\n", i);
		rdma_disconnect(id);
	} else {
		if (rdma_connect(id, NULL)) {
			perror("rdma_connect");
			return 1;
		}
		begin = now();
		for (i = 0; i < count; i++) {
			double start = now();
			if (rdma_post_recv(id, NULL, buf, size, mr) ||
			    rdma_post_send(id, NULL, buf, size, mr, 0) ||
			    rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS ||
			    rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS) {
				perror("echo");
				return 1;
			}
			lat[i] = now() - start;
		}
		total = now() - begin;
		rdma_disconnect(id);
		qsort(lat, count, sizeof lat[0], cmp);
		printf("client: %d x %d B, p50 %.1fus p99 %.1fus max %.1fus\n", count, size,
		       lat[count / 2], lat[count * 99 / 100], lat[count - 1]);
		if (timed)
			printf("time: %d ops, %.3f us/op\n", count, total / count);
	}
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	if (server)
		rdma_destroy_ep(listen_id);
	free(buf);
	free(lat);
	return 0;
}
