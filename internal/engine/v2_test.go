package engine_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/provider/loop"
)

// v2Side is one side of a connection made the ND v2 way: a queue pair's
// endpoint on a connector of its own (qpConn), with Receives posted before
// any connector is involved.
type v2Side struct {
	a      *engine.Adapter
	cq     nd.CompletionQueue
	qpConn *engine.Connector
	ep     *engine.Endpoint
	mr     nd.MemoryRegion
	buf    []byte
}

func newV2Side(t *testing.T, p nd.Provider, addr netip.Addr) *v2Side {
	t.Helper()
	na, err := p.OpenAdapter(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { na.Close() })
	s := &v2Side{a: na.(*engine.Adapter), buf: make([]byte, 64)}
	if s.cq, err = na.CreateCompletionQueue(16); err != nil {
		t.Fatal(err)
	}
	c, _ := na.CreateConnector()
	s.qpConn = c.(*engine.Connector)
	info, _ := na.Query()
	e, err := c.CreateEndpoint(s.cq, s.cq, nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 4, InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: info.MaxInboundReadLimit, OutboundReadLimit: info.MaxOutboundReadLimit})
	if err != nil {
		t.Fatal(err)
	}
	s.ep = e.(*engine.Endpoint)
	if s.mr, err = na.RegisterMemory(context.Background(), s.buf); err != nil {
		t.Fatal(err)
	}
	return s
}

func wait(t *testing.T, cq nd.CompletionQueue) *nd.Result {
	t.Helper()
	var res [1]*nd.Result
	deadline := time.Now().Add(10 * time.Second)
	for cq.GetResults(res[:]) == 0 {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := cq.Notify(ctx, nd.NotifyAny)
		cancel()
		if err != nil && cq.GetResults(res[:]) == 0 {
			t.Fatalf("no completion: %v", err)
		}
	}
	return res[0]
}

