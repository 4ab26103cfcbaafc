package abi

// The ucma (rdma_cm user ABI) structs and constants, checked by
// TestLayoutAgainstCHeaders against /usr/include/rdma/rdma_user_cm.h.

import (
	"testing"
	"unsafe"
)

func init() {
	cHeaders = append(cHeaders, "rdma/rdma_user_cm.h", "rdma/ib_user_sa.h")
	uverbsStructs = append(uverbsStructs, ucmaStructs...)
	uverbsConsts = append(uverbsConsts, ucmaConsts...)
}

var ucmaStructs = []cStruct{
	{"rdma_ucm_cmd_hdr", UcmaCmdHdr{}},
	{"rdma_ucm_create_id", UcmaCreateID{}},
	{"rdma_ucm_create_id_resp", UcmaCreateIDResp{}},
	{"rdma_ucm_destroy_id", UcmaDestroyID{}},
	{"rdma_ucm_destroy_id_resp", UcmaDestroyIDResp{}},
	{"rdma_ucm_bind_ip", UcmaBindIP{}},
	{"rdma_ucm_bind", UcmaBind{}},
	{"rdma_ucm_resolve_ip", UcmaResolveIP{}},
	{"rdma_ucm_resolve_addr", UcmaResolveAddr{}},
	{"rdma_ucm_resolve_route", UcmaResolveRoute{}},
	{"rdma_ucm_query", UcmaQuery{}},
	{"ib_user_path_rec", UcmaUserPathRec{}},
	{"rdma_ucm_query_route_resp", UcmaQueryRouteResp{}},
	{"rdma_ucm_query_addr_resp", UcmaQueryAddrResp{}},
	{"rdma_ucm_query_path_resp", UcmaQueryPathResp{}},
	{"ib_path_rec_data", UcmaPathRecData{}},
	{"rdma_ucm_conn_param", UcmaConnParam{}},
	{"ib_uverbs_ah_attr", UcmaAHAttr{}},
	{"rdma_ucm_ud_param", UcmaUDParam{}},
	{"rdma_ucm_ece", UcmaECE{}},
	{"rdma_ucm_connect", UcmaConnect{}},
	{"rdma_ucm_listen", UcmaListen{}},
	{"rdma_ucm_accept", UcmaAccept{}},
	{"rdma_ucm_reject", UcmaReject{}},
	{"rdma_ucm_disconnect", UcmaDisconnect{}},
	{"rdma_ucm_init_qp_attr", UcmaInitQPAttr{}},
	{"ib_uverbs_qp_attr", UcmaQPAttr{}},
	{"rdma_ucm_notify", UcmaNotify{}},
	{"rdma_ucm_join_ip_mcast", UcmaJoinIPMcast{}},
	{"rdma_ucm_join_mcast", UcmaJoinMcast{}},
	{"rdma_ucm_get_event", UcmaGetEvent{}},
	{"rdma_ucm_event_resp", UcmaEventResp{}},
	{"rdma_ucm_set_option", UcmaSetOption{}},
	{"rdma_ucm_migrate_id", UcmaMigrateID{}},
	{"rdma_ucm_migrate_resp", UcmaMigrateResp{}},
}

