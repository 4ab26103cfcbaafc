/* The rdma_set_local_ece(3) flow with an application QP, with librdmacm
 * (the Go twin is examples/ece): the client offers an ECE in the REQ, the
 * server answers the intersection in the REP.
 * cc -o ece ece.c -lrdmacm -libverbs; ece -s 0x10000001 192.0.2.1 / ece 0x30000001 192.0.2.1 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static int modify(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr;
	int mask;

	attr.qp_state = state;
	if (rdma_init_qp_attr(id, &attr, &mask))
		return -1;
	return ibv_modify_qp(qp, &attr, mask);
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param param;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_ece local = { 0x15b3, 0, 0 }, remote;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int server = argc > 3 && !strcmp(argv[1], "-s");

	local.options = strtoul(argv[argc - 2], NULL, 0);
	memset(&hints, 0, sizeof hints);
	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(argv[argc - 1], "7473", &hints, &res) ||
	    rdma_create_ep(server ? &listen_id : &id, res, NULL, NULL)) {
		perror("rdma_create_ep");
		return 1;
	}
	rdma_freeaddrinfo(res);
	if (server && (rdma_listen(listen_id, 0) || rdma_get_request(listen_id, &id))) {
		perror("rdma_listen");
		return 1;
	}
	/* 1. the application's QP */
	cq = ibv_create_cq(id->verbs, 2, NULL, NULL, 0);
	memset(&attr, 0, sizeof attr);
	attr.send_cq = attr.recv_cq = cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	qp = ibv_create_qp(id->pd, &attr);
	if (!cq || !qp) {
		perror("ibv_create_qp");
		return 1;
	}
	memset(&param, 0, sizeof param);
	param.qp_num = qp->qp_num;
	param.responder_resources = param.initiator_depth = 1;
	param.retry_count = param.rnr_retry_count = 7;
	if (server) {
		/* 5-7: the offer to the QP (rxe: not supported), INIT, RTR, RTS */
		rdma_get_remote_ece(id, &remote);
		ibv_set_ece(qp, &remote);
		if (modify(id, qp, IBV_QPS_INIT) || modify(id, qp, IBV_QPS_RTR) ||
		    modify(id, qp, IBV_QPS_RTS)) {
			perror("ibv_modify_qp");
			return 1;
		}
		/* 3, 8: the answer, then accept */
		if (ibv_query_ece(qp, &local))
			local.options &= remote.options;
		printf("listening\n");
		fflush(stdout);
		if (rdma_set_local_ece(id, &local) || rdma_accept(id, &param)) {
			perror("rdma_accept");
			return 1;
		}
	} else {
		/* 2-4: the QP's ECE (rxe: none, send ours), INIT, connect */
		ibv_query_ece(qp, &local);
		if (rdma_set_local_ece(id, &local) || modify(id, qp, IBV_QPS_INIT) ||
		    rdma_connect(id, &param)) {
			perror("rdma_connect");
			return 1;
		}
		/* 5-8: the answer to the QP, RTR, RTS, establish */
		rdma_get_remote_ece(id, &remote);
		ibv_set_ece(qp, &remote);
		if (modify(id, qp, IBV_QPS_RTR) || modify(id, qp, IBV_QPS_RTS) ||
		    rdma_establish(id)) {
			perror("rdma_establish");
			return 1;
		}
	}
	rdma_get_remote_ece(id, &remote);
	printf("sent vendor=%#x options=%#x, received vendor=%#x options=%#x\n",
	       local.vendor_id, local.options, remote.vendor_id, remote.options);
	if (server) { /* until the client disconnects */
		struct rdma_cm_event *ev;
		if (!rdma_get_cm_event(id->channel, &ev))
			rdma_ack_cm_event(ev);
	} else {
		rdma_disconnect(id);
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	rdma_destroy_ep(id);
	if (server)
		rdma_destroy_ep(listen_id);
	return 0;
}
