package ndtools

// nd rdmapingpong: the ND SDK's ndrpingpong, an RDMA Write ping-pong. Each
// side binds a window over its receive buffer and hands it to the other;
// the client writes a message into the server's window, the server watches
// the last byte of its buffer until the message is there (RDMA Writes are
// placed in order) and writes its own back, and the client watches its
// buffer the same way. Neither side posts a Receive per message.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// rdmapingpongPort is ndrpingpong's default port.
const rdmapingpongPort = 54327

// rdmapingpongConfig is the parsed command line of nd rdmapingpong.
type rdmapingpongConfig struct{ session.DataFlags }

// RdmapingpongFlags defines the flags of nd rdmapingpong.
func RdmapingpongFlags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs := flag.NewFlagSet("rdmapingpong", flag.ContinueOnError)
	c := &rdmapingpongConfig{}
	c.Define(fs, rdmapingpongPort, "")
	fs.Usage = func() {
		c.Usage(fs, "[-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES]\n"+
			"                       [-max BYTES] [-iters N] [ADDRESS[:PORT]]",
			fmt.Sprintf(`RDMA Write ping-pong (the ND SDK's ndrpingpong). Each side binds a window
over its buffer and sends it to the other. The client RDMA-Writes a message
whose last byte is new to the server's buffer; the server spins on that
byte, then writes a message back whose last byte the client spins on. Sizes
go from 1 byte to -max, doubling, with min(%d, 500*4MiB/size) round trips
per size after %d warm-up round trips (-iters caps both; the client tells
the server). -b blocks for the Writes' completions; the last byte is always
polled. Both sides need an adapter that places Writes in order
(AdapterInOrderDMA).
Latency is half the round trip in microseconds, CPU the process's CPU time
in percent of the elapsed time, Bytes/Sec counts both directions.
`, timing.RoundTripIterations, timing.WarmupIterations))
	}
	return fs, func(ctx context.Context, args []string) error {
		if err := c.Parse(fs, args); err != nil {
			return err
		}
		return c.Run(ctx, c, stdout)
	}
}

// Drive connects from adapter a to the server at remote, exchanges the
// windows, runs the warm-up and the sweep, prints the table to out, sends
// the final message and disconnects.
func (c *rdmapingpongConfig) Drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	steps := timing.Schedule(int(c.MaxSize), c.Iters)
	maxSize := steps[len(steps)-1].Size
	p, err := c.newPonger(ctx, a, nil, maxSize)
	if err != nil {
		return err
	}
	defer p.close(ctx)
	if err := p.s.Dial(ctx, remote, session.RdmapingpongGreeting.Hello(session.Hello{MaxSize: maxSize, Arg: uint64(c.Iters)}), session.RdmapingpongGreeting.CheckWelcome); err != nil {
		return err
	}
	if err := p.exchange(true, maxSize); err != nil {
		return err
	}
	round := 0
	iterate := func(size, n int) error { return p.rounds(size, n, &round, true) }
	if err := timing.MeasureSweep(out, timing.Warmups(c.Iters), steps, 2, 2, nil, iterate); err != nil {
		return err
	}
	if err := p.finish(true); err != nil {
		return err
	}
	if err := p.s.Conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// Serve accepts one connection on l, exchanges the windows, answers every
// round trip of the schedule the client announced, waits for the client's
// final message and for the client to disconnect.
func (c *rdmapingpongConfig) Serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := session.NextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := session.RdmapingpongGreeting.ParseHello(r.Data)
	if err != nil {
		return r.Reject(err)
	}
	if h.Arg > math.MaxInt32 {
		return r.Reject(fmt.Errorf("the client asks for %d iterations per size", h.Arg))
	}
	itersCap := int(h.Arg)
	steps := timing.Schedule(h.MaxSize, itersCap)
	warm := timing.Warmups(itersCap)
	p, err := c.newPonger(ctx, a, r.Conn, h.MaxSize)
	if err != nil {
		return r.Reject(err)
	}
	defer p.close(ctx)
	if err := p.s.Accept(ctx, r, session.RdmapingpongGreeting.Welcome(nil)); err != nil {
		return err
	}
	if err := p.exchange(false, h.MaxSize); err != nil {
		return fmt.Errorf("client %s: %w", r.Peer, err)
	}
	rounds := int64(warm) + timing.TotalIters(steps)
	fmt.Fprintf(out, "Accepted a connection from %s: %d round trips of up to %d bytes\n", r.Peer, rounds, h.MaxSize)
	round := 0
	if err := p.rounds(1, warm, &round, false); err != nil {
		return fmt.Errorf("client %s: warm-up: %w", r.Peer, err)
	}
	for _, st := range steps {
		if err := p.rounds(st.Size, st.Iters, &round, false); err != nil {
			return fmt.Errorf("client %s: size %d: %w", r.Peer, st.Size, err)
		}
	}
	if err := p.finish(false); err != nil {
		return fmt.Errorf("client %s: %w", r.Peer, err)
	}
	if err := p.s.Conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.Peer, err)
	}
	fmt.Fprintf(out, "Answered %d round trips; %s disconnected\n", rounds, r.Peer)
	return nil
}
