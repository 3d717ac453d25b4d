package main

// nd pingpong: the ND SDK's ndpingpong. The client sends a message, the
// server echoes it back, and the client times the round trips for message
// sizes from 1 byte to -max bytes, doubling.

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/godirect/nd"
)

// ndpingpong's constants.
const (
	pingpongPort     = 54325         // ndpingpong's default port
	maxIterations    = 100_000       // iterations per size at most
	sweepBytes       = 500 * 4 << 20 // a size gets sweepBytes/size iterations, up to maxIterations
	defaultMaxSize   = 4 << 20       // the largest message of the sweep
	warmupIterations = 1000          // round trips before the sweep, of 1 byte
)

// pingpongConfig is the parsed command line of nd pingpong.
type pingpongConfig struct {
	provider       string
	server, client bool
	port           uint // -p
	portSet        bool // -p was given
	blocking       bool // -b: block in Notify instead of polling
	sges           int  // -n: scatter/gather entries per message
	depth          int  // -q: Receives kept posted (and the endpoint's queue depths)
	maxSize        byteSize
	iters          int    // -iters: cap on the iterations per size (0: none)
	target         string // the ADDRESS[:PORT] argument, or ""
}

// pingpongFlags defines the flags of nd pingpong.
func pingpongFlags(stdout, stderr io.Writer) (*flag.FlagSet, runFunc) {
	fs := flag.NewFlagSet("pingpong", flag.ContinueOnError)
	c := &pingpongConfig{maxSize: defaultMaxSize}
	provider := providerFlag(fs)
	fs.BoolVar(&c.server, "s", false, "run the server: accept one connection and echo every message")
	fs.BoolVar(&c.client, "c", false, "run the client: connect to ADDRESS[:PORT] and measure")
	fs.UintVar(&c.port, "p", pingpongPort, "the `port` to listen on or connect to (ADDRESS:PORT overrides it)")
	fs.BoolVar(&c.blocking, "b", false, "block in CompletionQueue.Notify for completions instead of polling")
	fs.IntVar(&c.sges, "n", 1, "scatter/gather `entries` per message")
	fs.IntVar(&c.depth, "q", 128, "Receives kept posted (the endpoint's queue `depth`)")
	fs.Var(&c.maxSize, "max", "the largest message size in `bytes` (suffixes K, M, G)")
	fs.IntVar(&c.iters, "iters", 0, "at most `N` iterations per size, and of the warm-up (0: ndpingpong's count)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: nd pingpong [-provider NAME] [-s | -c] [-p PORT] [-b] [-n SGES] [-q DEPTH]")
		fmt.Fprintln(w, "                   [-max BYTES] [-iters N] [ADDRESS[:PORT]]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Round-trip Send/Receive test (the ND SDK's ndpingpong). The client sends")
		fmt.Fprintln(w, "each message, the server echoes it; sizes go from 1 byte to -max, doubling,")
		fmt.Fprintf(w, "with min(%d, 500*4MiB/size) iterations per size after %d warm-up round\n",
			maxIterations, warmupIterations)
		fmt.Fprintln(w, "trips (-iters caps both).")
		fmt.Fprintln(w, "Latency is half the round trip in microseconds, CPU the process's CPU time")
		fmt.Fprintln(w, "in percent of the elapsed time, Bytes/Sec counts both directions.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "  nd pingpong                  both sides in this process, over two adapters")
		fmt.Fprintln(w, "  nd pingpong -s [ADDRESS]     server on ADDRESS (default: the first address)")
		fmt.Fprintln(w, "  nd pingpong -c ADDRESS       client of the server at ADDRESS")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "The loop provider only connects adapters of one process: use it without -s/-c.")
		fmt.Fprintln(w, "(ndpingpong's -p meant polling, which is the default here; -p is the port.)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
	}
	return fs, func(ctx context.Context, args []string) error {
		c.provider = *provider
		fs.Visit(func(f *flag.Flag) { c.portSet = c.portSet || f.Name == "p" })
		if len(args) > 1 {
			return usagef("too many arguments: %q", args)
		}
		if len(args) == 1 {
			c.target = args[0]
		}
		return c.run(ctx, stdout)
	}
}

