#!/bin/sh
# cm-sequences.sh: check that every connection in a capture went through
# REQ, REP, RTU, DREQ, DREP exactly once, in that order. Prints the count
# of each CM MAD and the connections that did anything else (keyed by the
# active side's communication ID).
#
#   bench/wire/cm-sequences.sh FILE.pcap [UDP-PORT...]
#
# UDP ports name a guest wire carried over UDP (the QEMU socket netdev seen
# on the host's loopback; `ss -uanp | grep qemu` lists them): their payload
# is decoded as Ethernet. RoCE v2 on UDP 4791 needs no port.
set -eu
f=$1
shift
set -- $(for p in "$@"; do printf -- '-d udp.port==%s,eth ' "$p"; done)
tshark -r "$f" "$@" -Y 'infiniband.mad.mgmtclass == 0x07' -T fields \
	-e infiniband.mad.attributeid -e infiniband.cm.req -e infiniband.cm.rep.remotecommid \
	-e infiniband.cm.rtu.localcommid -e infiniband.cm.dreq.localcommid -e infiniband.cm.dreq.remotecommid \
	-e infiniband.cm.drsp.localcommid -e infiniband.cm.drsp.remotecommid \
	-e infiniband.cm.rej.localcommid -e infiniband.cm.rej.remotecommid 2>/dev/null |
awk -F'\t' '
BEGIN { name["0x0010"] = "REQ"; name["0x0011"] = "MRA"; name["0x0012"] = "REJ"; name["0x0013"] = "REP"
	name["0x0014"] = "RTU"; name["0x0015"] = "DREQ"; name["0x0016"] = "DREP" }
{
	m = ($1 in name) ? name[$1] : $1
	count[m]++
	if (m == "REQ") { k = $2; active[k] = 1 }
	else if (m == "REP") k = $3
	else if (m == "RTU") k = $4
	else if (m == "DREQ") k = ($5 in active) ? $5 : $6
	else if (m == "DREP") k = ($7 in active) ? $7 : $8
	else if (m == "REJ") k = ($9 in active) ? $9 : $10
	else k = "?"
	if (!(k in seq)) order[++n] = k
	seq[k] = seq[k] " " m
}
END {
	for (m in count) printf "%s %d\n", m, count[m]
	bad = 0
	for (i = 1; i <= n; i++) if (seq[order[i]] != " REQ REP RTU DREQ DREP") {
		if (++bad <= 10) printf "unusual %s:%s\n", order[i], seq[order[i]]
	}
	printf "%d connections, %d unusual\n", n, bad
	exit bad > 0
}'
