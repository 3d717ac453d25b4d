package session

// What every data test (ping, pingpong, rdmaping, rdmapingpong) shares: the
// ND tools' command line (-s, -c, -p, -b, -n, -q and ADDRESS[:PORT]) plus
// nd's -provider, -crc, -max and -iters, and the three ways to run: server,
// client, or both in this process when neither -s nor -c is given.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// DataTool is the two halves of a data test.
type DataTool interface {
	// Serve accepts one connection on l, a listener of a, and serves it;
	// progress messages go to out.
	Serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error
	// Drive connects from a to the server at remote, runs the test, prints
	// the table to out and disconnects.
	Drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error
}

// DataFlags is the parsed command line of a data test.
type DataFlags struct {
	Provider       ProviderOpts
	Server, Client bool
	Port           uint
	PortSet        bool // -p was given
	Blocking       bool // -b: block in Notify instead of polling
	SGEs           int  // -n: scatter/gather entries per request
	Depth          int  // -q: the queue or pipeline depth (0 if the test has no -q)
	MaxSize        cli.ByteSize
	Iters          int    // -iters: cap on the iterations per size (0: none)
	target         string // the ADDRESS[:PORT] argument, or ""
	// WithoutAddress, if not empty, replaces the usage's lines on running
	// without -s and -c ("both sides in this process").
	WithoutAddress string
}

// Define defines the shared flags on fs with the test's default port.
// depthUsage, if not empty, defines -q (default 128) with that usage.
func (f *DataFlags) Define(fs *flag.FlagSet, port uint16, depthUsage string) {
	f.MaxSize = timing.DefaultMaxSize
	f.Provider.Define(fs)
	fs.BoolVar(&f.Server, "s", false, "run the server: accept one connection and serve it")
	fs.BoolVar(&f.Client, "c", false, "run the client: connect to ADDRESS[:PORT] and measure")
	fs.UintVar(&f.Port, "p", uint(port), "the `port` to listen on or connect to (ADDRESS:PORT overrides it)")
	fs.BoolVar(&f.Blocking, "b", false, "block in CompletionQueue.Notify for completions instead of polling")
	fs.IntVar(&f.SGEs, "n", 1, "scatter/gather `entries` per request")
	if depthUsage != "" {
		fs.IntVar(&f.Depth, "q", 128, depthUsage)
	}
	fs.Var(&f.MaxSize, "max", "the largest message size in `bytes` (suffixes K, M, G)")
	fs.IntVar(&f.Iters, "iters", 0, "at most `N` iterations per size, and of the warm-up (0: the ND tool's count)")
}

