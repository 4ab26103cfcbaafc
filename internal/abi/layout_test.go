package abi

// The layout test: generate a C program against the installed uapi headers
// (/usr/include/rdma, from linux-libc-dev), compile it with gcc, and
// compare every sizeof, offsetof, field size and constant it prints with
// the Go definitions. In CI (CI=true) a missing gcc or header fails the
// test; elsewhere it skips.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// cStruct pairs a Go ABI struct with its C name.
type cStruct struct {
	c string
	v any
}

var uverbsStructs = []cStruct{
	{"ib_uverbs_ioctl_hdr", IoctlHdr{}},
	{"ib_uverbs_attr", IoctlAttr{}},
	{"ib_uverbs_cmd_hdr", UverbsCmdHdr{}},
	{"ib_uverbs_ex_cmd_hdr", UverbsExCmdHdr{}},
	{"ib_uverbs_get_context", UverbsGetContext{}},
	{"ib_uverbs_get_context_resp", UverbsGetContextResp{}},
	{"ib_uverbs_query_device_resp", UverbsQueryDeviceResp{}},
	{"ib_uverbs_ex_query_device", UverbsExQueryDevice{}},
	{"ib_uverbs_odp_caps", UverbsOdpCaps{}},
	{"ib_uverbs_rss_caps", UverbsRSSCaps{}},
	{"ib_uverbs_tm_caps", UverbsTMCaps{}},
	{"ib_uverbs_cq_moderation_caps", UverbsCQModerationCaps{}},
	{"ib_uverbs_ex_query_device_resp", UverbsExQueryDeviceResp{}},
	{"ib_uverbs_query_port", UverbsQueryPort{}},
	{"ib_uverbs_query_port_resp", UverbsQueryPortResp{}},
	{"ib_uverbs_query_port_resp_ex", UverbsQueryPortRespEx{}},
	{"ib_uverbs_alloc_pd_resp", UverbsAllocPDResp{}},
	{"ib_uverbs_dealloc_pd", UverbsDeallocPD{}},
	{"ib_uverbs_reg_mr", UverbsRegMR{}},
	{"ib_uverbs_reg_mr_resp", UverbsRegMRResp{}},
	{"ib_uverbs_dereg_mr", UverbsDeregMR{}},
	{"ib_uverbs_create_comp_channel_resp", UverbsCreateCompChannelResp{}},
	{"ib_uverbs_create_cq", UverbsCreateCQ{}},
	{"ib_uverbs_create_cq_resp", UverbsCreateCQResp{}},
	{"ib_uverbs_destroy_cq", UverbsDestroyCQ{}},
	{"ib_uverbs_destroy_cq_resp", UverbsDestroyCQResp{}},
	{"ib_uverbs_poll_cq", UverbsPollCQ{}},
	{"ib_uverbs_wc", UverbsWC{}},
	{"ib_uverbs_poll_cq_resp", UverbsPollCQResp{}},
	{"ib_uverbs_req_notify_cq", UverbsReqNotifyCQ{}},
	{"ib_uverbs_global_route", UverbsGlobalRoute{}},
	{"ib_uverbs_ah_attr", UverbsAHAttr{}},
	{"ib_uverbs_qp_cap", UverbsQPCap{}},
	{"ib_uverbs_create_qp", UverbsCreateQP{}},
	{"ib_uverbs_create_qp_resp", UverbsCreateQPResp{}},
	{"ib_uverbs_qp_dest", UverbsQPDest{}},
	{"ib_uverbs_query_qp", UverbsQueryQP{}},
	{"ib_uverbs_query_qp_resp", UverbsQueryQPResp{}},
	{"ib_uverbs_modify_qp", UverbsModifyQP{}},
	{"ib_uverbs_ex_modify_qp", UverbsExModifyQP{}},
	{"ib_uverbs_ex_modify_qp_resp", UverbsExModifyQPResp{}},
	{"ib_uverbs_destroy_qp", UverbsDestroyQP{}},
	{"ib_uverbs_destroy_qp_resp", UverbsDestroyQPResp{}},
	{"ib_uverbs_sge", UverbsSGE{}},
	{"ib_uverbs_send_wr", UverbsSendWR{}},
	{"ib_uverbs_post_send", UverbsPostSend{}},
	{"ib_uverbs_post_send_resp", UverbsPostSendResp{}},
	{"ib_uverbs_recv_wr", UverbsRecvWR{}},
	{"ib_uverbs_create_ah", UverbsCreateAH{}},
	{"ib_uverbs_create_ah_resp", UverbsCreateAHResp{}},
	{"ib_uverbs_destroy_ah", UverbsDestroyAH{}},
	{"ib_uverbs_async_event_desc", UverbsAsyncEventDesc{}},
	{"ib_uverbs_comp_event_desc", UverbsCompEventDesc{}},
	{"ib_uverbs_gid_entry", UverbsGIDEntry{}},

	{"mminfo", RxeMmapInfo{}},
	{"rxe_create_cq_resp", RxeCreateCQResp{}},
	{"rxe_create_qp_resp", RxeCreateQPResp{}},
	{"rxe_create_ah_resp", RxeCreateAHResp{}},
	{"rxe_sge", RxeSGE{}},
	{"rxe_send_wr", RxeSendWR{}},
	{"rxe_dma_info", RxeDMAInfo{}},
	{"rxe_send_wqe", RxeSendWQE{}},
	{"rxe_recv_wqe", RxeRecvWQE{}},
	{"rxe_queue_buf", RxeQueueBuf{}},

	{"mlx5_ib_alloc_ucontext_req_v2", MLX5AllocUcontextReqV2{}},
	{"mlx5_ib_alloc_ucontext_resp", MLX5AllocUcontextResp{}},
	{"mlx5_ib_create_qp", MLX5CreateQP{}},
	{"mlx5_ib_create_qp_resp", MLX5CreateQPResp{}},
	{"mlx5_ib_modify_qp", MLX5ModifyQP{}},
	{"mlx5_ib_modify_qp_resp", MLX5ModifyQPResp{}},
}

