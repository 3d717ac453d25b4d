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

// PollActivity grows with every GetResults that finds nothing on either of
// the endpoint's queues, and not with one that returns a completion: a
// spinning transport keeps polling only while the application polls.
func TestPollActivity(t *testing.T) {
	a := NewAdapter(netip.MustParseAddr("127.0.0.1"), nd.AdapterInfo{
		MaxInboundSGE: 1, MaxInboundRequests: 4, MaxInboundLength: 64,
		MaxOutboundSGE: 1, MaxOutboundRequests: 4, MaxOutboundLength: 64,
		MaxCQEntries: 8, MaxRegistrationSize: 64, MaxWindowSize: 64,
	}, noTransport{})
	defer a.Close()
	in, err := a.CreateCompletionQueue(4)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.CreateCompletionQueue(4)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.CreateConnector()
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.CreateEndpoint(in, out, nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 1, InboundSGE: 1, OutboundSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
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
