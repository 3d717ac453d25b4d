package perftest

// nd perf: perftest's six RDMA tests (ib_send_bw, ib_send_lat,
// ib_write_bw, ib_write_lat, ib_read_bw, ib_read_lat) over any ND provider,
// with perftest's main flags and its result columns. This file holds the
// command line; client.go and server.go the two sides,
// wire.go what they say to each other, report.go the output.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

const (
	perfPort        = 18515     // perftest's default port
	perfBWSize      = 65536     // perftest's default message size of the bandwidth tests
	perfLatSize     = 2         // and of the latency tests
	perfBWIters     = 5000      // perftest's default iterations of the bandwidth tests
	perfLatIters    = 1000      // and of the latency tests
	perfTxDepth     = 128       // perftest's default tx depth of the bandwidth tests
	perfCQMod       = 100       // perftest's default -Q: send_lat asks for every 100th Send's completion
	perfMaxCQMod    = 1 << 16   // -Q at most
	perfSilentSlack = 16        // send_lat: queue entries for silent Sends not yet acknowledged
	perfWarmLat     = 10000     // warm-up iterations of the latency tests at most (ucx_perftest's -w)
	perfWarmBytes   = 256 << 20 // warm-up bytes of the bandwidth tests at most
	perfAllMin      = 2         // -a: the smallest size
	perfAllMax      = 1 << 23   // -a: the largest size
	perfMaxQPs      = 4096      // -q at most (the hello has room for 65535)
	perfMaxTxDepth  = 1 << 16   // -t at most
	perfMaxSamples  = 1 << 20   // latency samples kept per size with -D
	perfMaxDuration = 3600      // -D at most, in seconds
)

// perfOp is the operation a test measures.
type perfOp int

// The operations.
const (
	opSend perfOp = iota + 1
	opWrite
	opRead
)

// perfTest is one of the tests.
type perfTest struct {
	Name  string // on the command line: send_bw
	Title string // in the header, as perftest prints it
	op    perfOp
	Lat   bool // a latency test
}

// Tests lists the tests; the wire names a test by its index plus 1.
var Tests = []perfTest{
	{"send_bw", "Send BW Test", opSend, false},
	{"send_lat", "Send Latency Test", opSend, true},
	{"write_bw", "RDMA_Write BW Test", opWrite, false},
	{"write_lat", "RDMA_Write Latency Test", opWrite, true},
	{"read_bw", "RDMA_Read BW Test", opRead, false},
	{"read_lat", "RDMA_Read Latency Test", opRead, true},
}

// TestNamed returns the test called name, or nil.
func TestNamed(name string) *perfTest {
	for i := range Tests {
		if Tests[i].Name == name {
			return &Tests[i]
		}
	}
	return nil
}

// perfTestNames lists the tests' names for messages.
func perfTestNames() string {
	names := make([]string, len(Tests))
	for i, t := range Tests {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// Config is the parsed command line of nd perf.
type Config struct {
	Test       *perfTest
	Provider   session.ProviderOpts
	Size       cli.ByteSize
	all        bool
	Iters      int
	Warmup     int // -1: the default (warmupIters)
	duration   int // -D: seconds per size, 0 to run by iterations
	port       uint
	portSet    bool
	QPs        int
	TxDepth    int
	CQMod      int  // -Q: send_lat's Sends complete silently but every cqMod-th
	outReads   int  // -o: with -R, the RDMA Reads in flight (0: the adapter's most)
	gbits      bool // --report_gbits
	useSRQ     bool // --use_srq: send tests post their Receives to a shared receive queue
	Blocking   bool // -b
	heap       bool // --heap: windows in Go heap memory, also over shm
	JSON       bool
	plot       string // --plot FILE.png
	server     bool   // --server: only the server
	rdmaCM     bool   // -R, --rdma_cm: perftest 6.06's protocol (rcm.go)
	inProcess  bool   // --in-process: both sides in this process
	bind       string // --bind: the server's address
	target     string // the ADDRESS[:PORT] argument, or ""
	timeout    time.Duration
	Stderr     io.Writer
	progressTo io.Writer // where the progress line goes, nil for none
}

// Flags defines the flags of nd perf.
func Flags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	c := &Config{Stderr: stderr}
	c.define(fs)
	fs.Usage = func() { perfUsage(fs) }
	return fs, func(ctx context.Context, args []string) error {
		if len(args) == 0 {
			return cli.Usagef("name the test: one of %s", perfTestNames())
		}
		c.Test = TestNamed(args[0])
		if c.Test == nil {
			return cli.Usagef("unknown test %q: one of %s", args[0], perfTestNames())
		}
		positional, err := parseInterspersed(fs, args[1:])
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil
		}
		if err != nil {
			return cli.Usagef("%v", err)
		}
		if err := c.parse(fs, positional); err != nil {
			return err
		}
		// -timeout may follow TEST, after the deadline of ctx was set.
		if c.timeout, err = time.ParseDuration(fs.Lookup("timeout").Value.String()); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		if !c.JSON && isTerminal(stdout) {
			c.progressTo = stdout
		}
		return c.run(ctx, stdout)
	}
}

