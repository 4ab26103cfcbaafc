package uverbs

// The mutation check of the differential harness: built with
// -tags mlx5mutant (mlx5_mutant_on.go), the provider takes the deliberate
// single defect MLX5_MUTANT names, and internal/mlx5sim's
// TestMutantsCaught must see the traces differ from libmlx5's. In every
// other build mlx5Mutant is the constant mutantNone (mlx5_mutant_off.go)
// and the mutated lines compile away. Each defect is one guarded change;
// mlx5MutantNames (mlx5_mutant_on.go) gives its name.
const (
	mutantNone = iota

	// Ctrl segment and opcodes.
	mutantSegmentByte   // segbyte: the solicited bit of every send WQE flipped
	mutantOpcode        // opcode: SEND_WITH_IMM posted with the SEND opcode
	mutantCtrlIndex     // ctrlidx: the WQE index is the masked slot, not cur_post
	mutantCtrlDS        // ctrlds: the ctrl segment's size one 16-byte unit short
	mutantCtrlQPN       // ctrlqpn: the QP number left out of qpn_ds
	mutantSignaled      // signaled: CQ_UPDATE dropped from signaled WRs
	mutantFenceSigAll   // fencesig: the fence flag replaces the sig_all bits
	mutantFence         // fence: IBV_SEND_FENCE ignored
	mutantImm           // imm: no immediate for RDMA_WRITE_WITH_IMM
	mutantImmOrder      // immorder: the immediate stored little-endian
	mutantRaddrOrder    // raddr: the remote address stored little-endian
	mutantRKey          // rkey: the remote address segment's rkey left 0
	mutantWriteImmRaddr // writeimmraddr: RDMA_WRITE_WITH_IMM without a remote address segment

	// Data and inline segments.
	mutantLKey         // lkey: the data segment's lkey left 0
	mutantSGEZero      // sgezero: zero-length SGEs written as data segments
	mutantInlinePadOne // inlpadone: one-SGE inline size rounded down, not up
	mutantInlinePadSeg // inlpadseg: set_data_inl_seg size rounded down, not up
	mutantInlineHeader // inlhdr: the inline header without MLX5_INLINE_SEG

	// Atomics.
	mutantAtomicOrder // atomicorder: compare and swap exchanged
	mutantAtomicFA    // atomicfa: fetch-and-add clears the compare slot
	mutantAtomicRKey  // atomicrkey: the atomic's rkey left 0

	// Datagram segment and address vector.
	mutantQKey    // qkey: the datagram segment's Q_Key left 0
	mutantExtAV   // extav: MLX5_EXTENDED_UD_AV dropped from the remote QPN
	mutantAVSL    // avsl: the SL not shifted into stat_rate_sl (RoCE)
	mutantAVTC    // avtc: the traffic class not written
	mutantAVHop   // avhop: the hop limit not written
	mutantAVFlow  // avflow: the flow label cut to 16 bits
	mutantAVGRHLE // avgrhle: the GRH word (flow label, SGID index) little-endian
	mutantAVRMAC  // avrmac: the destination MAC not copied
	mutantAVSport // avsport: the UDP source port without the flow label's high bits

	// Doorbell records and doorbells.
	mutantSQDB      // sqdb: the SQ doorbell record in host byte order
	mutantRQDB      // rqdb: the RQ doorbell record in host byte order
	mutantRQBarrier // rqbarrier: no udma_to_device_barrier before the RQ doorbell record
	mutantSRQDB     // srqdb: the SRQ doorbell record counts one WR per call
	mutantCQCI      // cqci: set_ci in host byte order
	mutantCQCILate  // cqcilate: a poll of one leaves set_ci to the next poll

	// BlueFlame.
	mutantBarrier  // barrier: mmio_wc_start moved after the BlueFlame copy
	mutantBFToggle // bftoggle: the BlueFlame half never toggles
	mutantBFNone   // bfnone: no BlueFlame copy, only the 8-byte doorbell
	mutantBFCopy   // bfcopy: the copy leaves each 64-byte block's last word
	mutantBFMulti  // bfmulti: a BlueFlame copy for a list of several WRs
	mutantBFFlush  // bfflush: no mmio_flush_writes after a locked BlueFlame copy

	// CQE parsing.
	mutantOwnerOne    // owner1: a poll of one without the owner-bit check
	mutantOwnerList   // ownerlist: a poll of several without the owner-bit check
	mutantPollBarrier // pollbarrier: no udma_from_device_barrier after the owner check
	mutantCQEOpcode   // cqeop: SEND_WITH_IMM received without IBV_WC_WITH_IMM
	mutantByteCnt     // bytecnt: a receive's byte_len left 0
	mutantCQEImm      // cqeimm: the immediate read little-endian
	mutantCQEQPN      // cqeqpn: a send completion's qp_num from the user index
	mutantSyndrome    // syndrome: a flush error reported as a general error
	mutantVendorErr   // vendor: vendor_err left 0
	mutantSrcQP       // srcqp: src_qp left 0
	mutantGRH         // grh: IBV_WC_GRH never set
	mutantCQESL       // sl: the SL taken from the top four bits
	mutantScatter64   // scat64: a receive's 64-byte scatter-to-CQE read from the CQE itself
	mutantScatter64R  // scat64req: an RDMA READ's 64-byte scatter-to-CQE from the CQE itself
	mutantScatter32   // scat32: 32-byte scatter-to-CQE read 8 bytes late

	// Arming.
	mutantArmCI      // armci: arming without the consumer index
	mutantArmSN      // armsn: the arm sequence number never advances
	mutantArmCmd     // armcmd: a solicited-only arm sent as arm-for-any
	mutantArmCQN     // armcqn: the CQ number left out of the UAR store
	mutantArmDBRec   // armdbrec: the arm doorbell record not written
	mutantArmBarrier // armbarrier: no mmio_wc_start between the arm record and the UAR store

	// CQ cleaning.
	mutantCleanDestroy // cleandestroy: no CQ clean when a QP is destroyed
	mutantCleanReset   // cleanreset: no CQ clean on a move to RESET
	mutantCleanOwner   // cleanowner: a moved CQE takes its source's owner bit

	// SRQ.
	mutantSRQFree // srqfree: a completed SRQ WQE never returns to the free list
	mutantSRQTerm // srqterm: no terminating invalid-lkey data segment

	// ECE.
	mutantECECreate // ececreate: create_qp does not ask for ECE version 1
	mutantECEClear  // ececlear: set_ece leaves the reported options
	mutantECEModify // ecemodify: modify_qp does not send the ECE options

	// Sizing.
	mutantSQInline // sqinline: max_inline_data counts the inline header's 4 bytes
	mutantSQPow2   // sqpow2: the send queue not rounded up to a power of two
	mutantPage4K   // page4k: the provider assumes 4 KiB pages, whatever the kernel's
)
