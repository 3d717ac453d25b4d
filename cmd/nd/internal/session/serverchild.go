package session

// A server in a child process: nd perf and nd pingpong without an address
// start this binary again as their server, on a free port, and run the
// client against it, so that the two sides do not share one Go runtime
// (its scheduler, its garbage collector) and each polls on a processor of
// its own.

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
	"time"
)

// ServerChildEnv is set in the environment of the server process that nd
// starts, so that a test binary standing in for nd knows to run nd.
const ServerChildEnv = "ND_SERVER_CHILD"

// ListeningLineRE matches RunServer's first line and captures the address.
var ListeningLineRE = regexp.MustCompile(`^Listening on (\S+) \(provider `)

// serverChild is a server process started by StartServerChild.
type serverChild struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stderr *strings.Builder // read once the process is waited for
	copied chan struct{}    // closed when the server's output is read to its end
	Addr   netip.AddrPort   // where the server listens
}

// StartServerChild runs this executable with args (nd's arguments of a
// server that listens on a free port and prints RunServer's "Listening on"
// line first) and returns once the server listens. A deadline of ctx is
// passed on as -timeout; ending ctx stops the process. The server's
// further output is read and dropped.
func StartServerChild(ctx context.Context, args []string) (*serverChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting the server process: %w", err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		args = append(args, "-timeout", time.Until(deadline).Round(time.Millisecond).String())
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &serverChild{cancel: cancel, stderr: new(strings.Builder), copied: make(chan struct{})}
	s.cmd = exec.CommandContext(ctx, exe, args...)
	s.cmd.Env = append(os.Environ(), ServerChildEnv+"=1")
	s.cmd.Stderr = s.stderr
	pipe, err := s.cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting the server process %s: %w", exe, err)
	}
	lines := bufio.NewReader(pipe)
	first, readErr := lines.ReadString('\n')
	m := ListeningLineRE.FindStringSubmatch(first)
	if m == nil {
		cancel()
		waitErr := s.cmd.Wait()
		if waitErr == nil {
			waitErr = fmt.Errorf("its first line is %q (%v)", first, readErr)
		}
		return nil, s.failed(waitErr)
	}
	if s.Addr, err = netip.ParseAddrPort(m[1]); err != nil {
		cancel()
		s.cmd.Wait()
		return nil, s.failed(err)
	}
	go func() {
		defer close(s.copied)
		io.Copy(io.Discard, lines) // the server's progress messages, until it exits
	}()
	return s, nil
}

// Pid is the server process's id.
func (s *serverChild) Pid() int { return s.cmd.Process.Pid }

// failed returns err as the server process's, with its error output.
func (s *serverChild) failed(err error) error {
	if msg := strings.TrimSpace(s.stderr.String()); msg != "" {
		return fmt.Errorf("the server process: %w: %s", err, msg)
	}
	return fmt.Errorf("the server process: %w", err)
}

// Finish waits for the server to exit after a client that ended with
// clientErr: when clientErr is not nil the server is stopped first and
// clientErr returned; otherwise the server's failure, if any.
func (s *serverChild) Finish(clientErr error) error {
	defer s.cancel()
	if clientErr != nil {
		s.cancel()
	}
	<-s.copied
	waitErr := s.cmd.Wait()
	switch {
	case clientErr != nil:
		return clientErr
	case waitErr != nil:
		return s.failed(waitErr)
	}
	return nil
}

// Args returns the flags that select the same provider in another nd
// process.
func (o *ProviderOpts) Args() []string {
	args := []string{"-provider", o.Name}
	if o.CRC {
		args = append(args, "-crc")
	}
	if o.congestion != "" {
		args = append(args, "-congestion", o.congestion)
	}
	return args
}