var ucmaConsts = []cConst{
	{"RDMA_USER_CM_ABI_VERSION", UcmaABIVersion},
	{"RDMA_MAX_PRIVATE_DATA", UcmaMaxPrivateData},
	{"RDMA_USER_CM_CMD_CREATE_ID", int64(UcmaCmdCreateID)},
	{"RDMA_USER_CM_CMD_DESTROY_ID", int64(UcmaCmdDestroyID)},
	{"RDMA_USER_CM_CMD_BIND_IP", int64(UcmaCmdBindIP)},
	{"RDMA_USER_CM_CMD_RESOLVE_IP", int64(UcmaCmdResolveIP)},
	{"RDMA_USER_CM_CMD_RESOLVE_ROUTE", int64(UcmaCmdResolveRoute)},
	{"RDMA_USER_CM_CMD_QUERY_ROUTE", int64(UcmaCmdQueryRoute)},
	{"RDMA_USER_CM_CMD_CONNECT", int64(UcmaCmdConnect)},
	{"RDMA_USER_CM_CMD_LISTEN", int64(UcmaCmdListen)},
	{"RDMA_USER_CM_CMD_ACCEPT", int64(UcmaCmdAccept)},
	{"RDMA_USER_CM_CMD_REJECT", int64(UcmaCmdReject)},
	{"RDMA_USER_CM_CMD_DISCONNECT", int64(UcmaCmdDisconnect)},
	{"RDMA_USER_CM_CMD_INIT_QP_ATTR", int64(UcmaCmdInitQPAttr)},
	{"RDMA_USER_CM_CMD_GET_EVENT", int64(UcmaCmdGetEvent)},
	{"RDMA_USER_CM_CMD_GET_OPTION", int64(UcmaCmdGetOption)},
	{"RDMA_USER_CM_CMD_SET_OPTION", int64(UcmaCmdSetOption)},
	{"RDMA_USER_CM_CMD_NOTIFY", int64(UcmaCmdNotify)},
	{"RDMA_USER_CM_CMD_JOIN_IP_MCAST", int64(UcmaCmdJoinIPMcast)},
	{"RDMA_USER_CM_CMD_LEAVE_MCAST", int64(UcmaCmdLeaveMcast)},
	{"RDMA_USER_CM_CMD_MIGRATE_ID", int64(UcmaCmdMigrateID)},
	{"RDMA_USER_CM_CMD_QUERY", int64(UcmaCmdQuery)},
	{"RDMA_USER_CM_CMD_BIND", int64(UcmaCmdBind)},
	{"RDMA_USER_CM_CMD_RESOLVE_ADDR", int64(UcmaCmdResolveAddr)},
	{"RDMA_USER_CM_CMD_JOIN_MCAST", int64(UcmaCmdJoinMcast)},
	{"RDMA_PS_IPOIB", int64(UcmaPSIPoIB)},
	{"RDMA_PS_IB", int64(UcmaPSIB)},
	{"RDMA_PS_TCP", int64(UcmaPSTCP)},
	{"RDMA_PS_UDP", int64(UcmaPSUDP)},
	{"RDMA_USER_CM_QUERY_ADDR", int64(UcmaQueryAddr)},
	{"RDMA_USER_CM_QUERY_PATH", int64(UcmaQueryPath)},
	{"RDMA_USER_CM_QUERY_GID", int64(UcmaQueryGID)},
	{"RDMA_OPTION_ID", int64(UcmaOptionLevelID)},
	{"RDMA_OPTION_IB", int64(UcmaOptionLevelIB)},
	{"RDMA_OPTION_ID_TOS", int64(UcmaOptionIDTOS)},
	{"RDMA_OPTION_ID_REUSEADDR", int64(UcmaOptionIDReuseAddr)},
	{"RDMA_OPTION_ID_AFONLY", int64(UcmaOptionIDAFOnly)},
	{"RDMA_OPTION_ID_ACK_TIMEOUT", int64(UcmaOptionIDAckTimeout)},
	{"RDMA_OPTION_IB_PATH", int64(UcmaOptionIBPath)},
	{"RDMA_MC_JOIN_FLAG_FULLMEMBER", int64(UcmaMcJoinFullMember)},
	{"RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER", int64(UcmaMcJoinSendOnlyFullMember)},
	{"IB_PATH_PRIMARY", int64(UcmaPathPrimary)},
	{"IB_PATH_GMP", int64(UcmaPathGMP)},
	{"IB_PATH_ALTERNATE", int64(UcmaPathAlternate)},
	{"IB_PATH_OUTBOUND", int64(UcmaPathOutbound)},
	{"IB_PATH_INBOUND", int64(UcmaPathInbound)},
	{"IB_PATH_INBOUND_REVERSE", int64(UcmaPathInboundRev)},
	{"IB_PATH_BIDIRECTIONAL", int64(UcmaPathBidirectional)},
	{"sizeof(struct sockaddr_in6)", SizeofSockaddrIn6},
	{"sizeof(struct __kernel_sockaddr_storage)", SizeofSockaddrStorage},
	// GET_EVENT: the full response, ECE at 328, and the shortest
	// response the kernel accepts (ucma_get_event).
	{"sizeof(struct rdma_ucm_event_resp)", SizeofUcmaEventResp},
	{"offsetof(struct rdma_ucm_event_resp, ece)", OffsetofUcmaEventRespECE},
	{"offsetof(struct rdma_ucm_event_resp, ece.attr_mod)", OffsetofUcmaEventRespECE + 4},
	{"offsetof(struct rdma_ucm_event_resp, param.conn.private_data_len)", 284},
	{"offsetof(struct rdma_ucm_event_resp, param.ud.private_data_len)", 316},
	{"sizeof(struct rdma_ucm_event_resp) - sizeof(__u32) - sizeof(struct rdma_ucm_ece)", UcmaGetEventMinOut},
	{"offsetof(struct rdma_ucm_connect, ece)", OffsetofUcmaConnectECE},
	{"offsetof(struct rdma_ucm_accept, ece)", OffsetofUcmaAcceptECE},
	{"offsetof(struct rdma_ucm_connect, reserved) + sizeof(__u32)", OffsetofUcmaConnectNoECE},
	{"offsetof(struct rdma_ucm_accept, reserved) + sizeof(__u32)", OffsetofUcmaAcceptNoECE},
}

