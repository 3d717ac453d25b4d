// Command alltoall is one rank of MPI's all-to-all exchange, the shape of
// bench/alltoall.sh: P processes, every one connected to every other; each
// sends M bytes to every other rank and checks every byte it receives.
// It is started as a job by a launcher, which gives it its rank and P
// (package pmi):
//
//	mpiexec -n 8 alltoall -mode nd -m 65536 -reps 5
//	srun --mpi=pmi2 -n 8 alltoall -mode nd
//
// In mode nd the ranks connect through package mesh: shm between the
// ranks of a host, tcp between hosts, every endpoint of a provider on one
// completion queue; in mode go each rank publishes a TCP listener's
// address in the job's key-value space and uses net.Conn with a goroutine
// reading each connection. All ranks meet in a barrier before each
// exchange (over the same connections: mode nd's a dissemination barrier,
// mode go's through rank 0), and each rank
// times its exchange from its release until its last send and receive
// completed. It prints one line:
//
//	alltoall mode=nd p=4 m=65536 rank=2 reps=5 median_ns=N wireup_ns=W ns=N1,N2,...
//
// wireup_ns is the time from the launch (A2A_LAUNCH_NS in the
// environment, Unix nanoseconds, set by whoever starts the launcher) until
// the rank left the first barrier over its connected mesh; -1 when
// unknown. On any failure, a byte that differs, or -timeout, it prints the
// error on standard error, asks the launcher to abort the job and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/godirect/nd/mesh"
	"github.com/godirect/nd/pmi"
)

func main() {
	mode := flag.String("mode", "nd", "nd (godirect: shm within a host, tcp between hosts), nd-sends (nd, each exchange also waiting for its Sends' completions) or go (net.Conn)")
	var prm params
	flag.IntVar(&prm.M, "m", 8, "bytes each rank sends to each other rank per exchange")
	flag.IntVar(&prm.Reps, "reps", 5, "exchanges")
	flag.DurationVar(&prm.Spin, "spin", 50*time.Microsecond, "nd: how long an idle rank polls before it waits in Notify (negative: poll only)")
	timeout := flag.Duration("timeout", time.Minute, "the bound on the whole run")
	flag.Parse()
	if err := run(*mode, prm, *timeout); err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintf(os.Stderr, "alltoall: %v\n", err)
		}
		os.Exit(1)
	}
}

// errReported marks an error that was printed already.
var errReported = errors.New("reported")

func run(mode string, prm params, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl, err := pmi.Init(ctx, nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	prm.Rank, prm.P = cl.Rank(), cl.Size()
	// A failing rank prints its error before it asks the launcher to
	// abort the job: the launcher may kill it at once.
	fail := func(err error) error {
		err = fmt.Errorf("rank %d of %d: %w", prm.Rank, prm.P, err)
		fmt.Fprintf(os.Stderr, "alltoall: %v\n", err)
		actx, acancel := context.WithTimeout(context.Background(), time.Second)
		defer acancel()
		cl.Abort(actx, 1, err.Error())
		return fmt.Errorf("%w: %w", errReported, err)
	}
	// The run ends when the launcher goes away.
	wctx, stop := cl.Watch(ctx)
	defer stop()
	r, err := newRank(mode, prm, mesh.Config{}, netip.AddrPort{})
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	res, err := r.Run(wctx, cl)
	if err != nil {
		return fail(err)
	}
	wireup := time.Duration(-1)
	if s, ok := os.LookupEnv("A2A_LAUNCH_NS"); ok && !res.released.IsZero() {
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fail(fmt.Errorf("A2A_LAUNCH_NS=%q: %w", s, err))
		}
		wireup = res.released.Sub(time.Unix(0, ns))
	}
	fmt.Println(formatLine(mode, prm, res.times, wireup))
	r.Close()
	return cl.Finalize(ctx)
}

// newRank makes a rank of mode: nd builds its mesh with cfg; go listens
// on goAddr (the host's address, mesh.HostAddr, port 0, when it is the
// zero AddrPort).
func newRank(mode string, prm params, cfg mesh.Config, goAddr netip.AddrPort) (rank, error) {
	switch mode {
	case "nd":
		return newNDRank(prm, cfg)
	case "nd-sends":
		prm.SendsTimed = true
		return newNDRank(prm, cfg)
	case "go":
		if !goAddr.IsValid() {
			a, err := mesh.HostAddr()
			if err != nil {
				return nil, err
			}
			goAddr = netip.AddrPortFrom(a, 0)
		}
		return newGoRank(prm, goAddr)
	}
	return nil, fmt.Errorf("mode %q: want nd, nd-sends or go", mode)
}

// formatLine is the line a rank prints, which bench/alltoall.sh parses.
func formatLine(mode string, prm params, times []time.Duration, wireup time.Duration) string {
	ns := make([]string, len(times))
	for i, t := range times {
		ns[i] = fmt.Sprint(t.Nanoseconds())
	}
	return fmt.Sprintf("alltoall mode=%s p=%d m=%d rank=%d reps=%d median_ns=%d wireup_ns=%d ns=%s",
		mode, prm.P, prm.M, prm.Rank, len(times), median(times).Nanoseconds(), wireup.Nanoseconds(), strings.Join(ns, ","))
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
