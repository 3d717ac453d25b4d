package verify

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// defaultPort is nd verify's port.
const defaultPort = 54330

// defaultSizes go from 1 byte to 1 MiB, with lengths on both sides of the
// provider's boundaries (inline data, FPDUs of 64 KiB).
var defaultSizes = []int{1, 3, 64, 1000, 4096, 65535, 65536, 262145, 1 << 20}

// config is the parsed command line of nd verify.
type config struct {
	provider  session.ProviderOpts
	server    bool
	client    bool
	port      uint
	portSet   bool
	target    string
	sizes     []int
	n         int
	depth     int
	ops       []op // opSend, opWrite, opRead; empty: idle
	duration  time.Duration
	conns     int
	failOK    bool
	reconnect time.Duration
	retry     time.Duration
	out       io.Writer
}

// Flags defines the flags of nd verify.
func Flags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs, c, opsFlag := newFlagSet(stdout)
	return fs, func(ctx context.Context, args []string) error {
		if err := c.parsed(fs, *opsFlag, args); err != nil {
			return err
		}
		return c.run(ctx)
	}
}

// newFlagSet returns nd verify's flags, the configuration they fill in
// and the -ops flag's text.
func newFlagSet(stdout io.Writer) (*flag.FlagSet, *config, *string) {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	c := &config{out: stdout, sizes: defaultSizes}
	c.provider.Define(fs)
	fs.BoolVar(&c.server, "s", false, "run the server: serve -conns connections")
	fs.BoolVar(&c.client, "c", false, "run the client: connect to ADDRESS[:PORT]")
	fs.UintVar(&c.port, "p", defaultPort, "the `port` to listen on or connect to (ADDRESS:PORT overrides it)")
	fs.Func("sizes", "comma-separated message `sizes` in bytes (suffixes K, M) (default 1,3,64,1000,4096,65535,65536,262145,1M)", func(s string) error {
		sizes, err := parseSizes(s)
		c.sizes = sizes
		return err
	})
	fs.IntVar(&c.n, "n", 8, "messages of each size and kind")
	fs.IntVar(&c.depth, "depth", 8, "requests posted at once (a batch): Sends, Writes or Reads in flight")
	opsFlag := fs.String("ops", "send,write,read", "the kinds of traffic, in this order: send, write, read; or idle (connect, then post nothing)")
	fs.DurationVar(&c.duration, "D", 0, "repeat the sizes and kinds for this `duration` on each connection (idle: stay connected this long); 0: once")
	fs.IntVar(&c.conns, "conns", 1, "connections one after the other; on the server 0 serves until -timeout or interrupted")
	fs.BoolVar(&c.failOK, "fail-ok", false, "a connection the network or the peer ends (ND_IO_TIMEOUT, ND_CANCELED), or a Connect that fails so, is an outcome to report, not an error")
	fs.DurationVar(&c.reconnect, "reconnect", 0, "client, with -fail-ok: after a connection failed, connect again, retrying for at most this `duration` (as -retry), and run the sizes and kinds once")
	fs.DurationVar(&c.retry, "retry", 0, "client: retry a Connect that was refused, timed out or found no route, for at most this `duration`")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: nd verify -s [flags] [ADDRESS]")
		fmt.Fprintln(w, "       nd verify -c [flags] ADDRESS[:PORT]")
		fmt.Fprintln(w, "       nd verify [flags]            (both sides in this process)")
		fmt.Fprint(w, `
Verified traffic: the client Sends, RDMA-Writes and RDMA-Reads messages of
each size (-n of each, -depth at a time); every message carries bytes
derived from its number and size, which the receiving side checks, with
the byte after it (a message placed too long or at the wrong offset fails).
Each side keeps a ledger of its requests: every request posted completes
exactly once, and a connection is reported only once all of them did,
whatever ended it. A connection that fails (the network or the peer) is
reported with the time the side learned it, the first failure status and
the statuses its requests were flushed with; then the provider's
goroutines and the process's sockets must be back to what they were
before the connection. Lines start with "verify:"; "at=" is Unix time.

`)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
	}
	return fs, c, opsFlag
}

