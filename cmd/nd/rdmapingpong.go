package main

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
)

// rdmapingpongPort is ndrpingpong's default port.
const rdmapingpongPort = 54327

// rdmapingpongConfig is the parsed command line of nd rdmapingpong.
type rdmapingpongConfig struct{ dataFlags }

// rdmapingpongFlags defines the flags of nd rdmapingpong.
func rdmapingpongFlags(stdout, stderr io.Writer) (*flag.FlagSet, runFunc) {
	fs := flag.NewFlagSet("rdmapingpong", flag.ContinueOnError)
	c := &rdmapingpongConfig{}
	c.define(fs, rdmapingpongPort, "")
	fs.Usage = func() {
		c.usage(fs, "[-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES]\n"+
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
`, roundTripIterations, warmupIterations))
	}
	return fs, func(ctx context.Context, args []string) error {
		if err := c.parse(fs, args); err != nil {
			return err
		}
		return c.run(ctx, c, stdout)
	}
}

// drive connects from adapter a to the server at remote, exchanges the
// windows, runs the warm-up and the sweep, prints the table to out, sends
// the final message and disconnects.
func (c *rdmapingpongConfig) drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	steps := schedule(int(c.maxSize), c.iters)
	maxSize := steps[len(steps)-1].size
	p, err := c.newPonger(ctx, a, nil, maxSize)
	if err != nil {
		return err
	}
	defer p.close(ctx)
	if err := p.s.dial(ctx, remote, rdmapingpongGreeting.hello(hello{maxSize: maxSize, arg: uint64(c.iters)}), rdmapingpongGreeting.checkWelcome); err != nil {
		return err
	}
	if err := p.exchange(true, maxSize); err != nil {
		return err
	}
	round := 0
	iterate := func(size, n int) error { return p.rounds(size, n, &round, true) }
	if err := measureSweep(out, warmups(c.iters), steps, 2, 2, iterate); err != nil {
		return err
	}
	if err := p.finish(true); err != nil {
		return err
	}
	if err := p.s.conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// serve accepts one connection on l, exchanges the windows, answers every
// round trip of the schedule the client announced, waits for the client's
// final message and for the client to disconnect.
func (c *rdmapingpongConfig) serve(ctx context.Context, a nd.Adapter, l nd.Listener, out io.Writer) error {
	r, err := nextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	h, err := rdmapingpongGreeting.parseHello(r.data)
	if err != nil {
		return r.reject(err)
	}
	if h.arg > math.MaxInt32 {
		return r.reject(fmt.Errorf("the client asks for %d iterations per size", h.arg))
	}
	itersCap := int(h.arg)
	steps := schedule(h.maxSize, itersCap)
	warm := warmups(itersCap)
	p, err := c.newPonger(ctx, a, r.conn, h.maxSize)
	if err != nil {
		return r.reject(err)
	}
	defer p.close(ctx)
	if err := p.s.accept(ctx, r, rdmapingpongGreeting.welcome(nil)); err != nil {
		return err
	}
	if err := p.exchange(false, h.maxSize); err != nil {
		return fmt.Errorf("client %s: %w", r.peer, err)
	}
	rounds := int64(warm) + totalIters(steps)
	fmt.Fprintf(out, "Accepted a connection from %s: %d round trips of up to %d bytes\n", r.peer, rounds, h.maxSize)
	round := 0
	if err := p.rounds(1, warm, &round, false); err != nil {
		return fmt.Errorf("client %s: warm-up: %w", r.peer, err)
	}
	for _, st := range steps {
		if err := p.rounds(st.size, st.iters, &round, false); err != nil {
			return fmt.Errorf("client %s: size %d: %w", r.peer, st.size, err)
		}
	}
	if err := p.finish(false); err != nil {
		return fmt.Errorf("client %s: %w", r.peer, err)
	}
	if err := p.s.conn.NotifyDisconnect(ctx); err != nil {
		return fmt.Errorf("client %s: NotifyDisconnect: %w", r.peer, err)
	}
	fmt.Fprintf(out, "Answered %d round trips; %s disconnected\n", rounds, r.peer)
	return nil
}
