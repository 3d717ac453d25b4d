package ndtools

// nd ping: the ND SDK's ndping, a one-way Send/Receive message rate test.
// The server keeps Receives posted and grants the client credits for them;
// the client streams Sends within its credits, and the server returns
// credits as the messages arrive. Every size ends with a sync: a zero-byte
// Send that the server acknowledges once everything before it has arrived,
// so the client's timing covers delivery.

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"

	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

const (
	pingPort = 54324 // ndping's default port
	// pingReplySize is the size of the server's replies: the credits it
	// returns and the syncs it acknowledges, two big-endian uint32s.
	pingReplySize = 8
	// pingReplies is the number of Receives the client keeps posted for
	// replies. The server replies when half its credits are owed or a sync
	// arrived, so at most two credit replies and one acknowledgement are
	// ever on their way.
	pingReplies = 4
)

// pingConfig is the parsed command line of nd ping.
type pingConfig struct{ session.DataFlags }

// PingFlags defines the flags of nd ping.
func PingFlags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs := flag.NewFlagSet("ping", flag.ContinueOnError)
	c := &pingConfig{}
	c.Define(fs, pingPort, "client: Sends in flight at most (the pipeline `depth`); server: Receives posted, depth-1 of them granted as credits (at least 2)")
	fs.Usage = func() {
		c.Usage(fs, "[-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES] [-q DEPTH]\n"+
			"               [-max BYTES] [-iters N] [ADDRESS[:PORT]]",
			fmt.Sprintf(`One-way Send/Receive message rate test (the ND SDK's ndping). The server
posts -q Receives and grants the client -q minus 1 credits; the client
streams Sends within its credits and the -q pipeline, and the server returns
credits as the messages arrive. Sizes go from 1 byte to -max, doubling, with
min(%d, 500*4MiB/size) messages per size after %d warm-up messages (-iters
caps both); each size ends when the server acknowledged its last message.
Latency is the elapsed time per message in microseconds, CPU the process's
CPU time in percent of the elapsed time, Bytes/Sec the payload rate.
`, timing.OneWayIterations, timing.WarmupIterations))
	}
	return fs, func(ctx context.Context, args []string) error {
		if err := c.Parse(fs, args); err != nil {
			return err
		}
		return c.Run(ctx, c, stdout)
	}
}

// pingReply is the server's reply.
type pingReply struct{ credits, syncs uint32 }

// put writes r into b, which holds at least pingReplySize bytes.
func (r pingReply) put(b []byte) {
	binary.BigEndian.PutUint32(b[0:4], r.credits)
	binary.BigEndian.PutUint32(b[4:8], r.syncs)
}

// parsePingReply parses the n bytes of a reply in b.
func parsePingReply(b []byte, n int) (pingReply, error) {
	if n != pingReplySize {
		return pingReply{}, fmt.Errorf("the server's reply has %d bytes, want %d", n, pingReplySize)
	}
	return pingReply{binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8])}, nil
}