// Usage prints a data test's help: the synopsis, the test's description,
// the ways to run it and the flags.
func (f *DataFlags) Usage(fs *flag.FlagSet, synopsis, description string) {
	w := fs.Output()
	name := fs.Name()
	fmt.Fprintf(w, "Usage: nd %s %s\n\n%s\n", name, synopsis, description)
	if f.WithoutAddress != "" {
		fmt.Fprint(w, f.WithoutAddress)
	} else {
		fmt.Fprintf(w, "  nd %-22s both sides in this process (loopback addresses)\n", name)
	}
	fmt.Fprintf(w, "  nd %-22s server on ADDRESS (default: the provider's loopback address)\n", name+" -s [ADDRESS]")
	fmt.Fprintf(w, "  nd %-22s client of the server at ADDRESS\n", name+" -c ADDRESS")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The loop provider only connects adapters of one process: use it without -s/-c.")
	fmt.Fprintln(w, "-provider tcp (iWARP over TCP) reaches other processes and hosts, -provider shm")
	fmt.Fprintln(w, "other processes of this host, -provider verbs (nd built with -tags verbs) the")
	fmt.Fprintln(w, "addresses of this host's RDMA devices.")
	fmt.Fprintln(w, "(The ND tools' -p meant polling, which is the default here; -p is the port.)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fs.PrintDefaults()
}

// Parse takes the positional arguments and checks the shared flags.
func (f *DataFlags) Parse(fs *flag.FlagSet, args []string) error {
	fs.Visit(func(fl *flag.Flag) { f.PortSet = f.PortSet || fl.Name == "p" })
	if len(args) > 1 {
		return cli.Usagef("too many arguments: %q", args)
	}
	if len(args) == 1 {
		f.target = args[0]
	}
	switch {
	case f.Server && f.Client:
		return cli.Usagef("-s and -c exclude each other")
	case f.Client && f.target == "":
		return cli.Usagef("-c needs the server's ADDRESS[:PORT]")
	case !f.Server && !f.Client && f.target != "":
		return cli.Usagef("give -s or -c with an address (without both, the test runs in this process)")
	case f.Port > 65535:
		return cli.Usagef("-p %d: not a port", f.Port)
	case f.SGEs < 1:
		return cli.Usagef("-n %d: a request needs at least 1 scatter/gather entry", f.SGEs)
	case f.Depth < 0 || fs.Lookup("q") != nil && f.Depth < 1:
		return cli.Usagef("-q %d: the queue depth must be at least 1", f.Depth)
	case f.MaxSize < 1:
		return cli.Usagef("-max %d: the largest message must be at least 1 byte", f.MaxSize)
	case f.Iters < 0:
		return cli.Usagef("-iters %d: must not be negative", f.Iters)
	}
	return nil
}

// Run opens the provider and runs the server, the client, or both.
func (f *DataFlags) Run(ctx context.Context, tool DataTool, out io.Writer) error {
	p, addrs, err := f.Provider.Open()
	if err != nil {
		return err
	}
	target := netip.AddrPortFrom(DefaultServerAddr(addrs), uint16(f.Port))
	if f.target != "" {
		t, err := ResolveTarget(f.target, f.Port, f.PortSet)
		if err != nil {
			return err
		}
		target = t
	}
	switch {
	case f.Server:
		return RunServer(ctx, tool, p, addrs, target, out)
	case f.Client:
		return RunClient(ctx, tool, p, addrs, target, out)
	default:
		port := uint16(0)
		if f.PortSet {
			port = uint16(f.Port)
		}
		return RunLocal(ctx, tool, p, addrs, port, out)
	}
}

// RunServer listens on target and serves one client.
func RunServer(ctx context.Context, tool DataTool, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := OpenAdapter(p, addrs, target.Addr())
	if err != nil {
		return err
	}
	defer a.Close()
	l, err := Listen(a, target.Port())
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(out, "Listening on %s (provider %s)\n", netip.AddrPortFrom(a.Address(), l.Port()), p.Name())
	return tool.Serve(ctx, a, l, out)
}

// RunClient connects to the server at target and prints the table.
func RunClient(ctx context.Context, tool DataTool, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := OpenAdapter(p, addrs, pickLocal(addrs, target.Addr()))
	if err != nil {
		return err
	}
	defer a.Close()
	return tool.Drive(ctx, a, target, out)
}

// RunLocal runs the server on the provider's loopback address and the
// client on another loopback address (or the same one), in this process.
// The server listens on port, 0 for a free one.
func RunLocal(ctx context.Context, tool DataTool, p nd.Provider, addrs []netip.Addr, port uint16, out io.Writer) error {
	serverAddr := DefaultServerAddr(addrs)
	sa, err := OpenAdapter(p, addrs, serverAddr)
	if err != nil {
		return err
	}
	defer sa.Close()
	ca, err := OpenAdapter(p, addrs, pickLocal(addrs, serverAddr))
	if err != nil {
		return err
	}
	defer ca.Close()
	l, err := Listen(sa, port)
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
		if err := tool.Serve(ctx, sa, l, io.Discard); err != nil {
			fail("server", err)
		}
	}()
	clientErr := tool.Drive(ctx, ca, netip.AddrPortFrom(serverAddr, l.Port()), out)
	if clientErr != nil {
		fail("client", clientErr)
	}
	<-served
	if clientErr != nil && parent.Err() != nil {
		return fmt.Errorf("client: %w", clientErr)
	}
	return first
}

// CheckQueues checks the endpoint limits l against the adapter's, naming
// the flags that set them.
func (f *DataFlags) CheckQueues(ai nd.AdapterInfo, l nd.EndpointLimits) error {
	switch {
	case l.InboundSGE > ai.MaxInboundSGE || l.OutboundSGE > ai.MaxOutboundSGE:
		return fmt.Errorf("-n %d: the adapter allows %d scatter/gather entries per Receive and %d per Send, Read or Write",
			f.SGEs, ai.MaxInboundSGE, ai.MaxOutboundSGE)
	case l.InboundEntries > ai.MaxInboundRequests || l.OutboundEntries > ai.MaxOutboundRequests ||
		l.InboundEntries+l.OutboundEntries > ai.MaxCQEntries:
		return fmt.Errorf("-q %d: the adapter allows %d Receives, %d outbound requests and %d completion queue entries",
			f.Depth, ai.MaxInboundRequests, ai.MaxOutboundRequests, ai.MaxCQEntries)
	}
	return nil
}

// CheckSize checks that messages of size bytes fit the adapter's limits.
func CheckSize(ai nd.AdapterInfo, size int) error {
	if size > min(ai.MaxInboundLength, ai.MaxOutboundLength, ai.MaxRegistrationSize) {
		return fmt.Errorf("messages of %d bytes: the adapter allows %d bytes per Receive, %d per Send and %d per registration",
			size, ai.MaxInboundLength, ai.MaxOutboundLength, ai.MaxRegistrationSize)
	}
	return nil
}

// QueryAdapter returns a's limits and capabilities.
func QueryAdapter(a nd.Adapter) (nd.AdapterInfo, error) {
	ai, err := a.Query()
	if err != nil {
		return ai, fmt.Errorf("adapter %s: Query: %w", a.Address(), err)
	}
	return ai, nil
}
