package ndnet_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndnet"
	"github.com/godirect/nd/provider/loop"
	"github.com/godirect/nd/provider/shm"
	"github.com/godirect/nd/provider/tcp"
)

// streamProvider is a provider the stream tests run over, with the address
// a listener takes.
type streamProvider struct {
	name string
	p    func() nd.Provider
	addr string
}

// providers are the providers every stream test runs over.
var providers = []streamProvider{
	{"loop", func() nd.Provider { return loop.New() }, "127.0.0.1:0"},
	{"tcp", func() nd.Provider { return tcp.New(tcp.DefaultConfig()) }, "127.0.0.1:0"},
	{"shm", func() nd.Provider { return shm.New(shm.DefaultConfig()) }, "127.0.0.1:0"},
}

// pipe returns a connected pair over p: c1 dialed, c2 accepted; a failure
// fails t.
func pipe(t testing.TB, p nd.Provider, addr string, cfg ndnet.Config) (c1, c2 *ndnet.Conn, stop func()) {
	t.Helper()
	c1, c2, stop, err := connectPipe(p, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c1, c2, stop
}

// connectPipe is pipe returning its failure, for callers that report it on
// another test than the one at hand (nettest.MakePipe runs in each of
// nettest's subtests).
func connectPipe(p nd.Provider, addr string, cfg ndnet.Config) (c1, c2 *ndnet.Conn, stop func(), err error) {
	lc := ndnet.ListenConfig{Config: cfg}
	l, err := lc.Listen(p, addr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("Listen: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		ch <- accepted{c, err}
	}()
	d := ndnet.Dialer{Config: cfg}
	c1, err = d.Dial(ctx, p, l.Addr().String())
	if err != nil {
		l.Close()
		if a := <-ch; a.c != nil {
			a.c.Close()
		}
		return nil, nil, nil, fmt.Errorf("Dial: %w", err)
	}
	a := <-ch
	if a.err != nil {
		c1.Close()
		l.Close()
		return nil, nil, nil, fmt.Errorf("Accept: %w", a.err)
	}
	c2 = a.c.(*ndnet.Conn)
	return c1, c2, func() {
		c1.Close()
		c2.Close()
		l.Close()
	}, nil
}

// TestNettest runs x/net's net.Conn suite with the default spin, and with
// none, where every blocked Read, Write and Close sleeps in the completion
// queue's Notify at once and must be woken from it by the other direction,
// a deadline or Close.
func TestNettest(t *testing.T) {
	for _, pr := range providers {
		for _, spin := range []struct {
			name string
			d    time.Duration
		}{{"spin", 0}, {"nospin", -1}} {
			t.Run(pr.name+"/"+spin.name, func(t *testing.T) {
				p := pr.p()
				nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
					// A failure is returned: nettest fails the subtest
					// that asked for the pipe (t here is its parent).
					return connectPipe(p, pr.addr, ndnet.Config{Spin: spin.d})
				})
			})
		}
	}
}

// provider/shm runs on Linux only (elsewhere it says ND_NOT_SUPPORTED).
func init() {
	if runtime.GOOS != "linux" {
		providers = providers[:2]
	}
}