// run checks the configuration and runs the server, the client, or both.
func (c *pingpongConfig) run(ctx context.Context, out io.Writer) error {
	switch {
	case c.server && c.client:
		return usagef("-s and -c exclude each other")
	case c.client && c.target == "":
		return usagef("-c needs the server's ADDRESS[:PORT]")
	case !c.server && !c.client && c.target != "":
		return usagef("give -s or -c with an address (without both, the test runs in this process)")
	case c.port > 65535:
		return usagef("-p %d: not a port", c.port)
	case c.sges < 1:
		return usagef("-n %d: a message needs at least 1 scatter/gather entry", c.sges)
	case c.depth < 1:
		return usagef("-q %d: the queue depth must be at least 1", c.depth)
	case c.maxSize < 1:
		return usagef("-max %d: the largest message must be at least 1 byte", c.maxSize)
	case c.iters < 0:
		return usagef("-iters %d: must not be negative", c.iters)
	}
	p, addrs, err := openProvider(c.provider)
	if err != nil {
		return err
	}

	target := netip.AddrPortFrom(addrs[0], uint16(c.port))
	if c.target != "" {
		t, hasPort, err := parseTarget(c.target, uint16(c.port))
		if err != nil {
			return err
		}
		if hasPort && c.portSet && t.Port() != uint16(c.port) {
			return usagef("the port of %s and -p %d disagree", c.target, c.port)
		}
		target = t
	}

	switch {
	case c.server:
		return c.runServer(ctx, p, addrs, target, out)
	case c.client:
		return c.runClient(ctx, p, addrs, target, out)
	default:
		return c.runLocal(ctx, p, addrs, out)
	}
}

// runServer listens on target and serves one client.
func (c *pingpongConfig) runServer(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := openAdapter(p, addrs, target.Addr())
	if err != nil {
		return err
	}
	defer a.Close()
	l, err := listen(a, target.Port())
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(out, "Listening on %s (provider %s)\n", netip.AddrPortFrom(a.Address(), l.Port()), p.Name())
	return c.serve(ctx, a, l, out)
}

// runClient connects to the server at target and prints the table.
func (c *pingpongConfig) runClient(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := openAdapter(p, addrs, pickLocal(addrs, target.Addr()))
	if err != nil {
		return err
	}
	defer a.Close()
	return c.ping(ctx, a, target, out)
}

// runLocal runs the server on the provider's first address and the client
// on its second (or the first again), in this process. The server listens on
// a free port unless -p was given.
func (c *pingpongConfig) runLocal(ctx context.Context, p nd.Provider, addrs []netip.Addr, out io.Writer) error {
	serverAddr, clientAddr := addrs[0], addrs[0]
	if len(addrs) > 1 {
		clientAddr = addrs[1]
	}
	port := uint16(0)
	if c.portSet {
		port = uint16(c.port)
	}
	sa, err := openAdapter(p, addrs, serverAddr)
	if err != nil {
		return err
	}
	defer sa.Close()
	ca, err := openAdapter(p, addrs, clientAddr)
	if err != nil {
		return err
	}
	defer ca.Close()
	l, err := listen(sa, port)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	defer l.Close()

	// The first side to fail cancels the other; its error is the one that
	// explains what went wrong, unless both stopped because ctx ended: then
	// the client's error tells how far the test got.
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once  sync.Once
		first error
	)
	fail := func(role string, err error) {
		once.Do(func() { first = fmt.Errorf("%s: %w", role, err) })
		cancel()
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := c.serve(ctx, sa, l, io.Discard); err != nil {
			fail("server", err)
		}
	}()
	clientErr := c.ping(ctx, ca, netip.AddrPortFrom(serverAddr, l.Port()), out)
	if clientErr != nil {
		fail("client", clientErr)
	}
	<-served
	if clientErr != nil && parent.Err() != nil {
		return fmt.Errorf("client: %w", clientErr)
	}
	return first
}

// step is one message size of the sweep and its number of iterations.
type step struct{ size, iters int }

// schedule returns the sizes from 1 to maxSize, doubling, with ndpingpong's
// iteration count for each, capped at itersCap if it is not 0.
func schedule(maxSize, itersCap int) []step {
	var steps []step
	for size := 1; size <= maxSize; size *= 2 {
		n := max(1, min(maxIterations, sweepBytes/size))
		if itersCap > 0 {
			n = min(n, itersCap)
		}
		steps = append(steps, step{size, n})
		if size > maxSize/2 {
			break // the next doubling would pass maxSize (or overflow)
		}
	}
	return steps
}

// warmups is the number of warm-up round trips.
func warmups(itersCap int) int {
	if itersCap > 0 {
		return min(warmupIterations, itersCap)
	}
	return warmupIterations
}

