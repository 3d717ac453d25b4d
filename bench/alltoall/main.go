// Command alltoall is one rank of MPI's all-to-all exchange, the shape of
// bench/alltoall.sh: P processes, every one connected to every other; each
// sends M bytes to every other rank and checks every byte it receives.
//
//	alltoall -mode nd -rank R -p P -base 192.0.2.1 -m 65536 -reps 5
//
// Rank i serves address base+i (or the i-th of -addrs) on -port. In mode
// nd it opens the tcp provider's adapter on that address with one
// completion queue for all its endpoints; in mode go it uses net.Conn with
// a goroutine reading each connection. All ranks meet in a barrier before
// each exchange (through rank 0, over the same connections), and each rank
// times its exchange from its release until its last send and receive
// completed. It prints one line:
//
//	alltoall mode=nd p=4 m=65536 rank=2 reps=5 median_ns=N ns=N1,N2,...
//
// and exits 1 with a message on standard error if anything fails, a byte
// differs, or -timeout passes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	mode := flag.String("mode", "nd", "nd (godirect's tcp provider) or go (net.Conn)")
	var prm params
	flag.IntVar(&prm.Rank, "rank", 0, "this rank, 0..p-1")
	flag.IntVar(&prm.P, "p", 2, "ranks")
	flag.IntVar(&prm.M, "m", 8, "bytes each rank sends to each other rank per exchange")
	flag.IntVar(&prm.Reps, "reps", 5, "exchanges")
	flag.DurationVar(&prm.Spin, "spin", 50*time.Microsecond, "nd: how long an idle rank polls before it waits in Notify (negative: poll only)")
	base := flag.String("base", "", "the address of rank 0; rank i serves base+i")
	list := flag.String("addrs", "", "comma-separated addresses of ranks 0..p-1 (instead of -base)")
	port := flag.Uint("port", 18515, "the TCP port every rank listens on")
	timeout := flag.Duration("timeout", time.Minute, "the bound on the whole run")
	flag.Parse()
	if err := run(*mode, prm, *base, *list, uint16(*port), *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "alltoall: rank %d: %v\n", prm.Rank, err)
		os.Exit(1)
	}
}

func run(mode string, prm params, base, list string, port uint16, timeout time.Duration) error {
	if err := prm.validate(); err != nil {
		return err
	}
	addrs, err := rankAddrs(prm.P, base, list, port)
	if err != nil {
		return err
	}
	r, err := newRank(mode, prm, addrs[prm.Rank])
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	times, err := r.Run(ctx, addrs)
	if err != nil {
		return err
	}
	fmt.Println(formatLine(mode, prm, times))
	return nil
}

func newRank(mode string, prm params, local netip.AddrPort) (rank, error) {
	switch mode {
	case "nd":
		return newNDRank(prm, local)
	case "go":
		return newGoRank(prm, local)
	}
	return nil, fmt.Errorf("mode %q: want nd or go", mode)
}

// rankAddrs is every rank's address and port, from a list or from rank 0's
// address.
func rankAddrs(p int, base, list string, port uint16) ([]netip.AddrPort, error) {
	var addrs []netip.AddrPort
	switch {
	case list != "" && base != "":
		return nil, errors.New("-addrs and -base both given")
	case list != "":
		for s := range strings.SplitSeq(list, ",") {
			a, err := netip.ParseAddr(strings.TrimSpace(s))
			if err != nil {
				return nil, err
			}
			addrs = append(addrs, netip.AddrPortFrom(a, port))
		}
		if len(addrs) != p {
			return nil, fmt.Errorf("%d addresses for %d ranks", len(addrs), p)
		}
	case base != "":
		a, err := netip.ParseAddr(base)
		if err != nil {
			return nil, err
		}
		for i := range p {
			if i > 0 {
				if a = a.Next(); !a.IsValid() {
					return nil, fmt.Errorf("no address %d after %s", i, base)
				}
			}
			addrs = append(addrs, netip.AddrPortFrom(a, port))
		}
	default:
		return nil, errors.New("no addresses: give -base or -addrs")
	}
	return addrs, nil
}

// formatLine is the line a rank prints, which bench/alltoall.sh parses.
func formatLine(mode string, prm params, times []time.Duration) string {
	ns := make([]string, len(times))
	for i, t := range times {
		ns[i] = fmt.Sprint(t.Nanoseconds())
	}
	return fmt.Sprintf("alltoall mode=%s p=%d m=%d rank=%d reps=%d median_ns=%d ns=%s",
		mode, prm.P, prm.M, prm.Rank, len(times), median(times).Nanoseconds(), strings.Join(ns, ","))
}

func median(times []time.Duration) time.Duration {
	if len(times) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(times))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
