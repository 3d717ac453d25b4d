package tcp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// quick is a loopback provider with short handshake bounds.
func quick(reply, handshake time.Duration) *tcp.Provider {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	cfg.ReplyTimeout, cfg.HandshakeTimeout = reply, handshake
	return tcp.New(cfg)
}

// expectEOF fails t unless the peer closes c within d.
func expectEOF(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the connection was not closed within %v: %v", d, err)
	}
}

// A passive side that never answers the MPA request ends Connect with
// ErrIOTimeout after ReplyTimeout, even with a context that never ends.
func TestConnectReplyTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			got <- c
		}
	}()
	p := quick(300*time.Millisecond, time.Second)
	a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := ndtest.NewSide(t, a, ndtest.DefaultLimits, 8, true)
	start := time.Now()
	err = s.Connector.Connect(context.Background(), s.Endpoint, ln.Addr().(*net.TCPAddr).AddrPort(), 6, 0, nil)
	if !errors.Is(err, nd.ErrIOTimeout) {
		t.Fatalf("Connect to a silent peer = %v, want ND_IO_TIMEOUT", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Connect took %v with a 300ms reply bound", d)
	}
	expectEOF(t, <-got, 5*time.Second)
}

// An accepted TCP connection that never sends its MPA request is closed
// after HandshakeTimeout, and the listener keeps serving.
func TestSilentClientClosed(t *testing.T) {
	p := quick(time.Second, 300*time.Millisecond)
	a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	l, err := a.Listen(0, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", netip.AddrPortFrom(a.Address(), l.Port()).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expectEOF(t, c, 5*time.Second)
}

// After Accept, a peer that never sends its ready-to-receive frame ends
// Accept with ErrConnectionAborted after HandshakeTimeout.
func TestMissingRTRAbortsAccept(t *testing.T) {
	p := quick(time.Second, 300*time.Millisecond)
	a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	l, err := a.Listen(0, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", netip.AddrPortFrom(a.Address(), l.Port()).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := iwarp.MPAFrame{
		Kind: iwarp.MPARequest, Revision: iwarp.MPARevision2, Enhanced: true,
		IRD: 2, ORD: 2, PeerToPeer: true, RTR: iwarp.RTRWrite,
		PrivateData: []byte{'g', 'd', 1, 6},
	}
	frame, err := iwarp.AppendMPAFrame(nil, &req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := a.CreateConnector()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := l.GetConnectionRequest(ctx, conn); err != nil {
		t.Fatal(err)
	}
	cq, _ := a.CreateCompletionQueue(8)
	ep, err := conn.CreateEndpoint(cq, cq, ndtest.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := conn.Accept(ctx, ep, nil); !errors.Is(err, nd.ErrConnectionAborted) {
		t.Fatalf("Accept without the peer's RTR = %v, want ND_CONNECTION_ABORTED", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Accept took %v with a 300ms handshake bound", d)
	}
	expectEOF(t, c, 5*time.Second)
}
