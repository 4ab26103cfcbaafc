package cm

// TEMPORARY until package mad lands: then RejectReason becomes
// mad.RejectReason.

import "strconv"

// RejectReason is a CM REJ reason (IBTA vol. 1 table 103).
type RejectReason uint16

func (r RejectReason) String() string {
	switch r {
	case 28:
		return "consumer defined"
	case 35:
		return "vendor option not supported"
	case 8:
		return "invalid service ID"
	}
	return "reason " + strconv.Itoa(int(r))
}
