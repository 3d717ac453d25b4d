package ndtools

// nd pingpong: the ND SDK's ndpingpong. The client sends a message, the
// server echoes it back, and the client times the round trips for message
// sizes from 1 byte to -max bytes, doubling. Without an address the server
// runs in a child process (session.StartServerChild) and each size runs for -D
// seconds; -D 0 or -iters give ndpingpong's iteration counts.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// pingpongPort is ndpingpong's default port.
const pingpongPort = 54325

// defaultPingpongSeconds is how long each size runs by default: 23 sizes
// (1 byte to 4 MiB) take about six seconds.
const defaultPingpongSeconds = 0.25

// defaultPingpongSpin is how long a side polls without a completion before
// it blocks until the next one, by default.
const defaultPingpongSpin = 100 * time.Microsecond

// maxPingpongSeconds bounds -D.
const maxPingpongSeconds = 3600

// pingpongConfig is the parsed command line of nd pingpong.
type pingpongConfig struct {
	session.DataFlags
	seconds   float64 // -D: seconds per size; 0: ndpingpong's iteration counts
	inProcess bool    // -in-process: the server in this process
	// spin is -spin: how long to poll without a completion before blocking
	// in Notify until the next one; 0 polls only.
	spin time.Duration
}

// PingpongFlags defines the flags of nd pingpong.
func PingpongFlags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs := flag.NewFlagSet("pingpong", flag.ContinueOnError)
	c := &pingpongConfig{}
	c.Define(fs, pingpongPort, "Receives kept posted (the endpoint's queue `depth`)")
	c.WithoutAddress = "  nd pingpong               the server in a child process, the client in this one\n" +
		"  nd pingpong -in-process   both sides in this process (figures less steady)\n"
	fs.Float64Var(&c.seconds, "D", defaultPingpongSeconds, "run each size for `seconds`; 0: ndpingpong's iteration counts (minutes)")
	fs.DurationVar(&c.spin, "spin", defaultPingpongSpin, "poll for at most this `duration` without a completion, then block in Notify until the next one\n"+
		"(so that a side whose peer lost its processor gives its own away); 0: poll only")
	fs.BoolVar(&c.inProcess, "in-process", false, "without -s or -c: run the server in this process, as a goroutine beside the client\n"+
		"(the two share one Go runtime, and the figures move from run to run)")
	fs.Usage = func() {
		c.Usage(fs, "[-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES] [-q DEPTH]\n"+
			"                   [-max BYTES] [-D SECONDS | -iters N] [-spin DURATION] [-in-process]\n"+
			"                   [ADDRESS[:PORT]]",
			fmt.Sprintf(`Round-trip Send/Receive test (the ND SDK's ndpingpong). The client sends
each message, the server echoes it; sizes go from 1 byte to -max, doubling,
after %d warm-up round trips, and a row is printed as each size completes.
Each size runs for -D seconds (default %g); with -D 0, or -iters N, a size
makes min(%d, 500*4MiB/size) round trips as ndpingpong does (-iters caps
them and the warm-up).
Each side polls its completion queue (-b: blocks in Notify instead); after
-spin without a completion it blocks until the next one.
Without -s or -c the server runs in a child process (this program started
again with -s), so that each side polls on a processor of its own; with
-in-process (always so with -provider loop) it runs in this process.
Latency is half the median round trip in microseconds (ndpingpong prints
the mean: on a shared host a few round trips that wait for a processor
move it by several times from run to run), CPU the client process's CPU
time in percent of the elapsed time, Bytes/Sec counts both directions over
the elapsed time.
`, timing.WarmupIterations, defaultPingpongSeconds, timing.RoundTripIterations))
	}
	return fs, func(ctx context.Context, args []string) error {
		if err := c.Parse(fs, args); err != nil {
			return err
		}
		if err := c.parseTiming(fs); err != nil {
			return err
		}
		if c.childServer() {
			return c.runTwoProcesses(ctx, stdout)
		}
		return c.Run(ctx, c, stdout)
	}
}

// parseTiming checks -D, -iters and -in-process.
func (c *pingpongConfig) parseTiming(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case math.IsNaN(c.seconds) || c.seconds < 0 || c.seconds > maxPingpongSeconds:
		return cli.Usagef("-D %g: the duration must be 0 to %d seconds", c.seconds, maxPingpongSeconds)
	case set["D"] && set["iters"]:
		return cli.Usagef("-D and -iters exclude each other: a size runs for a time or for a number of iterations")
	case c.inProcess && (c.Server || c.Client):
		return cli.Usagef("-in-process applies without -s and -c")
	case c.spin < 0:
		return cli.Usagef("-spin %v: must not be negative", c.spin)
	}
	if set["iters"] {
		c.seconds = 0
	}
	return nil
}

// perSize is the time each size runs for, 0 to run ndpingpong's counts.
func (c *pingpongConfig) perSize() time.Duration {
	return time.Duration(c.seconds * float64(time.Second))
}

// childServer reports whether the server runs in a child process: without
// -s, -c and -in-process, with a provider that reaches other processes.
func (c *pingpongConfig) childServer() bool {
	return !c.Server && !c.Client && !c.inProcess && c.Provider.Name != "loop"
}

// runTwoProcesses starts the server as a child process on a free port (or
// -p's), says so on out, and runs the client against it.
func (c *pingpongConfig) runTwoProcesses(ctx context.Context, out io.Writer) error {
	p, addrs, err := c.Provider.Open()
	if err != nil {
		return err
	}
	port := uint(0)
	if c.PortSet {
		port = c.Port
	}
	args := append([]string{"pingpong", "-s", "-p", strconv.FormatUint(uint64(port), 10),
		"-n", strconv.Itoa(c.SGEs), "-q", strconv.Itoa(c.Depth), "-spin", c.spin.String()}, c.Provider.Args()...)
	if c.Blocking {
		args = append(args, "-b")
	}
	s, err := session.StartServerChild(ctx, args)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Server: process %d on %s (provider %s); %s\n", s.Pid(), s.Addr, p.Name(), c.pace())
	return s.Finish(session.RunClient(ctx, c, p, addrs, s.Addr, out))
}

// pace describes how long each size runs.
func (c *pingpongConfig) pace() string {
	if d := c.perSize(); d > 0 {
		return fmt.Sprintf("each size runs for %v", d)
	}
	return "ndpingpong's iteration counts"
}

// limits returns the endpoint limits of either side for messages of up to
// maxSize bytes, after checking them against the adapter's.
func (c *pingpongConfig) limits(a nd.Adapter, maxSize int) (nd.EndpointLimits, error) {
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return nd.EndpointLimits{}, err
	}
	l := nd.EndpointLimits{
		InboundEntries:  c.Depth,
		OutboundEntries: c.Depth,
		InboundSGE:      c.SGEs,
		OutboundSGE:     c.SGEs,
	}
	if err := c.CheckQueues(ai, l); err != nil {
		return l, err
	}
	return l, session.CheckSize(ai, maxSize)
}

// reaper returns the reaper of either side for cq: polling (-spin) or
// blocking (-b).
func (c *pingpongConfig) reaper(ctx context.Context, cq nd.CompletionQueue) *datapath.Reaper {
	r := datapath.NewReaper(ctx, cq, c.Blocking, 2*c.Depth)
	r.Spin = c.spin
	return r
}