// cConst pairs a C expression with the Go value it must equal.
type cConst struct {
	c string
	v int64
}

var uverbsConsts = []cConst{
	{"RDMA_VERBS_IOCTL", RDMAVerbsIoctl},
	{"IB_USER_VERBS_ABI_VERSION", UverbsABIVersion},
	{"UVERBS_ATTR_F_MANDATORY", AttrFMandatory},
	{"UVERBS_ATTR_F_VALID_OUTPUT", AttrFValidOutput},

	{"IB_USER_VERBS_CMD_GET_CONTEXT", int64(UverbsCmdGetContext)},
	{"IB_USER_VERBS_CMD_QUERY_DEVICE", int64(UverbsCmdQueryDevice)},
	{"IB_USER_VERBS_CMD_QUERY_PORT", int64(UverbsCmdQueryPort)},
	{"IB_USER_VERBS_CMD_ALLOC_PD", int64(UverbsCmdAllocPD)},
	{"IB_USER_VERBS_CMD_DEALLOC_PD", int64(UverbsCmdDeallocPD)},
	{"IB_USER_VERBS_CMD_CREATE_AH", int64(UverbsCmdCreateAH)},
	{"IB_USER_VERBS_CMD_DESTROY_AH", int64(UverbsCmdDestroyAH)},
	{"IB_USER_VERBS_CMD_REG_MR", int64(UverbsCmdRegMR)},
	{"IB_USER_VERBS_CMD_DEREG_MR", int64(UverbsCmdDeregMR)},
	{"IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL", int64(UverbsCmdCreateCompChannel)},
	{"IB_USER_VERBS_CMD_CREATE_CQ", int64(UverbsCmdCreateCQ)},
	{"IB_USER_VERBS_CMD_DESTROY_CQ", int64(UverbsCmdDestroyCQ)},
	{"IB_USER_VERBS_CMD_POLL_CQ", int64(UverbsCmdPollCQ)},
	{"IB_USER_VERBS_CMD_REQ_NOTIFY_CQ", int64(UverbsCmdReqNotifyCQ)},
	{"IB_USER_VERBS_CMD_CREATE_QP", int64(UverbsCmdCreateQP)},
	{"IB_USER_VERBS_CMD_QUERY_QP", int64(UverbsCmdQueryQP)},
	{"IB_USER_VERBS_CMD_MODIFY_QP", int64(UverbsCmdModifyQP)},
	{"IB_USER_VERBS_CMD_DESTROY_QP", int64(UverbsCmdDestroyQP)},
	{"IB_USER_VERBS_CMD_POST_SEND", int64(UverbsCmdPostSend)},
	{"IB_USER_VERBS_CMD_POST_RECV", int64(UverbsCmdPostRecv)},
	{"IB_USER_VERBS_EX_CMD_QUERY_DEVICE", int64(UverbsExCmdQueryDevice)},
	{"IB_USER_VERBS_EX_CMD_MODIFY_QP", int64(UverbsExCmdModifyQP)},
	{"IB_USER_VERBS_CMD_FLAG_EXTENDED", int64(UverbsCmdFlagExtended)},

	{"UVERBS_OBJECT_DEVICE", int64(UverbsObjectDevice)},
	{"UVERBS_OBJECT_PD", int64(UverbsObjectPD)},
	{"UVERBS_OBJECT_COMP_CHANNEL", int64(UverbsObjectCompChannel)},
	{"UVERBS_OBJECT_CQ", int64(UverbsObjectCQ)},
	{"UVERBS_OBJECT_QP", int64(UverbsObjectQP)},
	{"UVERBS_OBJECT_AH", int64(UverbsObjectAH)},
	{"UVERBS_OBJECT_MR", int64(UverbsObjectMR)},
	{"UVERBS_OBJECT_ASYNC_EVENT", int64(UverbsObjectAsyncEvent)},
	{"UVERBS_METHOD_INVOKE_WRITE", int64(UverbsMethodInvokeWrite)},
	{"UVERBS_METHOD_QUERY_PORT", int64(UverbsMethodQueryPort)},
	{"UVERBS_METHOD_GET_CONTEXT", int64(UverbsMethodGetContext)},
	{"UVERBS_METHOD_QUERY_GID_TABLE", int64(UverbsMethodQueryGIDTable)},
	{"UVERBS_METHOD_CQ_CREATE", int64(UverbsMethodCQCreate)},
	{"UVERBS_METHOD_CQ_DESTROY", int64(UverbsMethodCQDestroy)},
	{"UVERBS_METHOD_QP_CREATE", int64(UverbsMethodQPCreate)},
	{"UVERBS_METHOD_QP_DESTROY", int64(UverbsMethodQPDestroy)},
	{"UVERBS_METHOD_PD_DESTROY", int64(UverbsMethodPDDestroy)},
	{"UVERBS_METHOD_AH_DESTROY", int64(UverbsMethodAHDestroy)},
	{"UVERBS_METHOD_MR_DESTROY", int64(UverbsMethodMRDestroy)},
	{"UVERBS_METHOD_ASYNC_EVENT_ALLOC", int64(UverbsMethodAsyncEventAlloc)},

	{"UVERBS_ATTR_UHW_IN", int64(UverbsAttrUHWIn)},
	{"UVERBS_ATTR_UHW_OUT", int64(UverbsAttrUHWOut)},
	{"UVERBS_ATTR_CORE_IN", int64(UverbsAttrCoreIn)},
	{"UVERBS_ATTR_CORE_OUT", int64(UverbsAttrCoreOut)},
	{"UVERBS_ATTR_WRITE_CMD", int64(UverbsAttrWriteCmd)},
	{"UVERBS_ATTR_QUERY_PORT_PORT_NUM", int64(UverbsAttrQueryPortPortNum)},
	{"UVERBS_ATTR_QUERY_PORT_RESP", int64(UverbsAttrQueryPortResp)},
	{"UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS", int64(UverbsAttrGetContextNumCompVectors)},
	{"UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT", int64(UverbsAttrGetContextCoreSupport)},
	{"UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE", int64(UverbsAttrQueryGIDTableEntrySize)},
	{"UVERBS_ATTR_QUERY_GID_TABLE_FLAGS", int64(UverbsAttrQueryGIDTableFlags)},
	{"UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES", int64(UverbsAttrQueryGIDTableRespEntries)},
	{"UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES", int64(UverbsAttrQueryGIDTableRespNumEntries)},
	{"UVERBS_ATTR_CREATE_CQ_HANDLE", int64(UverbsAttrCreateCQHandle)},
	{"UVERBS_ATTR_CREATE_CQ_CQE", int64(UverbsAttrCreateCQCQE)},
	{"UVERBS_ATTR_CREATE_CQ_USER_HANDLE", int64(UverbsAttrCreateCQUserHandle)},
	{"UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL", int64(UverbsAttrCreateCQCompChannel)},
	{"UVERBS_ATTR_CREATE_CQ_COMP_VECTOR", int64(UverbsAttrCreateCQCompVector)},
	{"UVERBS_ATTR_CREATE_CQ_FLAGS", int64(UverbsAttrCreateCQFlags)},
	{"UVERBS_ATTR_CREATE_CQ_RESP_CQE", int64(UverbsAttrCreateCQRespCQE)},
	{"UVERBS_ATTR_CREATE_CQ_EVENT_FD", int64(UverbsAttrCreateCQEventFD)},
	{"UVERBS_ATTR_DESTROY_CQ_HANDLE", int64(UverbsAttrDestroyCQHandle)},
	{"UVERBS_ATTR_DESTROY_CQ_RESP", int64(UverbsAttrDestroyCQResp)},
	{"UVERBS_ATTR_CREATE_QP_HANDLE", int64(UverbsAttrCreateQPHandle)},
	{"UVERBS_ATTR_CREATE_QP_PD_HANDLE", int64(UverbsAttrCreateQPPDHandle)},
	{"UVERBS_ATTR_CREATE_QP_SRQ_HANDLE", int64(UverbsAttrCreateQPSRQHandle)},
	{"UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE", int64(UverbsAttrCreateQPSendCQHandle)},
	{"UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE", int64(UverbsAttrCreateQPRecvCQHandle)},
	{"UVERBS_ATTR_CREATE_QP_USER_HANDLE", int64(UverbsAttrCreateQPUserHandle)},
	{"UVERBS_ATTR_CREATE_QP_CAP", int64(UverbsAttrCreateQPCap)},
	{"UVERBS_ATTR_CREATE_QP_TYPE", int64(UverbsAttrCreateQPType)},
	{"UVERBS_ATTR_CREATE_QP_FLAGS", int64(UverbsAttrCreateQPFlags)},
	{"UVERBS_ATTR_CREATE_QP_EVENT_FD", int64(UverbsAttrCreateQPEventFD)},
	{"UVERBS_ATTR_CREATE_QP_RESP_CAP", int64(UverbsAttrCreateQPRespCap)},
	{"UVERBS_ATTR_CREATE_QP_RESP_QP_NUM", int64(UverbsAttrCreateQPRespQPNum)},
	{"UVERBS_ATTR_DESTROY_QP_HANDLE", int64(UverbsAttrDestroyQPHandle)},
	{"UVERBS_ATTR_DESTROY_QP_RESP", int64(UverbsAttrDestroyQPResp)},
	{"UVERBS_ATTR_DESTROY_PD_HANDLE", int64(UverbsAttrDestroyPDHandle)},
	{"UVERBS_ATTR_DESTROY_AH_HANDLE", int64(UverbsAttrDestroyAHHandle)},
	{"UVERBS_ATTR_DESTROY_MR_HANDLE", int64(UverbsAttrDestroyMRHandle)},
	{"UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE", int64(UverbsAttrAsyncEventAllocFDHandle)},

	{"IB_UVERBS_QPT_RC", int64(UverbsQPTRC)},
	{"IB_UVERBS_QPT_UC", int64(UverbsQPTUC)},
	{"IB_UVERBS_QPT_UD", int64(UverbsQPTUD)},
	{"IB_UVERBS_QP_CREATE_SQ_SIG_ALL", int64(UverbsQPCreateSQSigAll)},
	{"IB_UVERBS_GID_TYPE_IB", int64(UverbsGIDTypeIB)},
	{"IB_UVERBS_GID_TYPE_ROCE_V1", int64(UverbsGIDTypeRoCEv1)},
	{"IB_UVERBS_GID_TYPE_ROCE_V2", int64(UverbsGIDTypeRoCEv2)},
	{"RDMA_DRIVER_UNKNOWN", int64(RDMADriverUnknown)},
	{"RDMA_DRIVER_MLX5", int64(RDMADriverMLX5)},
	{"RDMA_DRIVER_RXE", int64(RDMADriverRXE)},
	{"RDMA_DRIVER_SIW", int64(RDMADriverSIW)},
	{"IB_UVERBS_WR_RDMA_WRITE", int64(UverbsWRRDMAWrite)},
	{"IB_UVERBS_WR_RDMA_WRITE_WITH_IMM", int64(UverbsWRRDMAWriteWithImm)},
	{"IB_UVERBS_WR_SEND", int64(UverbsWRSend)},
	{"IB_UVERBS_WR_SEND_WITH_IMM", int64(UverbsWRSendWithImm)},
	{"IB_UVERBS_WR_RDMA_READ", int64(UverbsWRRDMARead)},
	{"IB_UVERBS_WC_SEND", int64(UverbsWCSend)},
	{"IB_UVERBS_WC_RDMA_WRITE", int64(UverbsWCRDMAWrite)},
	{"IB_UVERBS_WC_RDMA_READ", int64(UverbsWCRDMARead)},
	{"IB_UVERBS_ACCESS_LOCAL_WRITE", int64(UverbsAccessLocalWrite)},
	{"IB_UVERBS_ACCESS_REMOTE_WRITE", int64(UverbsAccessRemoteWrite)},
	{"IB_UVERBS_ACCESS_REMOTE_READ", int64(UverbsAccessRemoteRead)},
	{"IB_UVERBS_ACCESS_REMOTE_ATOMIC", int64(UverbsAccessRemoteAtomic)},

	{"RXE_NETWORK_TYPE_IPV4", 1},
	{"offsetof(struct rxe_send_wr, wr.rdma.remote_addr)", RxeWRRDMARemoteAddr},
	{"offsetof(struct rxe_send_wr, wr.rdma.rkey)", RxeWRRDMARKey},
	{"offsetof(struct rxe_send_wr, wr.ud.remote_qpn)", RxeWRUDRemoteQPN},
	{"offsetof(struct rxe_send_wr, wr.ud.remote_qkey)", RxeWRUDRemoteQKey},
	{"offsetof(struct rxe_send_wr, wr.ud.pkey_index)", RxeWRUDPKeyIndex},
	{"offsetof(struct rxe_send_wr, wr.ud.ah_num)", RxeWRUDAHNum},
	{"offsetof(struct rxe_send_wr, wr.atomic.remote_addr)", RxeWRAtomicRemoteAddr},
	{"offsetof(struct rxe_send_wr, wr.atomic.compare_add)", RxeWRAtomicCompareAdd},
	{"offsetof(struct rxe_send_wr, wr.atomic.swap)", RxeWRAtomicSwap},
	{"offsetof(struct rxe_send_wr, wr.atomic.rkey)", RxeWRAtomicRKey},
	{"offsetof(struct rxe_queue_buf, producer_index)", RxeQueueProducerOff},
	{"offsetof(struct rxe_queue_buf, consumer_index)", RxeQueueConsumerOff},
	{"offsetof(struct rxe_queue_buf, data)", RxeQueueDataOff},
	{"offsetof(struct rxe_send_wqe, dma.sge)", 208},
	{"offsetof(struct rxe_recv_wqe, dma.sge)", 40},

	{"MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE", int64(MLX5AllocUcontextRespMaskECE)},

	{"NETLINK_RDMA", NetlinkRDMA},
	{"RDMA_NL_NLDEV", RDMANLNldev},
	{"RDMA_NLDEV_CMD_GET", RDMANldevCmdGet},
	{"RDMA_NLDEV_CMD_GET_CHARDEV", RDMANldevCmdGetChardev},
	{"RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV)", int64(RDMANLType(RDMANLNldev, RDMANldevCmdGetChardev))},
	{"RDMA_NLDEV_ATTR_DEV_INDEX", RDMANldevAttrDevIndex},
	{"RDMA_NLDEV_ATTR_DEV_NAME", RDMANldevAttrDevName},
	{"RDMA_NLDEV_ATTR_CHARDEV_TYPE", RDMANldevAttrChardevType},
	{"RDMA_NLDEV_ATTR_CHARDEV_NAME", RDMANldevAttrChardevName},
	{"RDMA_NLDEV_ATTR_CHARDEV_ABI", RDMANldevAttrChardevABI},
	{"RDMA_NLDEV_ATTR_CHARDEV", RDMANldevAttrChardev},
	{"RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID", RDMANldevAttrUverbsDriverID},
}

