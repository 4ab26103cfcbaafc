// Command malformed-mad sends malformed CM MADs, framed as RoCEv2 UD SEND
// packets with valid ICRCs, from a UDP socket to a soft-RoCE peer's GSI:
//
//	malformed-mad -src 192.0.2.2 -dst 192.0.2.1 [-repeat 1] [-random 44] [-gap 2ms]
//
// or, with -flood N, N well-formed REQs with random communication IDs for
// the rdma_cm listener on -port, -rate per second (0: as fast as it can),
// from a node that never answers the REPs:
//
//	malformed-mad -src 192.0.2.1 -dst 192.0.2.2 -flood 20000 -port 7471 [-rate 2000]
//
// Use it only on a test wire (the vmtest guests' 192.0.2.0/24).
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/go-rdma/rdmacm/internal/malformed"
	"github.com/go-rdma/rdmacm/mad/roce"
)

func main() {
	src := flag.String("src", "", "local IPv4 address to send from")
	dst := flag.String("dst", "", "peer IPv4 address (its rxe GID)")
	repeat := flag.Int("repeat", 1, "rounds of every case")
	random := flag.Int("random", 44, "MADs with a valid CM header and a random body")
	seed := flag.Uint64("seed", 1, "seed of the random bodies")
	gap := flag.Duration("gap", 2*time.Millisecond, "pause between datagrams")
	flood := flag.Int("flood", 0, "send this many REQs for -port instead of the malformed cases")
	port := flag.Uint("port", 7471, "with -flood: the listener's rdma_cm TCP port")
	rate := flag.Int("rate", 0, "with -flood: REQs per second (0: as fast as the socket takes them)")
	flag.Parse()
	s, err := netip.ParseAddr(*src)
	d, err2 := netip.ParseAddr(*dst)
	if err != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "malformed-mad: -src and -dst must be IPv4 addresses")
		os.Exit(2)
	}
	snd, err := malformed.NewSender(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "malformed-mad:", err)
		os.Exit(1)
	}
	defer snd.Close()
	if *flood > 0 {
		f, err := malformed.NewFlood(s, d, uint16(*port), *seed)
		if err != nil {
			fmt.Fprintln(os.Stderr, "malformed-mad:", err)
			os.Exit(2)
		}
		n, took, err := snd.SendFlood(f, *flood, *rate)
		fmt.Printf("FLOOD %d REQs in %.3f s (%.0f/s)\n", n, took.Seconds(), float64(n)/took.Seconds())
		if err != nil {
			fmt.Fprintln(os.Stderr, "malformed-mad:", err)
			os.Exit(1)
		}
		return
	}
	cases := malformed.Cases(*seed, *random)
	n, err := snd.SendAll(netip.AddrPortFrom(d, roce.UDPPort), cases, *repeat, *gap)
	fmt.Printf("SENT %d datagrams (%d cases x %d)\n", n, len(cases), *repeat)
	if err != nil {
		fmt.Fprintln(os.Stderr, "malformed-mad:", err)
		os.Exit(1)
	}
}
