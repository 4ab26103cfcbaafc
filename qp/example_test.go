package qp_test

import (
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/qp"
)

// Validate checks a Modify QP mask against the state table before any
// syscall, as the kernel's ib_modify_qp_is_ok does. RESET to INIT on an RC
// QP needs the P_Key index, the port and the access flags; INIT to RTR
// needs the address vector, path MTU, destination QPN, receive PSN, the
// responder resources and the RNR timer, and allows no send-side PSN.
func ExampleValidate() {
	toInit := qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort | qp.MaskAccessFlags
	fmt.Println("RESET->INIT:", qp.Validate(qp.RC, qp.Reset, qp.Init, toInit))

	toRTR := qp.MaskState | qp.MaskAV | qp.MaskPathMTU | qp.MaskDestQPN | qp.MaskSQPSN
	err := qp.Validate(qp.RC, qp.Init, qp.RTR, toRTR)
	fmt.Println("INIT->RTR:", err)
	fmt.Println(errors.Is(err, qp.ErrMissingAttr), errors.Is(err, qp.ErrForbiddenAttr))

	var te *qp.TransitionError
	if errors.As(err, &te) {
		fmt.Println("missing:", te.Missing)
	}

	// Output:
	// RESET->INIT: <nil>
	// INIT->RTR: qp: RC INIT→RTR: missing RQ_PSN, MIN_RNR_TIMER, MAX_DEST_RD_ATOMIC; not allowed SQ_PSN
	// true true
	// missing: RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC
}
