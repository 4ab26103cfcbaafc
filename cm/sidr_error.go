package cm

import (
	"fmt"
	"net/netip"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/mad"
)

// UDPQKey is the Q_Key of every RDMA_PS_UDP ID (the rdma_cm's and
// librdmacm's RDMA_UDP_QKEY): both sides' QPs use it, and the SIDR_REP
// carries it.
const UDPQKey = 0x01234567

// SIDRError is a UD ID's SIDR_REP with a status other than SUCCESS: the
// peer's CM answered, but not with a QP (the rdma_cm reports it as
// UNREACHABLE with the status; IBTA vol. 1 table 120). Status 1,
// unsupported service, is the peer's CM saying nothing listens on the
// port. It matches ErrRejected and ECONNREFUSED (errors.Is), and
// errors.As reaches the status.
type SIDRError struct {
	Status      mad.SIDRStatus
	PrivateData []byte
	// Addr is the destination of the ID (the one ResolveAddr resolved).
	Addr netip.AddrPort
}

func (e *SIDRError) Error() string {
	s := "cm: "
	if e.Addr.IsValid() {
		s += "resolve UD service " + e.Addr.String() + ": "
	}
	if e.Status == mad.SIDRUnsupported {
		return s + fmt.Sprintf("connection refused: no listener (SIDR status %d, %s)", uint8(e.Status), e.Status)
	}
	return s + fmt.Sprintf("SIDR reply with status %d (%s)", uint8(e.Status), e.Status)
}

// Is matches ErrRejected.
func (e *SIDRError) Is(target error) bool { return target == ErrRejected }

// Unwrap returns ECONNREFUSED, as for a rejected connect.
func (e *SIDRError) Unwrap() error { return unix.ECONNREFUSED }