// define defines the flags on fs, perftest's with their short and long
// names.
func (c *Config) define(fs *flag.FlagSet) {
	both := func(short, long string, def any, p any, usage string) {
		for _, name := range []string{short, long} {
			switch p := p.(type) {
			case *int:
				fs.IntVar(p, name, def.(int), usage)
			case *uint:
				fs.UintVar(p, name, def.(uint), usage)
			case *bool:
				fs.BoolVar(p, name, false, usage)
			case flag.Value:
				fs.Var(p, name, usage)
			}
		}
	}
	c.Provider.Define(fs)
	both("s", "size", nil, &c.Size, "message size in `bytes` (suffixes K, M, G; default 65536 for bw tests, 2 for lat tests)")
	both("a", "all", nil, &c.all, "run the sizes from 2 to 2^23 bytes, doubling")
	both("n", "iters", 0, &c.Iters, "`iterations` per size (default 5000 for bw tests, 1000 for lat tests)")
	both("w", "warmup", -1, &c.Warmup, "`iterations` before the first size, not measured (default: as many as -n, at most 10000 round trips or Reads over all connections for lat tests and 256 MiB of messages per connection for bw tests)")
	both("D", "duration", 0, &c.duration, "run each size for `seconds` instead of a number of iterations")
	both("p", "port", uint(perfPort), &c.port, "the `port` to listen on or connect to (ADDRESS:PORT overrides it)")
	both("q", "qp", 1, &c.QPs, "`connections` between the two sides, every endpoint of a side on its one completion queue; bw tests keep all their pipelines full, lat tests make one round trip (read_lat: one Read) at a time over the connections in turn; -n and -w count per connection, a row all of them")
	both("t", "tx-depth", 0, &c.TxDepth, "requests in flight per connection, the tx `depth` (default 128 for bw tests, 1 for lat tests)")
	both("Q", "cq-mod", perfCQMod, &c.CQMod, "send_lat: ask for the completion of every `N`th Send only, as perftest does; the others complete silently unless they fail (1: wait for every Send's completion)")
	both("o", "outs", 0, &c.outReads, "with -R, read_bw and read_lat: the RDMA Reads in flight, as perftest's -o (default: the adapter's most)")
	both("R", "rdma_cm", nil, &c.rdmaCM, "speak perftest 6.06's -R (rdma_cm) protocol, against perftest's ib_* -R of the same test")
	fs.BoolVar(&c.gbits, "report_gbits", false, "report bandwidth in Gb/sec instead of MB/sec")
	fs.BoolVar(&c.useSRQ, "use_srq", false, "send tests: each side posts its Receives to a shared receive queue (one per connection) instead of its endpoint, as perftest's --use_srq")
	fs.BoolVar(&c.Blocking, "b", false, "block in CompletionQueue.Notify for completions instead of polling")
	fs.BoolVar(&c.heap, "heap", false, "with -provider shm: put the windows in Go heap memory (reached with process_vm_readv/writev) instead of shm.AllocateMemory (reached with a copy through a shared mapping)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON document (test, provider, parameters, a row per size) instead of the table")
	fs.StringVar(&c.plot, "plot", "", "draw bandwidth (bw tests) or latency (lat tests) against message size into this PNG `file`")
	fs.BoolVar(&c.server, "server", false, "run only the server: wait for one client, serve it and exit")
	fs.BoolVar(&c.inProcess, "in-process", false, "without ADDRESS: run the server and the client in this process (always so with -provider loop)")
	fs.StringVar(&c.bind, "bind", "", "with --server: the `address` to listen on (default: the provider's loopback address)")
}

