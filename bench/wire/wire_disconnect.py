#!/usr/bin/env python3
"""wire_disconnect.py PCAP [NAMES]: the disconnect step of each cmtime run
as the wire saw it, from a host capture of the guests' UDP wire
(`tcpdump -i lo -n -s 200 -w PCAP udp` while a hand pair runs; vmtest's
wire carries each guest Ethernet frame in one UDP datagram over loopback).

For every burst of DREQs (runs are told apart by a gap of more than 1 s)
it prints how long the client took to send them (the span and the median
gap between two DREQs: the client's time per connection), when the last
DREP came back, and how far each DREP trailed its DREQ (paired by
communication ID: the server's backlog). NAMES (comma-separated) names
the runs in turn, for instance c,rp for alt_clients.sh R OUT c rp.
Nothing in the guests is traced, so it times cmtime and rdmacm-ping alike.
"""
import statistics
import struct
import sys

ATTRS = {0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU", 0x15: "DREQ", 0x16: "DREP"}
OUTER = 14 + 20 + 8       # loopback Ethernet, IPv4, UDP
INNER = 14 + 20 + 8 + 12 + 8  # guest Ethernet, IPv4, UDP 4791, BTH, DETH: the MAD follows


def cm_mads(path):
    """(time, source IP, attribute, local comm ID, remote comm ID) per CM MAD."""
    b = open(path, "rb").read()
    if len(b) < 24:
        return []
    magic = struct.unpack("<I", b[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        sys.exit("%s: not a little-endian pcap" % path)
    scale = 1e9 if magic == 0xA1B23C4D else 1e6
    off, out = 24, []
    while off + 16 <= len(b):
        sec, frac, incl, _ = struct.unpack("<IIII", b[off:off + 16])
        pkt = b[off + 16:off + 16 + incl]
        off += 16 + incl
        frame = pkt[OUTER:]
        if len(frame) < INNER + 32 or frame[12:14] != b"\x08\x00":
            continue
        if struct.unpack(">H", frame[36:38])[0] != 4791:
            continue
        mad = frame[INNER:]
        if mad[1] != 0x07:  # management class: CM
            continue
        attr = struct.unpack(">H", mad[16:18])[0]
        local, remote = struct.unpack(">II", mad[24:32])
        src = ".".join(str(x) for x in frame[26:30])
        out.append((sec + frac / scale, src, ATTRS.get(attr, hex(attr)), local, remote))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mads = cm_mads(sys.argv[1])
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    dreqs = [m for m in mads if m[2] == "DREQ"]
    dreps = [m for m in mads if m[2] == "DREP"]
    bursts, cur = [], []
    for m in dreqs:
        if cur and m[0] - cur[-1][0] > 1.0:
            bursts.append(cur)
            cur = []
        cur.append(m)
    if cur:
        bursts.append(cur)
    print("run  DREQs  DREQ span ms  median gap us  last DREP ms  DREP lag median ms (max)")
    for i, burst in enumerate(bursts):
        t0, t1 = burst[0][0], burst[-1][0]
        sent = {m[3]: m[0] for m in burst}
        lags = [m[0] - sent[m[4]] for m in dreps if t0 <= m[0] <= t1 + 2.0 and m[4] in sent]
        last = max((m[0] for m in dreps if t0 <= m[0] <= t1 + 2.0 and m[4] in sent), default=float("nan"))
        gaps = [b[0] - a[0] for a, b in zip(burst, burst[1:])] or [0.0]
        name = names[i % len(names)] if names else str(i + 1)
        lag = "%.1f (%.1f)" % (1e3 * statistics.median(lags), 1e3 * max(lags)) if lags else "-"
        print("%-4s %5d  %12.1f  %13.0f  %12.1f  %s" % (name, len(burst), 1e3 * (t1 - t0),
              1e6 * statistics.median(gaps), 1e3 * (last - t0), lag))


if __name__ == "__main__":
    main()
