package perftest

import (
	"context"
	"io"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// runTwoProcesses starts nd perf's server process and runs the client
// against it. When the client fails the server is stopped; when the server
// fails, its error output is part of the error.
func (c *Config) runTwoProcesses(ctx context.Context, p nd.Provider, addrs []netip.Addr, out io.Writer) error {
	args := append([]string{"perf", c.Test.Name, "--server", "-p", "0"}, c.Provider.Args()...)
	if c.heap {
		args = append(args, "-heap")
	}
	if c.Blocking {
		args = append(args, "-b")
	}
	s, err := session.StartServerChild(ctx, args)
	if err != nil {
		return err
	}
	return s.Finish(session.RunClient(ctx, c, p, addrs, s.Addr, out))
}
