// Package qp models the InfiniBand queue-pair state machine: QP states and
// types, the attribute mask of Modify QP, the attribute values, and the
// rules for which attributes each transition requires or allows (IBTA
// vol. 1 §10.3 QP states, and the verbs chapter 11 "Modify Queue Pair"
// with its table of QP state transition properties). It also builds the attributes of a
// connection from the parameters of a CM exchange, as the kernel's
// INIT_QP_ATTR does.
//
// The package is pure Go: no syscalls, no unsafe. The uverbs layer turns
// an Attr and Mask into struct ib_uverbs_modify_qp.
//
// # Whose rules
//
// The kernel decides, so the table follows Linux
// (drivers/infiniband/core/verbs.c, qp_state_table and ib_modify_qp_is_ok)
// where it and the IBTA summary differ:
//
//   - RESET→RESET and ERR→ERR are legal (no attributes).
//   - RESET→ERR is illegal: the Linux table has no entry for it, so the
//     kernel answers EINVAL even though "any state → Error" is the usual
//     summary of IBTA.
//   - SQE→RTS is legal for every type, RC included, with no optional
//     attributes for RC. IBTA never puts an RC QP into SQE (a send error
//     on RC goes to ERR); Linux keeps the entry valid for all types.
//   - RTR→RTR and SQE→SQE are illegal. A modify without MaskState means
//     "stay in the current state", so it is only legal in RESET, INIT,
//     RTS, SQD and ERR.
//   - CUR_STATE is accepted only from RTR, RTS, SQD and SQE, and only
//     where the table lists it as optional.
//   - RATE_LIMIT is optional only for raw packet QPs (RTR→RTS, RTS→RTS),
//     so it is forbidden for RC, UC and UD.
//   - 3.x kernels took the link layer as an argument and required extra
//     RoCE-only bits (SMAC, VID: mask bits 21–24). Modern kernels resolve the destination MAC themselves
//     from the GID in _ib_modify_qp, require the GRH on RoCE address
//     vectors, and reject ALT_PATH on RoCE with EINVAL. Those checks need
//     the port's link layer, which this package does not know.
//   - The kernel masks PSNs wider than 24 bits with a warning; Check
//     rejects them instead.
//
// GSI (QP1) is included because it is cheap: it is UD-like, but its port
// is fixed at creation, so RESET→INIT requires only PKEY_INDEX and QKEY.
// User space cannot create GSI QPs through uverbs.
package qp