// perfUsage prints the help of nd perf.
func perfUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, `Usage: nd perf TEST [flags] [ADDRESS[:PORT]]

perftest's tests over any ND provider. TEST is one of:
  send_bw    Send/Receive bandwidth; the server grants credits for its Receives
  write_bw   RDMA Write bandwidth into the server's window
  read_bw    RDMA Read bandwidth from the server's window
  send_lat   Send/Receive ping-pong; reports half the round trip (as perftest,
             it waits for the completion of every -Q'th Send only)
  write_lat  RDMA Write ping-pong, each side polling the last byte of its
             window; reports half the round trip
  read_lat   back-to-back RDMA Reads, one in flight; reports the full Read

As perftest, the server runs without an address and the client with it:
  nd perf TEST --server [-p PORT]     the server: serves one client, then exits
  nd perf TEST [flags] ADDRESS[:PORT] the client: connects, measures, prints
Without an address nd perf runs both on this host: it starts itself as the
server in a second process on a free port and runs the client against it.
--in-process runs both in this process instead, and -provider loop (which
only connects adapters of one process) always does. The client tells the
server the test, sizes and depths: the server needs only -provider, -b, -p.

-q N makes N connections. Each side attaches all its endpoints to one
completion queue (both directions), made once, and serves them from one
goroutine: a completion goes back to its connection by its Result. The bw
tests keep every connection's pipeline full at once and report the sum.
The lat tests make one round trip (read_lat: one Read) at a time,
connection 0's, then 1's, and so on in turn: the latency reported is that
of one connection among N attached to one completion queue on each side,
the cost of many peers on a round trip. -n and -w count per connection; a
row's #iterations counts every connection's.

-R (--rdma_cm) speaks perftest 6.06's rdma_cm protocol instead, against
perftest's ib_send_bw, ib_send_lat, ib_write_bw, ib_write_lat, ib_read_bw and
ib_read_lat -R (over soft-iWARP, or any provider that reaches them), in
either role, with perftest's -s, -a, -n, -D, -q, -t, -Q and -o (read tests):
perftest sends no parameters, so both sides need the same -n or -D, -s or -a,
and -q (bw tests, as perftest); "--server -R" serves one perftest or nd perf
-R client, and pairs the client's -q connections with its own in the order
their requests arrive. By time (-D) the latency columns are #bytes #iterations t_avg[usec] tps average,
counted between a margin of a quarter of the duration at either end.
perftest's write_lat server writes first: over provider tcp its first Write
leaves once the client's TCP acknowledged the MPA reply (or the client's
first frame came), which serves siw's defaults and siw in peer-to-peer mode.

Bandwidth columns (MB is 2^20 bytes, as perftest; Gb is 10^9 bits):
  #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
BW average is all bytes of all connections over the wall time from the
first request posted to the last completion; BW peak the best rate over a
run of consecutive requests, summed over the connections (with -D it is the
average). Latency columns, in microseconds over the iterations (with -D over
the first %d):
  #bytes #iterations t_min t_max t_typical(median) t_avg t_stdev 99%% 99.9%%
--json adds client_cpu_usec_per_op to each row: the client process's CPU
time (user and system) over the timed part per request (bw tests) or per
iteration (lat tests); polling keeps a core busy, so compare it with -b.
With --plot, bandwidth or latency against message size is drawn into a PNG.
On a terminal a progress line shows the size being measured.
Polling (the default, as perftest) keeps a core busy on each side; on a host
with few cores it starves the provider's own threads (tcp): -b blocks in
Notify instead, and is passed on to the server process nd perf starts.
write_lat polls the last byte whatever -b says.

Flags (perftest's -s and --size are the same flag, and so on):
`, perfMaxSamples)
	fs.PrintDefaults()
}

// parseInterspersed parses args with fs, letting flags and positional
// arguments mix as perftest's getopt does, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional, args = append(positional, args[0]), args[1:]
	}
}