// cHeaders are the uapi headers the program includes.
var cHeaders = []string{
	"rdma/ib_user_verbs.h", "rdma/ib_user_ioctl_cmds.h", "rdma/ib_user_ioctl_verbs.h",
	"rdma/rdma_user_ioctl.h", "rdma/rdma_user_ioctl_cmds.h", "rdma/rdma_user_rxe.h",
	"rdma/mlx5-abi.h", "rdma/rdma_netlink.h", "linux/netlink.h",
}

// goField is one checked field of a Go ABI struct.
type goField struct {
	goName, cName string
	off, size     uintptr
}

// cFieldName maps a Go field name to the C one: the `c` tag when present,
// else CamelCase split at word boundaries ("PDHandle" → "pd_handle").
func cFieldName(f reflect.StructField) string {
	if tag, ok := f.Tag.Lookup("c"); ok {
		return tag
	}
	r := []rune(f.Name)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// checkedFields lists the fields of t that exist in C (blank and `c:"-"`
// fields are padding with no C counterpart).
func checkedFields(t reflect.Type) []goField {
	var out []goField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := cFieldName(f)
		if f.Name == "_" || name == "-" {
			continue
		}
		out = append(out, goField{f.Name, name, f.Offset, f.Type.Size()})
	}
	return out
}

