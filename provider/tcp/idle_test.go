package tcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

// idleDialerEnv gives TestIdleDialer the listener's address and the
// number of connections to make, as "address,n".
const idleDialerEnv = "ND_TCP_IDLE_DIALER"

// idleAdapter opens an adapter at addr for the idle-connection runs, with
// a context long enough for 10,000 connections; done closes both.
func idleAdapter(tb testing.TB, addr string) (a nd.Adapter, ctx context.Context, done func()) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	a, err := loopback().OpenAdapter(netip.MustParseAddr(addr))
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	return a, ctx, func() { a.Close(); cancel() }
}

// TestIdleDialer is the child process of
// BenchmarkIdleConnectionsTwoProcesses: it connects n endpoints (on one
// completion queue) to the address, sends one 64-byte message over each,
// and keeps them until its standard input closes.
func TestIdleDialer(t *testing.T) {
	spec := os.Getenv(idleDialerEnv)
	if spec == "" {
		t.Skip("run by BenchmarkIdleConnectionsTwoProcesses")
	}
	addr, count, _ := strings.Cut(spec, ",")
	n, err := strconv.Atoi(count)
	if err != nil {
		t.Fatal(err)
	}
	remote := netip.MustParseAddrPort(addr)
	a, ctx, done := idleAdapter(t, "127.0.0.1")
	defer done()
	cq, err := a.CreateCompletionQueue(n + 16)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	mr, err := a.RegisterMemory(ctx, buf)
	if err != nil {
		t.Fatal(err)
	}
	sgl := []nd.SGE{{Buffer: buf, Region: mr}}
	sends := make([]nd.Result, n)
	for i := range n {
		c, err := a.CreateConnector()
		if err != nil {
			t.Fatal(err)
		}
		ep, err := c.CreateEndpoint(cq, cq, ndtest.PeerLimits)
		if err != nil {
			t.Fatalf("connection %d: CreateEndpoint: %v", i, err)
		}
		if err := c.Connect(ctx, ep, remote, ndtest.Protocol, 0, nil); err != nil {
			t.Fatalf("connection %d: Connect: %v", i, err)
		}
		if err := c.CompleteConnect(ctx); err != nil {
			t.Fatalf("connection %d: CompleteConnect: %v", i, err)
		}
		if err := ep.Send(&sends[i], sgl, 0); err != nil {
			t.Fatalf("connection %d: Send: %v", i, err)
		}
	}
	for range n {
		if r := ndtest.Wait(t, cq); r.Status != nd.Success {
			t.Fatalf("Send: %v", r.Status)
		}
	}
	io.Copy(io.Discard, os.Stdin)
}

// BenchmarkIdleConnectionsTwoProcesses reports what an idle endpoint costs
// with 10,000 connections, their passive ends in this process and their
// active ends in a child process (both ends of 10,000 in one process need
// more descriptors than a 20,000 limit allows; BenchmarkIdleConnections
// keeps both with 4000): heap bytes and goroutines per endpoint of this
// side, each endpoint with its own completion queue and buffer, idle after
// one message. Each run leaves 10,000 connections in TIME_WAIT for a
// minute: runs back to back may find the loopback's ephemeral ports used
// up.
func BenchmarkIdleConnectionsTwoProcesses(b *testing.B) {
	const n = 10000
	for range b.N {
		heap, gs := idleCostTwoProcesses(b, n)
		b.ReportMetric(heap, "heap-B/endpoint")
		b.ReportMetric(gs, "goroutines/endpoint")
	}
}

func idleCostTwoProcesses(b *testing.B, n int) (heapPerEndpoint, goroutinesPerEndpoint float64) {
	a, ctx, done := idleAdapter(b, "127.0.0.2")
	defer done()
	l, err := a.Listen(0, ndtest.Protocol, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleDialer$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%v,%d", idleDialerEnv, netip.AddrPortFrom(a.Address(), l.Port()), n))
	var out bytes.Buffer // the child's report, shown if it fails
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("the dialing child: %v\n%s", err, out.Bytes())
		}
	}()
	type end struct {
		ep   nd.Endpoint
		cq   nd.CompletionQueue
		recv nd.Result
	}
	return ndtest.IdleCostOf(n, func() any {
		ends := make([]end, n)
		for i := range ends {
			e := &ends[i]
			c, err := a.CreateConnector()
			if err != nil {
				b.Fatal(err)
			}
			if err := l.GetConnectionRequest(ctx, c); err != nil {
				b.Fatalf("connection %d: GetConnectionRequest: %v", i, err)
			}
			if e.cq, err = a.CreateCompletionQueue(4 * ndtest.PeerLimits.InboundEntries); err != nil {
				b.Fatal(err)
			}
			if e.ep, err = c.CreateEndpoint(e.cq, e.cq, ndtest.PeerLimits); err != nil {
				b.Fatalf("connection %d: CreateEndpoint: %v", i, err)
			}
			buf := make([]byte, 64)
			mr, err := a.RegisterMemory(ctx, buf)
			if err != nil {
				b.Fatal(err)
			}
			if err := e.ep.Receive(&e.recv, []nd.SGE{{Buffer: buf, Region: mr}}); err != nil {
				b.Fatal(err)
			}
			if err := c.Accept(ctx, e.ep, nil); err != nil {
				b.Fatalf("connection %d: Accept: %v", i, err)
			}
		}
		for i := range ends {
			ndtest.Expect(b, ends[i].cq, &ends[i].recv, nd.Success, 64)
		}
		return ends
	})
}
