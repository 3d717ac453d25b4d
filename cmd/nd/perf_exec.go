package main

// nd perf without an address: the server runs in a second process, this
// binary started again with --server on a free port, and this process
// runs the client against it.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/godirect/nd"
)

// perfChildEnv is set in the environment of the server process that nd
// perf starts, so that a test binary standing in for nd knows to run nd.
const perfChildEnv = "ND_PERF_SERVER_CHILD"

// perfListeningRE matches runServer's first line and captures the address.
var perfListeningRE = regexp.MustCompile(`^Listening on (\S+) \(provider `)

// runTwoProcesses starts the server process, reads the address it listens
// on, and runs the client against it. When the client fails the server is
// stopped; when the server fails, its error output is part of the error.
func (c *perfConfig) runTwoProcesses(ctx context.Context, p nd.Provider, addrs []netip.Addr, out io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("starting the server process: %w", err)
	}
	args := []string{"perf", c.test.name, "--server", "-p", "0", "-provider", c.provider.name, "-timeout", c.timeout.String()}
	if c.provider.crc {
		args = append(args, "-crc")
	}
	if c.heap {
		args = append(args, "-heap")
	}
	if c.blocking {
		args = append(args, "-b")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), perfChildEnv+"=1")
	var stderr strings.Builder // read once the process is waited for
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the server process %s: %w", exe, err)
	}
	serverErr := func(err error) error {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("the server process: %w: %s", err, msg)
		}
		return fmt.Errorf("the server process: %w", err)
	}
	lines := bufio.NewReader(pipe)
	first, readErr := lines.ReadString('\n')
	m := perfListeningRE.FindStringSubmatch(first)
	if m == nil {
		cancel()
		waitErr := cmd.Wait()
		if waitErr == nil {
			waitErr = fmt.Errorf("its first line is %q (%v)", first, readErr)
		}
		return serverErr(waitErr)
	}
	server, err := netip.ParseAddrPort(m[1])
	if err != nil {
		cancel()
		cmd.Wait()
		return serverErr(err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(io.Discard, lines) // the server's progress messages, until it exits
	}()
	if err := runClient(ctx, c, p, addrs, server, out); err != nil {
		cancel()
		<-copied
		cmd.Wait()
		return err
	}
	<-copied
	if err := cmd.Wait(); err != nil {
		return serverErr(err)
	}
	return nil
}
