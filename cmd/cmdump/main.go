// Command cmdump decodes InfiniBand CM MADs (REQ, REP, RTU, REJ, DREQ,
// DREP, MRA, SIDR, LAP, APR, ClassPortInfo) in RoCEv2 packet captures,
// ECE included: Wireshark shows the ECE vendor ID as reserved bytes and
// misplaces the path flow label and packet rate.
//
// Usage:
//
//	cmdump [-json] [-describe] [-icrc=false] [file.pcap ...]
//
// With no file, or "-", it reads standard input. Input is classic pcap
// (tcpdump -w; not pcapng) with Ethernet, raw IP or Linux cooked
// link types.
//
// Default output is one line per CM MAD:
//
//	07:08:09.123456 192.0.2.1.qp1 > 192.0.2.2.qp1 REQ lcid=0x11223344 qpn=0x000011 psn=0x123456 sid=TCP:7174 ece=0x15b3/0x30000001 ip=192.0.2.1:40000>192.0.2.2:7174 pd=4
//
// Times are UTC. QPNs, PSNs and communication IDs are hex. "pd=N" is the
// private data up to its last non-zero byte (the wire always carries the
// whole field, so the sender's length is not known), after the rdma_cm IP
// header when there is one. "ece=none" means vendor ID and options are 0.
//
// -describe follows each line with the message as the CM engine's logs
// and the testfabric transcripts print it (mad.Describe): timeouts,
// retries and packet lifetime instead of addresses.
//
// -json prints one JSON object per CM MAD instead: the frame number and
// time, every packet header field, the decoded message struct of package
// mad, and derived fields (ECE, service ID split, rdma_cm IP header,
// reject reason name).
//
// Frames that are not CM MADs (ARP, other UDP, RoCE data packets, MADs of
// other management classes) are skipped silently and counted. Malformed
// frames (truncated, inconsistent headers, bad ICRC, a CM-class MAD that
// does not parse) are reported on standard error with their frame number
// and skipped. A summary goes to standard error at the end. The exit status
// is 0 when every input was read to its end, 1 when an input could not be
// opened or read (not pcap, truncated file), 2 for a usage error.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