func cProgram() string {
	var b strings.Builder
	b.WriteString("#include <stddef.h>\n#include <stdio.h>\n")
	for _, h := range cHeaders {
		fmt.Fprintf(&b, "#include <%s>\n", h)
	}
	b.WriteString("int main(void) {\n")
	for _, s := range uverbsStructs {
		fmt.Fprintf(&b, "\tprintf(\"S %s %%zu\\n\", sizeof(struct %s));\n", s.c, s.c)
		for _, f := range checkedFields(reflect.TypeOf(s.v)) {
			fmt.Fprintf(&b, "\tprintf(\"F %s %s %%zu %%zu\\n\", offsetof(struct %s, %s), sizeof(((struct %s *)0)->%s));\n",
				s.c, f.cName, s.c, f.cName, s.c, f.cName)
		}
	}
	for i, c := range uverbsConsts {
		fmt.Fprintf(&b, "\tprintf(\"C %d %%lld\\n\", (long long)(%s));\n", i, c.c)
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.String()
}

// inCI reports whether the test runs in CI, where missing tools fail.
func inCI() bool { return os.Getenv("CI") == "true" }

func needTool(t *testing.T, what string, err error) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI=true and %s is missing: %v (install gcc and linux-libc-dev)", what, err)
	}
	t.Skipf("%s missing (%v); install gcc and linux-libc-dev (required when CI=true)", what, err)
}

