package engine

import (
	"fmt"
	"strings"

	"github.com/go-rdma/rdmacm/mad"
)

// DescribeMAD returns a one-line summary of a CM MAD for logs and test
// transcripts: the message, its IDs and the fields that drive the state
// machines.
func DescribeMAD(b []byte) string {
	v, err := mad.Parse(b)
	if err != nil {
		return "malformed: " + err.Error()
	}
	var s strings.Builder
	s.WriteString(v.AttributeID().String())
	switch v := v.(type) {
	case mad.REQView:
		fmt.Fprintf(&s, " lcid=%#08x sid=%#x qpn=%#x psn=%#x resp=%d/%d retries=%d plt+1=%d", v.LocalCommID(),
			v.ServiceID(), v.LocalQPN(), v.StartingPSN(), v.LocalCMResponseTimeout(), v.RemoteCMResponseTimeout(),
			v.MaxCMRetries(), v.Primary().LocalACKTimeout)
		if e := v.ECE(); !e.IsZero() {
			fmt.Fprintf(&s, " ece=%#x/%#x", e.VendorID, e.Options)
		}
	case mad.REPView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x qpn=%#x psn=%#x", v.LocalCommID(), v.RemoteCommID(), v.LocalQPN(), v.StartingPSN())
		if e := v.ECE(); !e.IsZero() {
			fmt.Fprintf(&s, " ece=%#x/%#x", e.VendorID, e.Options)
		}
	case mad.RTUView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x", v.LocalCommID(), v.RemoteCommID())
	case mad.MRAView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x mraed=%v timeout=%d", v.LocalCommID(), v.RemoteCommID(), v.MessageMRAed(), v.ServiceTimeout())
	case mad.REJView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x rejected=%v reason=%d", v.LocalCommID(), v.RemoteCommID(), v.MessageRejected(), v.Reason())
		if n := len(v.ARI()); n > 0 {
			fmt.Fprintf(&s, " ari=%x", v.ARI())
		}
	case mad.DREQView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x rqpn=%#x", v.LocalCommID(), v.RemoteCommID(), v.RemoteQPNEECN())
	case mad.DREPView:
		fmt.Fprintf(&s, " lcid=%#08x rcid=%#08x", v.LocalCommID(), v.RemoteCommID())
	case mad.SIDRREQView:
		fmt.Fprintf(&s, " reqid=%#08x sid=%#x", v.RequestID(), v.ServiceID())
	case mad.SIDRREPView:
		fmt.Fprintf(&s, " reqid=%#08x status=%v qpn=%#x qkey=%#x", v.RequestID(), v.Status(), v.QPN(), v.QKey())
	}
	return s.String()
}

func trimZeros(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// String summarises the event for logs and transcripts.
func (ev *Event) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "%v id=%v", ev.Type, ev.ID)
	switch ev.Type {
	case EventConnectRequest, EventSIDRRequest:
		fmt.Fprintf(&s, " listener=%v", ev.Listener)
	case EventRejected:
		fmt.Fprintf(&s, " reason=%d", ev.Reason)
	case EventSIDRReply:
		fmt.Fprintf(&s, " status=%v qpn=%#x qkey=%#x", ev.SIDR.Status, ev.SIDR.QPN, ev.SIDR.QKey)
	}
	if ev.Conn.HasIP {
		fmt.Fprintf(&s, " ip=%v>%v", ev.Conn.Src, ev.Conn.Dst)
	}
	if !ev.ECE.IsZero() {
		fmt.Fprintf(&s, " ece=%#x/%#x", ev.ECE.VendorID, ev.ECE.Options)
	}
	if pd := trimZeros(ev.PrivateData); len(pd) > 0 {
		fmt.Fprintf(&s, " pd=%q", pd)
	}
	return s.String()
}

// String summarises the transition.
func (t *QPTransition) String() string {
	return fmt.Sprintf("qp %#x %v->%v mask=%v", t.QPN, t.From, t.To, t.Mask)
}
