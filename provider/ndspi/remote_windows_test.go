//go:build windows && (amd64 || arm64)

package ndspi_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/ndtest/remote"
	"github.com/godirect/nd/provider/ndspi"
)

// The conformance suite with its two sides on two hosts, or in two
// processes: ndtest/remote runs the suite here over remote.Split, one
// address served by provider ndspi in this process, the other by provider
// ndspi in a serving process, whose objects this process drives through
// proxies.
//
// Across hosts (docs/windows.md): on host B, the test binary serves one
// session on a TCP port,
//
//	set GODIRECT_NDSPI_SERVE=:17800
//	ndspi.test.exe
//
// and on host A it runs the suite against it:
//
//	set GODIRECT_NDSPI_REMOTE=hostB:17800
//	set GODIRECT_NDSPI_LOCAL_ADDR=<an ND address of host A>
//	set GODIRECT_NDSPI_REMOTE_ADDR=<an ND address of host B>
//	ndspi.test.exe -test.run TestConformanceRemote -test.v
//
// Both sides take provider ndspi's Config from the environment
// (GODIRECT_NDSPI_DLL, _CLASS, _VERSION; without them, discovery of the
// installed providers).
const (
	// EnvServe turns the test binary into the serving side: it listens on
	// this TCP address, serves one session and exits.
	EnvServe = "GODIRECT_NDSPI_SERVE"
	// EnvRemote is the serving side's TCP address for TestConformanceRemote.
	EnvRemote = "GODIRECT_NDSPI_REMOTE"
	// EnvLocalAddr and EnvRemoteAddr are the ND addresses of the two sides.
	EnvLocalAddr  = "GODIRECT_NDSPI_LOCAL_ADDR"
	EnvRemoteAddr = "GODIRECT_NDSPI_REMOTE_ADDR"
	// childEnv makes the test binary the child of the two-process run: it
	// serves on its stdin and stdout the provider "DLL|class|version".
	childEnv = "GODIRECT_NDSPI_CHILD"
)

// serveTCP is the serving side across hosts: one session on addr, with
// provider ndspi configured from the environment.
func serveTCP(addr string) int {
	cfg, err := ndspi.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return 2
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return 2
	}
	fmt.Printf("serving provider ndspi's conformance session on %s (one session)\n", l.Addr())
	conn, err := l.Accept()
	l.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return 1
	}
	if err := remote.Serve(conn, ndspi.New(cfg)); err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return 1
	}
	return 0
}

// serveChild is the child of the two-process run: the provider spec is
// "DLL|class|version", and the session runs over stdin and stdout.
func serveChild(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		fmt.Fprintf(os.Stderr, "child: %s=%q\n", childEnv, spec)
		return 2
	}
	class, err := ndabi.ParseGUID(parts[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: %v\n", err)
		return 2
	}
	v := 2
	if parts[2] == "1" {
		v = 1
	}
	stdio := struct {
		io.Reader
		io.Writer
		io.Closer
	}{os.Stdin, os.Stdout, closers{os.Stdin, os.Stdout}}
	if err := remote.Serve(stdio, ndspi.New(ndspi.Config{DLL: parts[0], Class: class, Version: v})); err != nil {
		fmt.Fprintf(os.Stderr, "child: Serve: %v\n", err)
		return 1
	}
	return 0
}

type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// TestConformanceRemote runs the suite split across two sides. With
// GODIRECT_NDSPI_REMOTE it is the host-A side of the run across hosts
// (above). Otherwise, with the DLL of the tests, it runs ND v2 over the
// DLL's tcp transport with the second side in a child process serving the
// DLL's second address: every connection of the suite crosses between two
// processes, each with its own copy of the DLL.
func TestConformanceRemote(t *testing.T) {
	if target := os.Getenv(EnvRemote); target != "" {
		cfg, err := ndspi.ConfigFromEnv(os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		local, errL := netip.ParseAddr(os.Getenv(EnvLocalAddr))
		far, errR := netip.ParseAddr(os.Getenv(EnvRemoteAddr))
		if errL != nil || errR != nil {
			t.Fatalf("%s and %s name the ND addresses of the two sides: %v %v", EnvLocalAddr, EnvRemoteAddr, errL, errR)
		}
		conn, err := net.DialTimeout("tcp", target, 30*time.Second)
		if err != nil {
			t.Fatalf("the serving side %s: %v", target, err)
		}
		client := remote.NewClient(conn)
		t.Cleanup(func() { client.Close() })
		p := ndspi.New(cfg)
		runSuite(t, remote.Split(only{p, local}, local, far, client), localVersion(t, p))
		return
	}
	dll := testDLL(t)
	for _, tr := range transports[:1] {
		t.Run("v2/"+tr.name, func(t *testing.T) {
			p := dllProvider(t, tr.class, 2)
			addrs, err := p.Addresses()
			if err != nil || len(addrs) < 2 {
				t.Skipf("the DLL serves %v (%v): two addresses are needed", addrs, err)
			}
			client := startChild(t, dll+"|"+tr.class.String()+"|2")
			runSuite(t, openNetwork{remote.Split(only{p, addrs[0]}, addrs[0], addrs[1], client)}, 2)
		})
	}
}

// localVersion is the ND version this side's provider uses.
func localVersion(t *testing.T, p *ndspi.Provider) int {
	found, err := p.Installed()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range found {
		if in.Err == nil {
			return in.Version
		}
	}
	t.Fatalf("no ND provider here: %+v", found)
	return 0
}

// only is a provider restricted to one of its addresses.
type only struct {
	nd.Provider
	addr netip.Addr
}

func (o only) Addresses() ([]netip.Addr, error) { return []netip.Addr{o.addr}, nil }

func (o only) OpenAdapter(a netip.Addr) (nd.Adapter, error) {
	if a != o.addr {
		return nil, nd.ErrInvalidAddress
	}
	return o.Provider.OpenAdapter(a)
}

// startChild starts this test binary as the serving child of spec and
// returns the client of its session; when the test ends the client closes
// and the child must exit cleanly.
func startChild(t *testing.T, spec string) *remote.Client {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child: %v", err)
	}
	client := remote.NewClient(pipes{stdout, stdin})
	t.Cleanup(func() {
		client.Close()
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err = <-waited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			err = errors.Join(errors.New("the child did not exit within a minute of the session's end; killed"), <-waited)
		}
		if err != nil {
			t.Errorf("child: %v\nits stderr:\n%s", err, stderr.String())
		}
	})
	return client
}

type pipes struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipes) Close() error                { return errors.Join(p.w.Close(), p.ReadCloser.Close()) }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