// parse takes the positional arguments, applies the test's defaults and
// checks the flags.
func (c *Config) parse(fs *flag.FlagSet, args []string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.portSet = set["p"] || set["port"]
	if len(args) > 1 {
		return cli.Usagef("too many arguments: %q", args)
	}
	if len(args) == 1 {
		c.target = args[0]
	}
	if !set["s"] && !set["size"] {
		c.Size = perfBWSize
		if c.Test.Lat {
			c.Size = perfLatSize
		}
	}
	if !set["n"] && !set["iters"] {
		c.Iters = perfBWIters
		if c.Test.Lat {
			c.Iters = perfLatIters
		}
	}
	if !set["t"] && !set["tx-depth"] {
		c.TxDepth = perfTxDepth
		if c.Test.Lat {
			c.TxDepth = 1
		}
	}
	switch {
	case c.server && c.target != "":
		return cli.Usagef("--server takes no address: the client is given the server's")
	case c.server && c.inProcess:
		return cli.Usagef("--server and --in-process exclude each other")
	case c.inProcess && c.target != "":
		return cli.Usagef("--in-process runs both sides: give no address")
	case c.bind != "" && !c.server:
		return cli.Usagef("--bind applies to --server")
	case c.Size < 1 || c.Size > session.MaxServedSize:
		return cli.Usagef("-s %d: the size must be 1 to %d bytes", c.Size, session.MaxServedSize)
	case c.Iters < 1:
		return cli.Usagef("-n %d: at least 1 iteration", c.Iters)
	case c.Warmup < -1:
		return cli.Usagef("-w %d: the warm-up takes 0 iterations or more", c.Warmup)
	case c.duration < 0 || c.duration > perfMaxDuration:
		return cli.Usagef("-D %d: the duration must be 0 to %d seconds", c.duration, perfMaxDuration)
	case c.port > 65535:
		return cli.Usagef("-p %d: not a port", c.port)
	case c.QPs < 1 || c.QPs > perfMaxQPs:
		return cli.Usagef("-q %d: 1 to %d connections", c.QPs, perfMaxQPs)
	case c.QPs > 1 && c.Test.Lat && c.rdmaCM:
		return cli.Usagef("-q %d: the latency tests measure one connection (with -R, as perftest)", c.QPs)
	case c.TxDepth < 1 || c.TxDepth > perfMaxTxDepth:
		return cli.Usagef("-t %d: the tx depth must be 1 to %d", c.TxDepth, perfMaxTxDepth)
	case c.TxDepth > 1 && c.Test.Lat && !c.rdmaCM:
		return cli.Usagef("-t %d: the latency tests keep one request in flight", c.TxDepth)
	case c.outReads != 0 && !c.rdmaCM:
		return cli.Usagef("-o applies with -R")
	case c.CQMod < 1 || c.CQMod > perfMaxCQMod:
		return cli.Usagef("-Q %d: every 1st to %dth Send", c.CQMod, perfMaxCQMod)
	case c.server && (c.JSON || c.plot != ""):
		return cli.Usagef("--json and --plot are client flags: the client reports")
	case c.useSRQ && c.Test.op != opSend:
		return cli.Usagef("--use_srq applies to the send tests")
	case c.useSRQ && c.rdmaCM:
		return cli.Usagef("--use_srq applies without -R")
	}
	return nil
}

// sizes returns the message sizes to measure.
func (c *Config) sizes() []int {
	if !c.all {
		return []int{int(c.Size)}
	}
	var sizes []int
	for s := perfAllMin; s <= perfAllMax; s *= 2 {
		sizes = append(sizes, s)
	}
	return sizes
}

// serverAddr is where the server listens: -bind's address or the
// provider's default, and -p.
func (c *Config) serverAddr(addrs []netip.Addr) (netip.AddrPort, error) {
	addr := session.DefaultServerAddr(addrs)
	if c.bind != "" {
		a, _, err := session.ParseTarget(c.bind, 0)
		if err != nil {
			return netip.AddrPort{}, err
		}
		addr = a.Addr()
	}
	return netip.AddrPortFrom(addr, uint16(c.port)), nil
}

// run opens the provider and runs the server, the client, or both.
func (c *Config) run(ctx context.Context, out io.Writer) error {
	p, addrs, err := c.Provider.Open()
	if err != nil {
		return err
	}
	if c.rdmaCM {
		return c.runRCM(ctx, p, addrs, out)
	}
	switch {
	case c.target != "":
		target, err := session.ResolveTarget(c.target, c.port, c.portSet)
		if err != nil {
			return err
		}
		return session.RunClient(ctx, c, p, addrs, target, out)
	case c.server:
		local, err := c.serverAddr(addrs)
		if err != nil {
			return err
		}
		return session.RunServer(ctx, c, p, addrs, local, out)
	case c.inProcess || p.Name() == "loop":
		port := uint16(0)
		if c.portSet {
			port = uint16(c.port)
		}
		return session.RunLocal(ctx, c, p, addrs, port, out)
	default:
		return c.runTwoProcesses(ctx, p, addrs, out)
	}
}