// The connection's private data. The client's Connect carries a hello: the
// magic, the version, the largest message and the number of messages, so
// that the server can size its buffers and knows when the test is over. The
// server's Accept answers the magic and the version.
const (
	helloMagic   = "NDPP"
	helloVersion = 1
	helloSize    = 24
	welcomeSize  = 8
	// maxServedSize bounds what a client can make the server allocate.
	maxServedSize = 1 << 30
)

// hello is the client's private data.
type hello struct {
	maxSize  int
	messages int64
}

// marshal returns the wire form of h (big-endian).
func (h hello) marshal() []byte {
	b := make([]byte, 0, helloSize)
	b = append(b, helloMagic...)
	b = binary.BigEndian.AppendUint32(b, helloVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(h.maxSize))
	return binary.BigEndian.AppendUint64(b, uint64(h.messages))
}

// parseHello parses and checks a client's private data.
func parseHello(b []byte) (hello, error) {
	if len(b) < helloSize || string(b[:4]) != helloMagic {
		return hello{}, fmt.Errorf("the peer is not an nd pingpong client (private data %q)", b)
	}
	if v := binary.BigEndian.Uint32(b[4:8]); v != helloVersion {
		return hello{}, fmt.Errorf("the client speaks nd pingpong version %d, not %d", v, helloVersion)
	}
	size, n := binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[16:24])
	if size < 1 || size > maxServedSize || n < 1 || n > 1<<62 {
		return hello{}, fmt.Errorf("the client asks for %d messages of up to %d bytes; the server takes up to %d bytes", n, size, maxServedSize)
	}
	return hello{maxSize: int(size), messages: int64(n)}, nil
}

// welcome is the server's private data.
func welcome() []byte {
	return binary.BigEndian.AppendUint32([]byte(helloMagic), helloVersion)
}

// checkWelcome checks the server's private data.
func checkWelcome(b []byte) error {
	if len(b) < welcomeSize || string(b[:4]) != helloMagic || binary.BigEndian.Uint32(b[4:8]) != helloVersion {
		return fmt.Errorf("the peer is not an nd pingpong server of version %d (private data %q)", helloVersion, b)
	}
	return nil
}

// limits returns the endpoint limits of either side for messages of up to
// maxSize bytes, after checking them against the adapter's.
func (c *pingpongConfig) limits(a nd.Adapter, maxSize int) (nd.EndpointLimits, error) {
	ai, err := a.Query()
	if err != nil {
		return nd.EndpointLimits{}, fmt.Errorf("Query: %w", err)
	}
	switch {
	case c.sges > min(ai.MaxInboundSGE, ai.MaxOutboundSGE):
		return nd.EndpointLimits{}, fmt.Errorf("-n %d: the adapter allows %d scatter/gather entries per Receive and %d per Send",
			c.sges, ai.MaxInboundSGE, ai.MaxOutboundSGE)
	case c.depth > min(ai.MaxInboundRequests, ai.MaxOutboundRequests) || 2*c.depth > ai.MaxCQEntries:
		return nd.EndpointLimits{}, fmt.Errorf("-q %d: the adapter allows %d Receives, %d outbound requests and %d completion queue entries",
			c.depth, ai.MaxInboundRequests, ai.MaxOutboundRequests, ai.MaxCQEntries)
	case maxSize > min(ai.MaxInboundLength, ai.MaxOutboundLength, ai.MaxRegistrationSize):
		return nd.EndpointLimits{}, fmt.Errorf("messages of %d bytes: the adapter allows %d bytes per Receive, %d per Send and %d per registration",
			maxSize, ai.MaxInboundLength, ai.MaxOutboundLength, ai.MaxRegistrationSize)
	}
	return nd.EndpointLimits{
		InboundEntries:  c.depth,
		OutboundEntries: c.depth,
		InboundSGE:      c.sges,
		OutboundSGE:     c.sges,
	}, nil
}

// registered allocates and registers a buffer of size bytes, filled with a
// pattern (which also faults its pages in before the timing starts).
func registered(ctx context.Context, a nd.Adapter, size int) ([]byte, nd.MemoryRegion, error) {
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	mr, err := a.RegisterMemory(ctx, buf)
	if err != nil {
		return nil, nil, fmt.Errorf("RegisterMemory of %d bytes: %w", size, err)
	}
	return buf, mr, nil
}

// deregister ends the registrations, ignoring errors: it runs on the way out.
func deregister(ctx context.Context, a nd.Adapter, mrs ...nd.MemoryRegion) {
	for _, mr := range mrs {
		if mr != nil {
			a.DeregisterMemory(ctx, mr)
		}
	}
}

// errUnexpected reports a completion that belongs to no request in flight.
var errUnexpected = errors.New("a completion for no request in flight")
