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

// newAttachedEndpoint returns an endpoint on a new connector of a, using
// cq for both directions, with receives inbound and outbound entries of
// one SGE each, attached to link and ready for posts.
func newAttachedEndpoint(t *testing.T, a *Adapter, cq nd.CompletionQueue, link Link, receives, outbound int) *Endpoint {
	c, err := a.CreateConnector()
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.CreateEndpoint(cq, cq, nd.EndpointLimits{InboundEntries: receives, OutboundEntries: outbound, InboundSGE: 1, OutboundSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	ep := e.(*Endpoint)
	if err := ep.attach(link, 0, 0); err != nil {
		t.Fatal(err)
	}
	ep.ready()
	return ep
}
