package ndtest

import (
	"testing"

	"github.com/godirect/nd"
)

// teardownCases check how a connection ends: Disconnect by either side,
// NotifyDisconnect, the flush of outstanding requests, the peer's Close of
// its connector or endpoint, and the Close of an adapter.
var teardownCases = []testCase{
	{"Disconnect/ByActive", `docs/semantics.md "Disconnect": the active side's Disconnect ends the connection on both sides and flushes their requests with ND_CANCELED`, teardownDisconnectByActive},
	{"Disconnect/ByPassive", `docs/semantics.md "Disconnect": the passive side's Disconnect ends the connection on both sides`, teardownDisconnectByPassive},
	{"Disconnect/NeverConnected", `docs/semantics.md "Disconnect": Disconnect on a connector never connected fails ND_CONNECTION_INVALID`, teardownDisconnectNeverConnected},
	{"NotifyDisconnect/NeverConnected", `docs/semantics.md "Disconnect": NotifyDisconnect on a connector never connected fails ND_CONNECTION_INVALID`, teardownNotifyDisconnectNeverConnected},
	{"NotifyDisconnect/ContextCanceled", `docs/semantics.md "cancel": a canceled NotifyDisconnect returns ND_CANCELED`, teardownNotifyDisconnectContextCanceled},
	{"Flush/TwoReceives", `docs/semantics.md "Flush": a connection's end completes its outstanding Receives with ND_CANCELED`, teardownFlushTwoReceives},
	{"Flush/LaterPostsCanceled", `docs/semantics.md "post after the connection ended": requests posted after the connection ended complete ND_CANCELED`, teardownFlushLaterPostsCanceled},
	{"PeerClose/Connector", `docs/semantics.md "peer closes without Disconnect": releasing a connector without Disconnect disconnects implicitly; the peer sees the end`, teardownPeerCloseConnector},
	{"PeerClose/Endpoint", `docs/semantics.md "peer closes without Disconnect": closing an endpoint ends its connection; the peer sees the end`, teardownPeerCloseEndpoint},
	{"AdapterClose/TearsDownConnection", `docs/semantics.md "Adapter": closing an adapter ends its connections`, teardownAdapterCloseTearsDownConnection},
}

func teardownDisconnectByActive(t *testing.T, p nd.Provider) {
	testDisconnect(t, p, true)
}

func teardownDisconnectByPassive(t *testing.T, p nd.Provider) {
	testDisconnect(t, p, false)
}

func teardownDisconnectNeverConnected(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	s := side(t, a)
	expectStatus(t, "Disconnect on an unconnected connector", s.Connector.Disconnect(ctx(t)), nd.ErrConnectionInvalid)
}

func teardownNotifyDisconnectNeverConnected(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	s := side(t, a)
	expectStatus(t, "NotifyDisconnect on a never-connected connector", s.Connector.NotifyDisconnect(ctx(t)), nd.ErrConnectionInvalid)
}

func teardownNotifyDisconnectContextCanceled(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	c, cancel := cancelableCtx(t)
	n := start("NotifyDisconnect", func() error { return pr.Passive.Connector.NotifyDisconnect(c) })
	n.parked(t)
	cancel()
	expectCanceled(t, "NotifyDisconnect with its context canceled", n.wait(t))
	// The connection is still up.
	var rr, sr nd.Result
	in := newBuffer(t, pr.Passive, 8)
	recvBuf(t, pr.Passive, in, &rr)
	sendBuf(t, pr.Active, newBuffer(t, pr.Active, 8), &sr, 0)
	Expect(t, pr.Active.OutCQ, &sr, nd.Success, 8)
	Expect(t, pr.Passive.InCQ, &rr, nd.Success, 8)
}

func teardownFlushTwoReceives(t *testing.T, p nd.Provider) {
	// ndreceiveflushqp.
	pr := NewPair(t, p, PairConfig{})
	s := pr.Passive
	r1, r2 := postEmptyRecv(t, s), postEmptyRecv(t, s)
	ExpectEmpty(t, s.InCQ)
	if err := s.Endpoint.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	expectStatus(t, "Notify(NotifyAny) after Flush", s.InCQ.Notify(ctx(t), nd.NotifyAny), nd.Success)
	out := make([]*nd.Result, 4)
	if n := s.InCQ.GetResults(out); n != 2 {
		t.Fatalf("GetResults after Flush and one Notify returned %d completions; want 2", n)
	}
	wantResult(t, out[0], r1, nd.ErrCanceled, -1)
	wantResult(t, out[1], r2, nd.ErrCanceled, -1)
	expectStatus(t, "peer NotifyDisconnect after Flush", pr.Active.Connector.NotifyDisconnect(ctx(t)), nd.Success)
}

