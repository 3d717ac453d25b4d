package main

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
)

const (
	rdmapingPort = 54326 // ndrping's default port
	// The operations, as the client's hello names them.
	rdmaOpWrite = 1
	rdmaOpRead  = 2
)

// rdmapingConfig is the parsed command line of nd rdmaping.
type rdmapingConfig struct {
	dataFlags
	read, write bool // -r, -w
}

// rdmapingFlags defines the flags of nd rdmaping.
func rdmapingFlags(stdout, stderr io.Writer) (*flag.FlagSet, runFunc) {
	fs := flag.NewFlagSet("rdmaping", flag.ContinueOnError)
	c := &rdmapingConfig{}
	c.define(fs, rdmapingPort, "RDMA requests in flight at most (the pipeline `depth`; with -r also at most the negotiated read limit)")
	fs.BoolVar(&c.write, "w", false, "client: RDMA Write into the server's window (the default)")
	fs.BoolVar(&c.read, "r", false, "client: RDMA Read from the server's window")
	fs.Usage = func() {
		c.usage(fs, "[-provider NAME] [-crc] [-s | -c] [-p PORT] [-w | -r] [-b] [-n SGES]\n"+
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
`, oneWayIterations, warmupIterations))
	}
	return fs, func(ctx context.Context, args []string) error {
		if err := c.parse(fs, args); err != nil {
			return err
		}
		switch {
		case c.read && c.write:
			return usagef("-r and -w exclude each other")
		case c.server && (c.read || c.write):
			return usagef("-r and -w are client flags: the server allows what the client asks for")
		}
		return c.run(ctx, c, stdout)
	}
}

// rdmaOpName names the operation of op.
func rdmaOpName(op uint64) string {
	if op == rdmaOpRead {
		return "RDMA Read"
	}
	return "RDMA Write"
}

// checkWindow checks that a window of size bytes fits the adapter's limits
// and that the adapter places Writes in order.
func checkWindow(ai nd.AdapterInfo, size int) error {
	if err := needInOrderDMA(ai); err != nil {
		return err
	}
	if size > min(ai.MaxOutboundLength, ai.MaxRegistrationSize, ai.MaxWindowSize) {
		return fmt.Errorf("transfers of %d bytes: the adapter allows %d bytes per Read or Write, %d per registration and %d per window",
			size, ai.MaxOutboundLength, ai.MaxRegistrationSize, ai.MaxWindowSize)
	}
	return nil
}

// serve accepts one connection on l, binds a window over a buffer of the
// size the client asked for and sends it, then waits for the client's final
// message and for the client to disconnect.
func (c *rdmapingConfig) serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := nextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := rdmapingGreeting.parseHello(r.data)
	if err != nil {
		return r.reject(err)
	}
	if h.arg != rdmaOpWrite && h.arg != rdmaOpRead {
		return r.reject(fmt.Errorf("the client asks for operation %d, neither Write (%d) nor Read (%d)", h.arg, rdmaOpWrite, rdmaOpRead))
	}
	read := h.arg == rdmaOpRead
	ai, err := queryAdapter(a)
	if err != nil {
		return r.reject(err)
	}
	if err := checkWindow(ai, h.maxSize); err != nil {
		return r.reject(fmt.Errorf("adapter %s: %w", a.Address(), err))
	}
	// One Receive for the final message; a Bind and a Send outbound.
	limits := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 2, InboundSGE: 1, OutboundSGE: 1}
	rights := nd.FlagAllowWrite
	if read {
		limits.InboundReadLimit = ai.MaxInboundReadLimit
		rights = nd.FlagAllowRead
	}
	s, err := newSession(a, r.conn, limits)
	if err != nil {
		return r.reject(err)
	}
	defer s.close()
	buf, mr, err := registered(ctx, a, h.maxSize)
	if err != nil {
		return r.reject(err)
	}
	defer deregister(ctx, a, mr)
	ctrl, ctrlMR, err := registered(ctx, a, 2*windowMsgSize)
	if err != nil {
		return r.reject(err)
	}
	defer deregister(ctx, a, ctrlMR)
	var bindRes, sendRes, doneRes nd.Result
	if err := s.ep.Receive(&doneRes, []nd.SGE{{Buffer: ctrl[windowMsgSize:], Region: ctrlMR}}); err != nil {
		return r.reject(fmt.Errorf("posting Receive: %w", err))
	}
	if err := s.accept(ctx, r, rdmapingGreeting.welcome(nil)); err != nil {
		return err
	}
	ird, _, err := readLimits(r.conn, limits)
	if err != nil {
		return err
	}
	mw, desc, err := s.bindWindow(&bindRes, mr, buf, rights)
	if err != nil {
		return err
	}
	defer mw.Close()
	msg := windowMsg{desc: desc, readLimit: uint32(ird)}.put(ctrl)
	if err := s.ep.Send(&sendRes, []nd.SGE{{Buffer: msg, Region: ctrlMR}}, 0); err != nil {
		return fmt.Errorf("sending the window: %w", err)
	}
	fmt.Fprintf(out, "Accepted a connection from %s: %s of up to %d bytes, %d Reads in flight\n", r.peer, rdmaOpName(h.arg), h.maxSize, ird)
	// The server has nothing to do until the client is done: it blocks.
	rp := newReaper(ctx, s.cq, true, 4)
	if err := rp.waitAll(&bindRes, &sendRes, &doneRes); err != nil {
		return fmt.Errorf("client %s: waiting for the Bind, the window's Send and the final message: %w", r.peer, err)
	}
	if err := s.conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.peer, err)
	}
	fmt.Fprintf(out, "The client is done; %s disconnected\n", r.peer)
	return nil
}
