package main

// nd pingpong: the ND SDK's ndpingpong. The client sends a message, the
// server echoes it back, and the client times the round trips for message
// sizes from 1 byte to -max bytes, doubling.

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/godirect/nd"
)

// pingpongPort is ndpingpong's default port.
const pingpongPort = 54325

// pingpongConfig is the parsed command line of nd pingpong.
type pingpongConfig struct{ dataFlags }

// pingpongFlags defines the flags of nd pingpong.
func pingpongFlags(stdout, stderr io.Writer) (*flag.FlagSet, runFunc) {
	fs := flag.NewFlagSet("pingpong", flag.ContinueOnError)
	c := &pingpongConfig{}
	c.define(fs, pingpongPort, "Receives kept posted (the endpoint's queue `depth`)")
	fs.Usage = func() {
		c.usage(fs, "[-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES] [-q DEPTH]\n"+
			"                   [-max BYTES] [-iters N] [ADDRESS[:PORT]]",
			fmt.Sprintf(`Round-trip Send/Receive test (the ND SDK's ndpingpong). The client sends
each message, the server echoes it; sizes go from 1 byte to -max, doubling,
with min(%d, 500*4MiB/size) iterations per size after %d warm-up round
trips (-iters caps both).
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

// limits returns the endpoint limits of either side for messages of up to
// maxSize bytes, after checking them against the adapter's.
func (c *pingpongConfig) limits(a nd.Adapter, maxSize int) (nd.EndpointLimits, error) {
	ai, err := queryAdapter(a)
	if err != nil {
		return nd.EndpointLimits{}, err
	}
	l := nd.EndpointLimits{
		InboundEntries:  c.depth,
		OutboundEntries: c.depth,
		InboundSGE:      c.sges,
		OutboundSGE:     c.sges,
	}
	if err := c.checkQueues(ai, l); err != nil {
		return l, err
	}
	return l, checkSize(ai, maxSize)
}
