package tcp_test

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"testing"

	"github.com/godirect/nd/ndtest/remote"
	"github.com/godirect/nd/provider/tcp"
)

// childEnv names the environment variable that turns the test binary into
// the child of TestConformanceTwoProcesses and TestConformanceNetns: its
// value is the address the child's provider serves.
const childEnv = "GODIRECT_ND_REMOTE_CHILD"

// TestMain runs the tests, or, in a child started by the tests, serves the
// parent's nd calls on stdin and stdout with a TCP provider and exits.
func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		os.Exit(serveChild(addr))
	}
	os.Exit(m.Run())
}

func serveChild(addr string) int {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: %s=%q: %v\n", childEnv, addr, err)
		return 2
	}
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{a}
	stdio := struct {
		io.Reader
		io.Writer
		io.Closer
	}{os.Stdin, os.Stdout, stdioClosers{os.Stdin, os.Stdout}}
	if err := remote.Serve(stdio, tcp.New(cfg)); err != nil {
		fmt.Fprintf(os.Stderr, "child: Serve: %v\n", err)
		return 1
	}
	return 0
}

type stdioClosers []io.Closer

func (cs stdioClosers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