// cLayout compiles and runs the generated program, once per test binary.
func cLayout(t *testing.T) map[string]string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		needTool(t, "gcc", err)
	}
	for _, h := range cHeaders {
		if _, err := os.Stat(filepath.Join("/usr/include", h)); err != nil {
			needTool(t, "/usr/include/"+h, err)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(src, []byte(cProgram()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	if out, err := exec.Command(gcc, "-std=gnu11", "-Wall", "-Werror", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("layout program: %v", err)
	}
	res := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 {
			t.Fatalf("bad line %q", sc.Text())
		}
		key := f[0] + " " + f[1]
		if f[0] == "F" {
			g := strings.SplitN(f[2], " ", 2)
			key += " " + g[0]
			f[2] = g[1]
		}
		res[key] = f[2]
	}
	return res
}

func TestLayoutAgainstCHeaders(t *testing.T) {
	c := cLayout(t)
	checked := 0
	for _, s := range uverbsStructs {
		typ := reflect.TypeOf(s.v)
		if got, want := strconv.FormatUint(uint64(typ.Size()), 10), c["S "+s.c]; got != want {
			t.Errorf("sizeof(struct %s) = %s, Go %s = %s", s.c, want, typ.Name(), got)
		}
		for _, f := range checkedFields(typ) {
			want := c["F "+s.c+" "+f.cName]
			got := fmt.Sprintf("%d %d", f.off, f.size)
			if got != want {
				t.Errorf("struct %s.%s: C offset/size %s, Go %s.%s %s", s.c, f.cName, want, typ.Name(), f.goName, got)
			}
			checked++
		}
	}
	for i, k := range uverbsConsts {
		want := c[fmt.Sprintf("C %d", i)]
		if got := strconv.FormatInt(k.v, 10); got != want {
			t.Errorf("%s = %s in C, %s in Go", k.c, want, got)
		}
	}
	t.Logf("%d structs, %d fields, %d constants match the installed headers", len(uverbsStructs), checked, len(uverbsConsts))
}