// TestUcmaSizeConstants pins the exported Sizeof constants to the Go
// structs (the C side is checked by TestLayoutAgainstCHeaders), so code
// using the constants agrees with both.
func TestUcmaSizeConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"UcmaCmdHdr", unsafe.Sizeof(UcmaCmdHdr{}), SizeofUcmaCmdHdr},
		{"UcmaCreateID", unsafe.Sizeof(UcmaCreateID{}), SizeofUcmaCreateID},
		{"UcmaDestroyID", unsafe.Sizeof(UcmaDestroyID{}), SizeofUcmaDestroyID},
		{"UcmaBindIP", unsafe.Sizeof(UcmaBindIP{}), SizeofUcmaBindIP},
		{"UcmaBind", unsafe.Sizeof(UcmaBind{}), SizeofUcmaBind},
		{"UcmaResolveIP", unsafe.Sizeof(UcmaResolveIP{}), SizeofUcmaResolveIP},
		{"UcmaResolveAddr", unsafe.Sizeof(UcmaResolveAddr{}), SizeofUcmaResolveAddr},
		{"UcmaResolveRoute", unsafe.Sizeof(UcmaResolveRoute{}), SizeofUcmaResolveRoute},
		{"UcmaQuery", unsafe.Sizeof(UcmaQuery{}), SizeofUcmaQuery},
		{"UcmaUserPathRec", unsafe.Sizeof(UcmaUserPathRec{}), SizeofUcmaUserPathRec},
		{"UcmaQueryRouteResp", unsafe.Sizeof(UcmaQueryRouteResp{}), SizeofUcmaQueryRouteResp},
		{"UcmaQueryAddrResp", unsafe.Sizeof(UcmaQueryAddrResp{}), SizeofUcmaQueryAddrResp},
		{"UcmaQueryPathResp", unsafe.Sizeof(UcmaQueryPathResp{}), SizeofUcmaQueryPathResp},
		{"UcmaPathRecData", unsafe.Sizeof(UcmaPathRecData{}), SizeofUcmaPathRecData},
		{"UcmaConnParam", unsafe.Sizeof(UcmaConnParam{}), SizeofUcmaConnParam},
		{"UcmaAHAttr", unsafe.Sizeof(UcmaAHAttr{}), SizeofUcmaAHAttr},
		{"UcmaUDParam", unsafe.Sizeof(UcmaUDParam{}), SizeofUcmaUDParam},
		{"UcmaECE", unsafe.Sizeof(UcmaECE{}), SizeofUcmaECE},
		{"UcmaConnect", unsafe.Sizeof(UcmaConnect{}), SizeofUcmaConnect},
		{"UcmaListen", unsafe.Sizeof(UcmaListen{}), SizeofUcmaListen},
		{"UcmaAccept", unsafe.Sizeof(UcmaAccept{}), SizeofUcmaAccept},
		{"UcmaReject", unsafe.Sizeof(UcmaReject{}), SizeofUcmaReject},
		{"UcmaDisconnect", unsafe.Sizeof(UcmaDisconnect{}), SizeofUcmaDisconnect},
		{"UcmaInitQPAttr", unsafe.Sizeof(UcmaInitQPAttr{}), SizeofUcmaInitQPAttr},
		{"UcmaQPAttr", unsafe.Sizeof(UcmaQPAttr{}), SizeofUcmaQPAttr},
		{"UcmaNotify", unsafe.Sizeof(UcmaNotify{}), SizeofUcmaNotify},
		{"UcmaJoinIPMcast", unsafe.Sizeof(UcmaJoinIPMcast{}), SizeofUcmaJoinIPMcast},
		{"UcmaJoinMcast", unsafe.Sizeof(UcmaJoinMcast{}), SizeofUcmaJoinMcast},
		{"UcmaGetEvent", unsafe.Sizeof(UcmaGetEvent{}), SizeofUcmaGetEvent},
		{"UcmaEventResp", unsafe.Sizeof(UcmaEventResp{}), SizeofUcmaEventResp},
		{"UcmaEventResp.ECE", unsafe.Offsetof(UcmaEventResp{}.ECE), OffsetofUcmaEventRespECE},
		{"UcmaConnect.ECE", unsafe.Offsetof(UcmaConnect{}.ECE), OffsetofUcmaConnectECE},
		{"UcmaAccept.ECE", unsafe.Offsetof(UcmaAccept{}.ECE), OffsetofUcmaAcceptECE},
		{"UcmaSetOption", unsafe.Sizeof(UcmaSetOption{}), SizeofUcmaSetOption},
		{"UcmaMigrateID", unsafe.Sizeof(UcmaMigrateID{}), SizeofUcmaMigrateID},
		{"UcmaMigrateResp", unsafe.Sizeof(UcmaMigrateResp{}), SizeofUcmaMigrateResp},
		{"UcmaCreateIDResp", unsafe.Sizeof(UcmaCreateIDResp{}), SizeofUcmaCreateIDResp},
		{"UcmaDestroyIDResp", unsafe.Sizeof(UcmaDestroyIDResp{}), SizeofUcmaDestroyIDResp},
	} {
		if c.got != c.want {
			t.Errorf("%s: Go %d, constant %d", c.name, c.got, c.want)
		}
	}
}
