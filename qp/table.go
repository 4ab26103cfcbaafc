package qp

// Attribute sets of one transition for one QP type.
type attrSet struct{ required, optional Mask }

// A legal transition and its attributes per QP type. A type without an
// entry has no required and no optional attributes (only STATE).
type transition struct {
	from, to State
	byType   map[QPType]attrSet
}

// Attribute groups shared by several rows.
const (
	rcPathOpt = MaskCurState | MaskAltPath | MaskAccessFlags | MaskPathMigState // RC/UC optional at →RTS
	udOpt     = MaskCurState | MaskQKey                                         // UD/GSI optional at →RTS
)

// transitions is the Modify QP table for RC, UC, UD and GSI. It carries the
// content of Linux qp_state_table (drivers/infiniband/core/verbs.c), which
// follows IBTA vol. 1 chapter 11 (Modify Queue Pair) with the differences listed in the
// package documentation. STATE is implied and never listed.
var transitions = []transition{
	{Reset, Reset, nil},
	{Reset, Init, map[QPType]attrSet{
		RC:  {required: MaskPKeyIndex | MaskPort | MaskAccessFlags},
		UC:  {required: MaskPKeyIndex | MaskPort | MaskAccessFlags},
		UD:  {required: MaskPKeyIndex | MaskPort | MaskQKey},
		GSI: {required: MaskPKeyIndex | MaskQKey},
	}},

	{Init, Reset, nil},
	{Init, Err, nil},
	{Init, Init, map[QPType]attrSet{
		RC:  {optional: MaskPKeyIndex | MaskPort | MaskAccessFlags},
		UC:  {optional: MaskPKeyIndex | MaskPort | MaskAccessFlags},
		UD:  {optional: MaskPKeyIndex | MaskPort | MaskQKey},
		GSI: {optional: MaskPKeyIndex | MaskQKey},
	}},
	{Init, RTR, map[QPType]attrSet{
		RC: {
			required: MaskAV | MaskPathMTU | MaskDestQPN | MaskRQPSN | MaskMaxDestRdAtomic | MaskMinRNRTimer,
			optional: MaskAltPath | MaskAccessFlags | MaskPKeyIndex,
		},
		UC: {
			required: MaskAV | MaskPathMTU | MaskDestQPN | MaskRQPSN,
			optional: MaskAltPath | MaskAccessFlags | MaskPKeyIndex,
		},
		UD:  {optional: MaskPKeyIndex | MaskQKey},
		GSI: {optional: MaskPKeyIndex | MaskQKey},
	}},

	{RTR, Reset, nil},
	{RTR, Err, nil},
	{RTR, RTS, map[QPType]attrSet{
		RC: {
			required: MaskTimeout | MaskRetryCnt | MaskRNRRetry | MaskSQPSN | MaskMaxQPRdAtomic,
			optional: rcPathOpt | MaskMinRNRTimer,
		},
		UC:  {required: MaskSQPSN, optional: rcPathOpt},
		UD:  {required: MaskSQPSN, optional: udOpt},
		GSI: {required: MaskSQPSN, optional: udOpt},
	}},

	{RTS, Reset, nil},
	{RTS, Err, nil},
	{RTS, RTS, map[QPType]attrSet{
		RC:  {optional: rcPathOpt | MaskMinRNRTimer},
		UC:  {optional: rcPathOpt},
		UD:  {optional: udOpt},
		GSI: {optional: udOpt},
	}},
	{RTS, SQD, map[QPType]attrSet{
		RC:  {optional: MaskEnSQDAsyncNotify},
		UC:  {optional: MaskEnSQDAsyncNotify},
		UD:  {optional: MaskEnSQDAsyncNotify},
		GSI: {optional: MaskEnSQDAsyncNotify},
	}},

	{SQD, Reset, nil},
	{SQD, Err, nil},
	{SQD, RTS, map[QPType]attrSet{
		RC:  {optional: rcPathOpt | MaskMinRNRTimer},
		UC:  {optional: rcPathOpt},
		UD:  {optional: udOpt},
		GSI: {optional: udOpt},
	}},
	{SQD, SQD, map[QPType]attrSet{
		RC: {optional: MaskPort | MaskAV | MaskTimeout | MaskRetryCnt | MaskRNRRetry |
			MaskMaxQPRdAtomic | MaskMaxDestRdAtomic | MaskAltPath | MaskAccessFlags |
			MaskPKeyIndex | MaskMinRNRTimer | MaskPathMigState},
		UC:  {optional: MaskAV | MaskAltPath | MaskAccessFlags | MaskPKeyIndex | MaskPathMigState},
		UD:  {optional: MaskPKeyIndex | MaskQKey},
		GSI: {optional: MaskPKeyIndex | MaskQKey},
	}},

	{SQE, Reset, nil},
	{SQE, Err, nil},
	{SQE, RTS, map[QPType]attrSet{
		UC:  {optional: MaskCurState | MaskAccessFlags},
		UD:  {optional: udOpt},
		GSI: {optional: udOpt},
	}},

	{Err, Reset, nil},
	{Err, Err, nil},
}

// rules[from][to][type] is transitions indexed for lookup; legal[from][to]
// marks the legal pairs.
var (
	legal [NumStates][NumStates]bool
	rules [NumStates][NumStates][UD + 1]attrSet
)

func init() {
	for _, tr := range transitions {
		legal[tr.from][tr.to] = true
		for t, set := range tr.byType {
			rules[tr.from][tr.to][t] = set
		}
	}
}

// Legal reports whether Linux allows a QP to move from one state to the
// other (for every QP type; the table's validity is per transition).
func Legal(from, to State) bool {
	return from.Valid() && to.Valid() && legal[from][to]
}

// Params returns the attributes a transition requires and allows besides
// MaskState. ok is false for an illegal transition or an unknown type.
func Params(t QPType, from, to State) (required, optional Mask, ok bool) {
	if !t.Known() || !Legal(from, to) {
		return 0, 0, false
	}
	set := rules[from][to][t]
	return set.required, set.optional, true
}
