package mad

import (
	"fmt"
	"strings"
)

// Describe returns a one-line summary of the CM MAD in b for logs and
// test transcripts: the message, its IDs and the fields that drive the
// CM state machines, e.g. "RTU lcid=0x00000001 rcid=0x00000002". A MAD
// that does not parse gives "malformed: " and the error. The format is
// stable: test transcripts compare it.
func Describe(b []byte) string {
	v, err := Parse(b)
	if err != nil {
		return "malformed: " + err.Error()
	}
	var s strings.Builder
	s.WriteString(v.AttributeID().String())
	switch v := v.(type) {
	case REQView:
		fmt.Fprintf(&s, " lcid=%#08x sid=%#x qpn=%#x psn=%#x resp=%d/%d retries=%d plt+1=%d", v.LocalCommID(),
			v.ServiceID(), v.LocalQPN(), v.StartingPSN(), v.LocalCMResponseTimeout(), v.RemoteCMResponseTimeout(),
			v.MaxCMRetries(), v.Primary().LocalACKTimeout)
		if e := v.ECE(); !e.IsZero() {
			fmt.Fprintf(&s, " ece=%#x/%#x", e.VendorID, e.Options)
		}
	case REPView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x qpn=%#x psn=%#x", v.LocalCommID(), v.RemoteCommID(), v.LocalQPN(), v.StartingPSN())
		if e := v.ECE(); !e.IsZero() {
			fmt.Fprintf(&s, " ece=%#x/%#x", e.VendorID, e.Options)
		}
	case RTUView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x", v.LocalCommID(), v.RemoteCommID())
	case MRAView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x mraed=%v timeout=%d", v.LocalCommID(), v.RemoteCommID(), v.MessageMRAed(), v.ServiceTimeout())
	case REJView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x rejected=%v reason=%d", v.LocalCommID(), v.RemoteCommID(), v.MessageRejected(), v.Reason())
		if n := len(v.ARI()); n > 0 {
			fmt.Fprintf(&s, " ari=%x", v.ARI())
		}
	case DREQView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x rqpn=%#x", v.LocalCommID(), v.RemoteCommID(), v.RemoteQPNEECN())
	case DREPView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x", v.LocalCommID(), v.RemoteCommID())
	case SIDRREQView:
		fmt.Fprintf(&s, " reqid=%#08x sid=%#x", v.RequestID(), v.ServiceID())
	case SIDRREPView:
		fmt.Fprintf(&s, " reqid=%#08x status=%v qpn=%#x qkey=%#x", v.RequestID(), v.Status(), v.QPN(), v.QKey())
	}
	return s.String()
}
