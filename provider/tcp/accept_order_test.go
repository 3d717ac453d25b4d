package tcp_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// TestRequestsInAcceptOrder: two connections accepted one after the other
// reach GetConnectionRequest in that order even when the second sends its
// MPA request first, as perftest's -q needs (it takes the server's i-th
// description for the queue pair it connected i-th).
func TestRequestsInAcceptOrder(t *testing.T) {
	tcp.SetRequestOrderGrace(t, time.Minute)
	a, _ := ndtest.OpenAdapters(t, loopback())
	l, err := a.Listen(0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := net.JoinHostPort(a.Address().String(), strconv.Itoa(int(l.Port())))
	var conns [2]*net.TCPConn
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c.(*net.TCPConn)
	}
	// Requests without the godirect prefix, as siw's.
	req, err := iwarp.AppendMPAFrame(nil, &iwarp.MPAFrame{Kind: iwarp.MPARequest, Revision: iwarp.MPARevision2, Enhanced: true, IRD: 1, ORD: 1})
	if err != nil {
		t.Fatal(err)
	}
	next := func(timeout time.Duration) (uint16, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := a.CreateConnector()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := l.GetConnectionRequest(ctx, c); err != nil {
			return 0, err
		}
		peer, err := c.GetPeerAddress()
		if err != nil {
			t.Fatal(err)
		}
		c.Reject(nil)
		return peer.Port(), nil
	}
	if _, err := conns[1].Write(req); err != nil {
		t.Fatal(err)
	}
	// The second connection's request waits for the first's.
	if port, err := next(300 * time.Millisecond); err == nil {
		t.Fatalf("the request of port %d came before the first connection's was sent", port)
	} else if nd.StatusOf(err) != nd.ErrCanceled {
		t.Fatalf("GetConnectionRequest: %v, want ND_CANCELED at its deadline", err)
	}
	if _, err := conns[0].Write(req); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		port, err := next(10 * time.Second)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if want := uint16(c.LocalAddr().(*net.TCPAddr).Port); port != want {
			t.Fatalf("request %d from port %d, want %d (connection %d)", i+1, port, want, i+1)
		}
	}
}
