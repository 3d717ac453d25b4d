package ndtest

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// Timeout bounds every blocking call the suite makes; a call that takes
// longer fails the test instead of hanging it.
var Timeout = 10 * time.Second

// Protocol is the ND protocol number the suite listens and connects with
// (MS-MPI's).
const Protocol = nd.ProtocolMSMPI

// ctx returns a context that ends after Timeout and is canceled when the
// test ends.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return c
}

// Side is one end of a connection made by the suite: its adapter, queues,
// connector and endpoint.
type Side struct {
	Adapter   nd.Adapter
	InCQ      nd.CompletionQueue // Receive completions
	OutCQ     nd.CompletionQueue // everything else
	Connector nd.Connector
	Endpoint  nd.Endpoint
	Inline    int // granted inline size
	// SRQ, when not nil, is the shared receive queue the endpoint takes
	// its Receives from (PairConfig.SRQ); PostReceive posts to it.
	SRQ nd.SharedReceiveQueue
}

// PostReceive posts a Receive for the side's endpoint: to its shared
// receive queue if it has one, else to the endpoint.
func (s *Side) PostReceive(res *nd.Result, sgl []nd.SGE) error {
	if s.SRQ != nil {
		return s.SRQ.Receive(res, sgl)
	}
	return s.Endpoint.Receive(res, sgl)
}

// PairConfig shapes a Pair. The zero value asks for DefaultLimits, 64-entry
// queues and no private data.
type PairConfig struct {
	ActiveLimits, PassiveLimits nd.EndpointLimits
	CQEntries                   int
	// PrePost runs on each side after its endpoint exists and before the
	// connection is made (to post Receives early).
	PrePostActive, PrePostPassive func(s *Side)
	SharedCQ                      bool // one queue for both directions on each side
	// SRQ gives each side's endpoint a shared receive queue of its
	// inbound limits, on its inbound completion queue; the test is
	// skipped when the provider has none.
	SRQ bool
}

// DefaultLimits are the endpoint limits the suite uses unless a test needs
// others.
var DefaultLimits = nd.EndpointLimits{
	InboundEntries: 16, OutboundEntries: 16,
	InboundSGE: 4, OutboundSGE: 4,
	InboundReadLimit: 4, OutboundReadLimit: 4,
}

// Pair is a connected pair of endpoints: Active made the connection, Passive
// accepted it.
type Pair struct {
	Active, Passive *Side
	Listener        nd.Listener
}

// OpenAdapters opens two adapters of p: on two different addresses when the
// provider serves two, otherwise twice on its first address.
func OpenAdapters(t testing.TB, p nd.Provider) (a, b nd.Adapter) {
	t.Helper()
	addrs, err := p.Addresses()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("Addresses() = %v, %v: the provider serves no address", addrs, err)
	}
	second := addrs[0]
	if len(addrs) > 1 {
		second = addrs[1]
	}
	a = openAdapter(t, p, addrs[0])
	b = openAdapter(t, p, second)
	return a, b
}

