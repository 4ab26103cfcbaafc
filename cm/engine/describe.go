package engine

import (
	"fmt"
	"strings"
)

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