// parsed completes the configuration once fs parsed the command line.
func (c *config) parsed(fs *flag.FlagSet, opsFlag string, args []string) error {
	fs.Visit(func(fl *flag.Flag) { c.portSet = c.portSet || fl.Name == "p" })
	ops, err := parseOps(opsFlag)
	if err != nil {
		return err
	}
	c.ops = ops
	return c.check(args)
}

// parseSizes reads -sizes.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		var b cli.ByteSize
		if err := b.Set(f); err != nil {
			return nil, err
		}
		if b < 1 || b > maxMessage {
			return nil, fmt.Errorf("%s: sizes go from 1 byte to %d", f, maxMessage)
		}
		sizes = append(sizes, int(b))
	}
	return sizes, nil
}

// parseOps reads -ops.
func parseOps(s string) ([]op, error) {
	if s == "idle" {
		return nil, nil
	}
	var ops []op
	for f := range strings.SplitSeq(s, ",") {
		o, ok := map[string]op{"send": opSend, "write": opWrite, "read": opRead}[strings.TrimSpace(f)]
		if !ok || slices.Contains(ops, o) {
			return nil, cli.Usagef("-ops %q: a list of send, write and read, each once, or idle", s)
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// check checks the flags and the positional argument.
func (c *config) check(args []string) error {
	if len(args) > 1 {
		return cli.Usagef("too many arguments: %q", args)
	}
	if len(args) == 1 {
		c.target = args[0]
	}
	switch {
	case c.server && c.client:
		return cli.Usagef("-s and -c exclude each other")
	case c.client && c.target == "":
		return cli.Usagef("-c needs the server's ADDRESS[:PORT]")
	case !c.server && !c.client && c.target != "":
		return cli.Usagef("give -s or -c with an address (without both, both sides run in this process)")
	case c.port > 65535:
		return cli.Usagef("-p %d: not a port", c.port)
	case c.n < 1:
		return cli.Usagef("-n %d: at least one message of each size", c.n)
	case c.depth < 1 || c.depth > maxDepth:
		return cli.Usagef("-depth %d: from 1 to %d", c.depth, maxDepth)
	case c.conns < 0 || c.client && c.conns == 0:
		return cli.Usagef("-conns %d: at least one connection (0 only on the server)", c.conns)
	case c.reconnect > 0 && !c.failOK:
		return cli.Usagef("-reconnect follows a failed connection, which needs -fail-ok")
	}
	return nil
}

// maxSize is the largest message of the run.
func (c *config) maxSize() int { return slices.Max(c.sizes) }

// run opens the provider and runs the server, the client, or both.
func (c *config) run(ctx context.Context) error {
	p, addrs, err := c.provider.Open()
	if err != nil {
		return err
	}
	target := netip.AddrPortFrom(session.DefaultServerAddr(addrs), uint16(c.port))
	if c.target != "" {
		if target, err = session.ResolveTarget(c.target, c.port, c.portSet); err != nil {
			return err
		}
	}
	switch {
	case c.server:
		return session.RunServer(ctx, c, p, addrs, target, c.out)
	case c.client:
		return session.RunClient(ctx, c, p, addrs, target, c.out)
	}
	port := uint16(0)
	if c.portSet {
		port = uint16(c.port)
	}
	return session.RunLocal(ctx, c, p, addrs, port, c.out)
}

// report prints one line of the tool's output.
func (c *config) report(format string, args ...any) {
	fmt.Fprintf(c.out, "verify: "+format+"\n", args...)
}

// unixTime formats t for the "at=" fields.
func unixTime(t time.Time) string {
	return fmt.Sprintf("%d.%03d", t.Unix(), t.Nanosecond()/1e6)
}

// networkStatus reports whether st is how the network or the peer ends a
// connection: a timeout, or the flush of everything outstanding.
func networkStatus(st nd.Status) bool {
	return st == nd.ErrIOTimeout || st == nd.ErrCanceled
}

// errFailed is the error of a connection the network or the peer ended:
// an outcome with -fail-ok.
var errFailed = errors.New("the connection failed")