func openAdapter(t testing.TB, p nd.Provider, addr netip.Addr) nd.Adapter {
	t.Helper()
	a, err := p.OpenAdapter(addr)
	if err != nil {
		t.Fatalf("OpenAdapter(%v): %v", addr, err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// NewSide creates queues, a connector and an endpoint on adapter a.
func NewSide(t testing.TB, a nd.Adapter, limits nd.EndpointLimits, cqEntries int, shared bool) *Side {
	t.Helper()
	s := &Side{Adapter: a}
	s.Connector = mustConnector(t, a)
	s.addEndpoint(t, limits, cqEntries, shared, false)
	return s
}

// addEndpoint creates the side's queues and endpoint on its connector, on
// a shared receive queue of the inbound limits when srq is set.
func (s *Side) addEndpoint(t testing.TB, limits nd.EndpointLimits, cqEntries int, shared, srq bool) {
	t.Helper()
	s.InCQ = mustCQ(t, s.Adapter, cqEntries)
	s.OutCQ = s.InCQ
	if !shared {
		s.OutCQ = mustCQ(t, s.Adapter, cqEntries)
	}
	var ep nd.Endpoint
	var err error
	if srq {
		s.SRQ = mustSRQ(t, s.Adapter, s.InCQ, nd.SharedReceiveQueueLimits{Entries: limits.InboundEntries, SGE: limits.InboundSGE})
		ep, err = nd.CreateEndpointWithSRQ(s.Connector, s.InCQ, s.OutCQ, s.SRQ, limits)
	} else {
		ep, err = s.Connector.CreateEndpoint(s.InCQ, s.OutCQ, limits)
	}
	if err != nil {
		t.Fatalf("CreateEndpoint(%+v): %v", limits, err)
	}
	t.Cleanup(func() { ep.Close() })
	s.Endpoint = ep
	s.Inline = ep.MaxInlineData()
}

func mustConnector(t testing.TB, a nd.Adapter) nd.Connector {
	t.Helper()
	c, err := a.CreateConnector()
	if err != nil {
		t.Fatalf("CreateConnector: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustCQ(t testing.TB, a nd.Adapter, n int) nd.CompletionQueue {
	t.Helper()
	cq, err := a.CreateCompletionQueue(n)
	if err != nil {
		t.Fatalf("CreateCompletionQueue(%d): %v", n, err)
	}
	t.Cleanup(func() { cq.Close() })
	return cq
}

// NewPair connects two endpoints of provider p and returns them. It fails the
// test if any step fails.
func NewPair(t testing.TB, p nd.Provider, cfg PairConfig) *Pair {
	t.Helper()
	a, b := OpenAdapters(t, p)
	return NewPairOn(t, a, b, cfg)
}

// NewPairOn is NewPair on two given adapters: active on a, passive on b.
func NewPairOn(t testing.TB, a, b nd.Adapter, cfg PairConfig) *Pair {
	t.Helper()
	if cfg.ActiveLimits == (nd.EndpointLimits{}) {
		cfg.ActiveLimits = DefaultLimits
	}
	if cfg.PassiveLimits == (nd.EndpointLimits{}) {
		cfg.PassiveLimits = DefaultLimits
	}
	if cfg.CQEntries == 0 {
		cfg.CQEntries = 64
	}
	l, err := b.Listen(0, Protocol, 0)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	p := &Pair{Listener: l}
	p.Active = &Side{Adapter: a, Connector: mustConnector(t, a)}
	p.Active.addEndpoint(t, cfg.ActiveLimits, cfg.CQEntries, cfg.SharedCQ, cfg.SRQ)
	if cfg.PrePostActive != nil {
		cfg.PrePostActive(p.Active)
	}
	c := ctx(t)
	passive := &Side{Adapter: b, Connector: mustConnector(t, b)}
	got := make(chan error, 1)
	go func() { got <- l.GetConnectionRequest(c, passive.Connector) }()
	connected := make(chan error, 1)
	go func() {
		err := p.Active.Connector.Connect(c, p.Active.Endpoint, netip.AddrPortFrom(b.Address(), l.Port()), Protocol, 0, nil)
		if err == nil {
			err = p.Active.Connector.CompleteConnect(c)
		}
		connected <- err
	}()
	if err := <-got; err != nil {
		t.Fatalf("GetConnectionRequest: %v", err)
	}
	passive.addEndpoint(t, cfg.PassiveLimits, cfg.CQEntries, cfg.SharedCQ, cfg.SRQ)
	ep := passive.Endpoint
	if cfg.PrePostPassive != nil {
		cfg.PrePostPassive(passive)
	}
	if err := passive.Connector.Accept(c, ep, nil); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if err := <-connected; err != nil {
		t.Fatalf("Connect/CompleteConnect: %v", err)
	}
	p.Passive = passive
	return p
}

// Register registers buf on the side's adapter and deregisters it when the
// test ends.
func (s *Side) Register(t testing.TB, buf []byte) nd.MemoryRegion {
	t.Helper()
	mr, err := s.Adapter.RegisterMemory(ctx(t), buf)
	if err != nil {
		t.Fatalf("RegisterMemory(%d bytes): %v", len(buf), err)
	}
	t.Cleanup(func() { s.Adapter.DeregisterMemory(context.Background(), mr) })
	return mr
}

// Wait polls cq until it returns one Result or Timeout passes, and returns
// it. It fails the test on timeout.
func Wait(t testing.TB, cq nd.CompletionQueue) *nd.Result {
	t.Helper()
	var out [1]*nd.Result
	deadline := time.Now().Add(Timeout)
	for {
		if cq.GetResults(out[:]) == 1 {
			return out[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completion within %v", Timeout)
		}
		// Block in Notify rather than spin: a completion that arrived
		// after the GetResults above fires it at once.
		c, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		cq.Notify(c, nd.NotifyAny)
		cancel()
	}
}

// AwaitDisconnect waits, for at most Timeout, until the connection of c
// ended (NotifyDisconnect returns), and fails t naming what (the cause
// expected) otherwise.
func AwaitDisconnect(t testing.TB, c nd.Connector, what string) {
	t.Helper()
	if err := c.NotifyDisconnect(ctx(t)); err != nil {
		t.Fatalf("%s did not end the connection: %v", what, err)
	}
}

// Expect waits for the next completion on cq and checks that it is want with
// the given status and byte count (bytes < 0 skips the byte check). A
// request that failed must report 0 bytes and, unless it failed with
// ErrAccessViolation (whose Cause the cases check), no Cause.
func Expect(t testing.TB, cq nd.CompletionQueue, want *nd.Result, status nd.Status, bytes int) {
	t.Helper()
	got := Wait(t, cq)
	if got != want {
		t.Fatalf("GetResults returned %p, want the request's own Result %p", got, want)
	}
	if got.Status != status {
		t.Fatalf("completion status = %v, want %v", got.Status, status)
	}
	if bytes >= 0 && got.BytesTransferred != bytes {
		t.Fatalf("BytesTransferred = %d, want %d", got.BytesTransferred, bytes)
	}
	if status != nd.Success && got.BytesTransferred != 0 {
		t.Fatalf("BytesTransferred = %d for a request that failed with %v, want 0", got.BytesTransferred, status.Name())
	}
	if status != nd.ErrAccessViolation && got.Cause != nd.CauseNone {
		t.Fatalf("Cause = %v for a request that completed %v, want CauseNone", got.Cause, status.Name())
	}
}

// expectAccessViolation waits for want's completion on cq: ErrAccessViolation
// with 0 bytes and cause (CauseLocalAccess for an entry of this side,
// CauseRemoteAccess for the peer's refusal), which Result.Err reports.
func expectAccessViolation(t testing.TB, cq nd.CompletionQueue, want *nd.Result, cause nd.Cause) {
	t.Helper()
	Expect(t, cq, want, nd.ErrAccessViolation, 0)
	if want.Cause != cause {
		t.Fatalf("an access violation's Cause = %v, want %v", want.Cause, cause)
	}
	err := want.Err()
	if !errors.Is(err, nd.ErrAccessViolation) || !errors.Is(err, cause) || nd.StatusOf(err) != nd.ErrAccessViolation {
		t.Fatalf("Result.Err() = %v: want an error that is ErrAccessViolation and %v", err, cause)
	}
}

// ExpectEmpty checks that cq holds no completion.
func ExpectEmpty(t testing.TB, cq nd.CompletionQueue) {
	t.Helper()
	var out [1]*nd.Result
	if n := cq.GetResults(out[:]); n != 0 {
		t.Fatalf("unexpected completion: status %v, %d bytes", out[0].Status, out[0].BytesTransferred)
	}
}
