package ndtools

// nd rdmaping: the ND SDK's ndrping, a one-sided RDMA throughput test. The
// server binds a memory window over its buffer and sends it to the client,
// then waits; the client RDMA-Writes into the window (or RDMA-Reads from
// it) with a pipeline of requests, times each size, and tells the server
// when it is done with a final Send.

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

const (
	rdmapingPort = 54326 // ndrping's default port
	// The operations, as the client's hello names them.
	rdmaOpWrite = 1
	rdmaOpRead  = 2
)

// rdmapingConfig is the parsed command line of nd rdmaping.
type rdmapingConfig struct {
	session.DataFlags
	read, write bool // -r, -w
}

// RdmapingFlags defines the flags of nd rdmaping.
func RdmapingFlags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs := flag.NewFlagSet("rdmaping", flag.ContinueOnError)
	c := &rdmapingConfig{}
	c.Define(fs, rdmapingPort, "RDMA requests in flight at most (the pipeline `depth`; with -r also at most the negotiated read limit)")
	fs.BoolVar(&c.write, "w", false, "client: RDMA Write into the server's window (the default)")
	fs.BoolVar(&c.read, "r", false, "client: RDMA Read from the server's window")
	fs.Usage = func() {
		c.Usage(fs, "[-provider NAME] [-crc] [-s | -c] [-p PORT] [-w | -r] [-b] [-n SGES]\n"+
			"                   [-q DEPTH] [-max BYTES] [-iters N] [ADDRESS[:PORT]]",
			fmt.Sprintf(`One-sided RDMA test (the ND SDK's ndrping). The server binds a memory
window over its buffer, allowing Write or Read as the client asks, and sends
the client its descriptor and its read limit; the client then RDMA-Writes
(-w, the default) or RDMA-Reads (-r) with up to -q requests in flight, the
server taking no part, and sends a final message when done. Sizes go from 1
byte to -max, doubling, with min(%d, 500*4MiB/size) requests per size after
%d warm-up requests (-iters caps both). With -r the pipeline is clamped to
the negotiated read limit. Both sides need an adapter that places Writes in
order (AdapterInOrderDMA). The server waits in Notify whatever -b says.
Latency is the elapsed time per request in microseconds, CPU the process's
CPU time in percent of the elapsed time, Bytes/Sec the payload rate.
`, timing.OneWayIterations, timing.WarmupIterations))
	}
	return fs, func(ctx context.Context, args []string) error {
		if err := c.Parse(fs, args); err != nil {
			return err
		}
		switch {
		case c.read && c.write:
			return cli.Usagef("-r and -w exclude each other")
		case c.Server && (c.read || c.write):
			return cli.Usagef("-r and -w are client flags: the server allows what the client asks for")
		}
		return c.Run(ctx, c, stdout)
	}
}

// rdmaOpName names the operation of op.
func rdmaOpName(op uint64) string {
	if op == rdmaOpRead {
		return "RDMA Read"
	}
	return "RDMA Write"
}

// Serve accepts one connection on l, binds a window over a buffer of the
// size the client asked for and sends it, then waits for the client's final
// message and for the client to disconnect.
func (c *rdmapingConfig) Serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := session.NextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := session.RdmapingGreeting.ParseHello(r.Data)
	if err != nil {
		return r.Reject(err)
	}
	if h.Arg != rdmaOpWrite && h.Arg != rdmaOpRead {
		return r.Reject(fmt.Errorf("the client asks for operation %d, neither Write (%d) nor Read (%d)", h.Arg, rdmaOpWrite, rdmaOpRead))
	}
	read := h.Arg == rdmaOpRead
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return r.Reject(err)
	}
	if err := datapath.CheckWindow(ai, h.MaxSize); err != nil {
		return r.Reject(fmt.Errorf("adapter %s: %w", a.Address(), err))
	}
	// One Receive for the final message; a Bind and a Send outbound.
	limits := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 2, InboundSGE: 1, OutboundSGE: 1}
	rights := nd.FlagAllowWrite
	if read {
		limits.InboundReadLimit = ai.MaxInboundReadLimit
		rights = nd.FlagAllowRead
	}
	s, err := session.New(a, r.Conn, limits)
	if err != nil {
		return r.Reject(err)
	}
	defer s.Close()
	buf, mr, err := datapath.Registered(ctx, a, h.MaxSize)
	if err != nil {
		return r.Reject(err)
	}
	defer datapath.Deregister(ctx, a, mr)
	ctrl, ctrlMR, err := datapath.Registered(ctx, a, 2*datapath.WindowMsgSize)
	if err != nil {
		return r.Reject(err)
	}
	defer datapath.Deregister(ctx, a, ctrlMR)
	var bindRes, sendRes, doneRes nd.Result
	if err := s.EP.Receive(&doneRes, []nd.SGE{{Buffer: ctrl[datapath.WindowMsgSize:], Region: ctrlMR}}); err != nil {
		return r.Reject(fmt.Errorf("posting Receive: %w", err))
	}
	if err := s.Accept(ctx, r, session.RdmapingGreeting.Welcome(nil)); err != nil {
		return err
	}
	ird, _, err := session.ReadLimits(r.Conn, limits)
	if err != nil {
		return err
	}
	mw, desc, err := s.BindWindow(&bindRes, mr, buf, rights)
	if err != nil {
		return err
	}
	defer mw.Close()
	msg := datapath.WindowMsg{Desc: desc, ReadLimit: uint32(ird)}.Put(ctrl)
	if err := s.EP.Send(&sendRes, []nd.SGE{{Buffer: msg, Region: ctrlMR}}, 0); err != nil {
		return fmt.Errorf("sending the window: %w", err)
	}
	fmt.Fprintf(out, "Accepted a connection from %s: %s of up to %d bytes, %d Reads in flight\n", r.Peer, rdmaOpName(h.Arg), h.MaxSize, ird)
	// The server has nothing to do until the client is done: it blocks.
	rp := datapath.NewReaper(ctx, s.CQ, true, 4)
	if err := rp.WaitAll(&bindRes, &sendRes, &doneRes); err != nil {
		return fmt.Errorf("client %s: waiting for the Bind, the window's Send and the final message: %w", r.Peer, err)
	}
	if err := s.Conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.Peer, err)
	}
	fmt.Fprintf(out, "The client is done; %s disconnected\n", r.Peer)
	return nil
}