func teardownFlushLaterPostsCanceled(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Active
	if err := s.Endpoint.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	expectPostsCanceled(t, s)
}

func teardownPeerCloseConnector(t *testing.T, p nd.Provider) {
	testPeerClose(t, p, func(s *Side) error { return s.Connector.Close() })
}

func teardownPeerCloseEndpoint(t *testing.T, p nd.Provider) {
	testPeerClose(t, p, func(s *Side) error { return s.Endpoint.Close() })
}

func teardownAdapterCloseTearsDownConnection(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	if a == b {
		t.Fatal("OpenAdapters returned one adapter twice")
	}
	pr := NewPairOn(t, a, b, PairConfig{})
	r := postEmptyRecv(t, pr.Passive)
	c := ctx(t)
	n := start("NotifyDisconnect", func() error { return pr.Passive.Connector.NotifyDisconnect(c) })
	n.parked(t)
	if err := a.Close(); err != nil {
		t.Fatalf("Adapter.Close: %v", err)
	}
	expectStatus(t, "peer NotifyDisconnect after Adapter.Close", n.wait(t), nd.Success)
	Expect(t, pr.Passive.InCQ, r, nd.ErrCanceled, -1)
	expectPostsCanceled(t, pr.Passive)
}

// postEmptyRecv posts a zero-length Receive.
func postEmptyRecv(t testing.TB, s *Side) *nd.Result {
	t.Helper()
	r := new(nd.Result)
	if err := s.Endpoint.Receive(r, nil); err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return r
}

// expectPostsCanceled checks that a Receive and a Send posted on s, whose
// connection has ended, are accepted and complete with ErrCanceled.
func expectPostsCanceled(t testing.TB, s *Side) {
	t.Helper()
	r := postEmptyRecv(t, s)
	Expect(t, s.InCQ, r, nd.ErrCanceled, -1)
	var sr nd.Result
	if err := s.Endpoint.Send(&sr, nil, 0); err != nil {
		t.Fatalf("Send after the connection ended: immediate %v; want a completion with ND_CANCELED", err)
	}
	Expect(t, s.OutCQ, &sr, nd.ErrCanceled, -1)
}

func testDisconnect(t *testing.T, p nd.Provider, byActive bool) {
	pr := NewPair(t, p, PairConfig{})
	local, peer := pr.Active, pr.Passive
	if !byActive {
		local, peer = peer, local
	}
	lr, pr2 := postEmptyRecv(t, local), postEmptyRecv(t, peer)
	c := ctx(t)
	ln := start("local NotifyDisconnect", func() error { return local.Connector.NotifyDisconnect(c) })
	pn := start("peer NotifyDisconnect", func() error { return peer.Connector.NotifyDisconnect(c) })
	ln.parked(t)
	pn.parked(t)
	expectStatus(t, "Disconnect", local.Connector.Disconnect(ctx(t)), nd.Success)
	Expect(t, local.InCQ, lr, nd.ErrCanceled, -1)
	Expect(t, peer.InCQ, pr2, nd.ErrCanceled, -1)
	expectStatus(t, "peer NotifyDisconnect", pn.wait(t), nd.Success)
	expectStatus(t, "local NotifyDisconnect", ln.wait(t), nd.Success)
	// The connection has ended: NotifyDisconnect returns at once.
	expectStatus(t, "NotifyDisconnect after the end", peer.Connector.NotifyDisconnect(ctx(t)), nd.Success)
	expectPostsCanceled(t, local)
	expectPostsCanceled(t, peer)
}

// testPeerClose ends the connection by closing the passive side's connector
// or endpoint without Disconnect (ndreceiveconnectorclosed, NdConnClose).
func testPeerClose(t *testing.T, p nd.Provider, closePeer func(*Side) error) {
	pr := NewPair(t, p, PairConfig{})
	r := postEmptyRecv(t, pr.Active)
	c := ctx(t)
	n := start("NotifyDisconnect", func() error { return pr.Active.Connector.NotifyDisconnect(c) })
	n.parked(t)
	if err := closePeer(pr.Passive); err != nil {
		t.Fatalf("closing the peer: %v", err)
	}
	Expect(t, pr.Active.InCQ, r, nd.ErrCanceled, -1)
	expectStatus(t, "NotifyDisconnect after the peer closed", n.wait(t), nd.Success)
	expectPostsCanceled(t, pr.Active)
}
