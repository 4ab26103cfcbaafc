/* RC echo of 1,000 x 4 KiB messages with latency percentiles, with
 * librdmacm's rdma_verbs.h (the Go twin is examples/echo).
 * cc -o echo echo.c -lrdmacm -libverbs; echo -s 192.0.2.1 / echo 192.0.2.1 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define COUNT 1000
#define SIZE 4096

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
	static double lat[COUNT];
	int server = argc > 2 && !strcmp(argv[1], "-s"), i, ret;
	char *buf = malloc(SIZE);

	memset(&hints, 0, sizeof hints);
	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(argv[argc - 1], "7471", &hints, &res)) {
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
	mr = rdma_reg_msgs(id, buf, SIZE);
	if (!mr) {
		perror("rdma_reg_msgs");
		return 1;
	}
	if (server) {
		printf("listening\n");
		fflush(stdout);
		if (rdma_post_recv(id, NULL, buf, SIZE, mr) || rdma_accept(id, NULL)) {
			perror("rdma_accept");
			return 1;
		}
		for (i = 0;; i++) {
			ret = rdma_get_recv_comp(id, &wc);
			if (ret <= 0 || wc.status != IBV_WC_SUCCESS)
				break;
			if (rdma_post_recv(id, NULL, buf, SIZE, mr) ||
			    rdma_post_send(id, NULL, buf, wc.byte_len, mr, 0) ||
			    rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS) {
				perror("echo");
				return 1;
			}
		}
		printf("server: echoed %d messages\n", i);
	} else {
		if (rdma_connect(id, NULL)) {
			perror("rdma_connect");
			return 1;
		}
		for (i = 0; i < COUNT; i++) {
			double start = now();
			if (rdma_post_recv(id, NULL, buf, SIZE, mr) ||
			    rdma_post_send(id, NULL, buf, SIZE, mr, 0) ||
			    rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS ||
			    rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS) {
				perror("echo");
				return 1;
			}
			lat[i] = now() - start;
		}
		rdma_disconnect(id);
		qsort(lat, COUNT, sizeof lat[0], cmp);
		printf("client: %d x %d B, p50 %.1fus p99 %.1fus max %.1fus\n", COUNT, SIZE,
		       lat[COUNT / 2], lat[COUNT * 99 / 100], lat[COUNT - 1]);
	}
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	if (server)
		rdma_destroy_ep(listen_id);
	free(buf);
	return 0;
}
