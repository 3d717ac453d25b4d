package engine

import (
	"context"
	"net/netip"
	"testing"

	"github.com/godirect/nd"
)

// noTransport is a Transport for tests that never connect.
type noTransport struct{}

func (noTransport) Listen(*Listener, netip.Addr, int, uint16) (uint16, error) {
	return 0, nd.ErrNotSupported
}
func (noTransport) Unlisten(*Listener) {}
func (noTransport) Dial(context.Context, *DialRequest, LinkEvents) (Link, error) {
	return nil, nd.ErrConnectionRefused
}

// newTestAdapter returns an adapter with small limits and no transport,
// closed when the test ends.
func newTestAdapter(t *testing.T) *Adapter {
	a := NewAdapter(netip.MustParseAddr("127.0.0.1"), nd.AdapterInfo{
		MaxInboundSGE: 1, MaxInboundRequests: 4, MaxInboundLength: 64,
		MaxOutboundSGE: 1, MaxOutboundRequests: 4, MaxOutboundLength: 64,
		MaxCQEntries: 8, MaxRegistrationSize: 64, MaxWindowSize: 64,
	}, noTransport{})
	t.Cleanup(func() { a.Close() })
	return a
}

// newTestCQ returns a completion queue of 4 entries on a.
func newTestCQ(t *testing.T, a *Adapter) nd.CompletionQueue {
	cq, err := a.CreateCompletionQueue(4)
	if err != nil {
		t.Fatal(err)
	}
	return cq
}

// newTestEndpoint returns an endpoint on a new connector of a, with
// receives inbound entries and one outbound, one SGE each.
func newTestEndpoint(t *testing.T, a *Adapter, in, out nd.CompletionQueue, receives int) nd.Endpoint {
	c, err := a.CreateConnector()
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.CreateEndpoint(in, out, nd.EndpointLimits{InboundEntries: receives, OutboundEntries: 1, InboundSGE: 1, OutboundSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// PollActivity grows with every GetResults that finds nothing on either of
// the endpoint's queues, and not with one that returns a completion: a
// spinning transport keeps polling only while the application polls.
func TestPollActivity(t *testing.T) {
	a := newTestAdapter(t)
	in, out := newTestCQ(t, a), newTestCQ(t, a)
	e := newTestEndpoint(t, a, in, out, 1)
	ep := e.(*Endpoint)
	var res [1]*nd.Result
	if got := ep.PollActivity(); got != 0 {
		t.Fatalf("PollActivity before any poll = %d, want 0", got)
	}
	in.GetResults(res[:])
	out.GetResults(res[:])
	out.GetResults(res[:])
	if got := ep.PollActivity(); got != 3 {
		t.Fatalf("PollActivity after 3 empty polls = %d, want 3", got)
	}
	// A Receive flushed by Flush completes: the poll that returns it is
	// not an empty one.
	var r nd.Result
	if err := e.Receive(&r, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := in.GetResults(res[:]); n != 1 || res[0] != &r {
		t.Fatalf("GetResults = %d, want the flushed Receive", n)
	}
	if got := ep.PollActivity(); got != 3 {
		t.Fatalf("PollActivity after a poll that found a completion = %d, want 3", got)
	}
}