// TestHandOverAndReadLimits: the passive side takes the request on one
// connector, hands it to the queue pair's connector and accepts it there
// with the endpoint whose Receive was posted before; the read limits given
// to SetReadLimits on both sides are the ones negotiated.
func TestHandOverAndReadLimits(t *testing.T) {
	p := loop.New()
	addr := netip.MustParseAddr("127.0.0.1")
	srv, cli := newV2Side(t, p, addr), newV2Side(t, p, addr)
	ctx := context.Background()

	l, err := srv.a.Listen(0, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var recv nd.Result
	if err := srv.ep.Receive(&recv, []nd.SGE{{Buffer: srv.buf, Region: srv.mr}}); err != nil {
		t.Fatal(err)
	}
	if err := cli.ep.SetReadLimits(3, 2); err != nil {
		t.Fatal(err)
	}
	if err := srv.ep.SetReadLimits(1, 5); err != nil {
		t.Fatal(err)
	}
	if err := srv.ep.SetReadLimits(1<<20, 0); err != nd.ErrInvalidParameter1 {
		t.Fatalf("SetReadLimits beyond the adapter = %v", err)
	}

	accepted := make(chan error, 1)
	go func() {
		rc, _ := srv.a.CreateConnector()
		req := rc.(*engine.Connector)
		if err := l.GetConnectionRequest(ctx, req); err != nil {
			accepted <- err
			return
		}
		pd := make([]byte, 8)
		cd, err := req.GetConnectionData(pd)
		if err != nil || cd.InboundReadLimit != 2 || cd.OutboundReadLimit != 3 || string(pd[:cd.PrivateDataLength]) != "hello" {
			accepted <- errors.New("the request's data is not the active side's")
			return
		}
		if err := req.HandOver(req); err != nd.ErrInvalidParameter1 {
			accepted <- err
			return
		}
		if err := req.HandOver(srv.qpConn); err != nil {
			accepted <- err
			return
		}
		if _, err := req.GetConnectionData(nil); err != nd.ErrConnectionInvalid {
			accepted <- errors.New("the connector that handed the request over still holds it")
			return
		}
		if err := req.HandOver(srv.qpConn); err != nd.ErrConnectionActive {
			accepted <- errors.New("a second hand-over to a busy connector was accepted")
			return
		}
		accepted <- srv.qpConn.Accept(ctx, srv.ep, []byte("yes"))
	}()

	if err := cli.qpConn.Connect(ctx, cli.ep, netip.AddrPortFrom(addr, l.Port()), 6, 0, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	pd := make([]byte, 8)
	cd, err := cli.qpConn.GetConnectionData(pd)
	if err != nil || cd.InboundReadLimit != 3 || cd.OutboundReadLimit != 1 || string(pd[:cd.PrivateDataLength]) != "yes" {
		t.Fatalf("GetConnectionData = %+v %q %v", cd, pd, err)
	}
	if err := cli.ep.SetReadLimits(1, 1); err != nd.ErrConnectionActive {
		t.Fatalf("SetReadLimits while connecting = %v", err)
	}
	if err := cli.qpConn.CompleteConnect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if ird, ord := cli.ep.Limits(); ird != 3 || ord != 1 {
		t.Fatalf("active side's negotiated limits %d, %d, want 3, 1", ird, ord)
	}
	if ird, ord := srv.ep.Limits(); ird != 1 || ord != 3 {
		t.Fatalf("passive side's negotiated limits %d, %d, want 1, 3", ird, ord)
	}
	copy(cli.buf, "payload")
	var send nd.Result
	if err := cli.ep.Send(&send, []nd.SGE{{Buffer: cli.buf[:7], Region: cli.mr}}, 0); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, cli.cq); r != &send || r.Status != nd.Success {
		t.Fatalf("send completed %+v", r)
	}
	if r := wait(t, srv.cq); r != &recv || r.Status != nd.Success || r.BytesTransferred != 7 || string(srv.buf[:7]) != "payload" {
		t.Fatalf("the Receive posted before the hand-over completed %+v with %q", r, srv.buf[:7])
	}
}

// TestHandOverAborted: a request whose active side went away is not handed
// over, and HandOver without a request is refused.
func TestHandOverAborted(t *testing.T) {
	p := loop.New()
	addr := netip.MustParseAddr("127.0.0.1")
	srv, cli := newV2Side(t, p, addr), newV2Side(t, p, addr)
	l, err := srv.a.Listen(0, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rc, _ := srv.a.CreateConnector()
	req := rc.(*engine.Connector)
	if err := req.HandOver(srv.qpConn); err != nd.ErrConnectionInvalid {
		t.Fatalf("HandOver without a request = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cli.qpConn.Connect(ctx, cli.ep, netip.AddrPortFrom(addr, l.Port()), 6, 0, nil)
	}()
	if err := l.GetConnectionRequest(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	cancel() // the active side abandons its attempt
	if err := <-done; !errors.Is(err, nd.ErrCanceled) {
		t.Fatalf("Connect = %v", err)
	}
	// The abandonment reaches the passive side as an aborted request.
	for {
		err := req.HandOver(srv.qpConn)
		if err == nd.ErrConnectionAborted {
			break
		}
		if err == nil {
			if err := srv.qpConn.Accept(context.Background(), srv.ep, nil); !errors.Is(err, nd.ErrConnectionAborted) {
				t.Fatalf("Accept of an abandoned request = %v", err)
			}
			break
		}
		t.Fatalf("HandOver of an abandoned request = %v", err)
	}
}

// TestSRQModify: depth and threshold change; a depth below what is posted
// is refused; a lower threshold fires a waiting Notify; a deeper queue
// takes more Receives, which complete in order.
func TestSRQModify(t *testing.T) {
	p := loop.New()
	na, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer na.Close()
	cq, _ := na.CreateCompletionQueue(64)
	q, err := nd.CreateSharedReceiveQueue(na, cq, nd.SharedReceiveQueueLimits{Entries: 2, SGE: 1, NotifyThreshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := q.(*engine.SRQ)
	res := make([]nd.Result, 6)
	for i := range 2 {
		if err := s.Receive(&res[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Receive(&res[2], nil); err != nd.ErrNoMoreEntries {
		t.Fatalf("third Receive on a queue of 2 = %v", err)
	}
	if err := s.Modify(1, 0); err != nd.ErrBufferOverflow {
		t.Fatalf("Modify below the posted Receives = %v", err)
	}
	if err := s.Modify(0, 3); err != nd.ErrInvalidParameter2 {
		t.Fatalf("a threshold beyond the depth = %v", err)
	}
	if err := s.Modify(6, 0); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 6; i++ {
		if err := s.Receive(&res[i], nil); err != nil {
			t.Fatalf("Receive %d after growing: %v", i, err)
		}
	}
	notified := make(chan error, 1)
	go func() { notified <- s.Notify(context.Background()) }()
	// Six Receives wait: a threshold of 6 is not crossed until one leaves.
	if err := s.Modify(0, 6); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-notified:
		t.Fatalf("Notify fired with 6 posted and a threshold of 6: %v", err)
	default:
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-notified; err != nil {
		t.Fatal(err)
	}
	out := make([]*nd.Result, 8)
	if n := cq.GetResults(out); n != 6 {
		t.Fatalf("%d Receives flushed, want 6", n)
	}
	for i := range 6 {
		if out[i] != &res[i] || out[i].Status != nd.ErrCanceled {
			t.Fatalf("flushed %d: %p %v, want %p", i, out[i], out[i].Status, &res[i])
		}
	}
}
