package remote

import (
	"context"
	"net/netip"

	"github.com/godirect/nd"
)

// SplitProvider serves two addresses: one by a local provider in this
// process, the other by a Client's child. Build it with Split.
//
// Memory: the caller reads and writes the buffers it registers on the
// child's adapters directly, while the child's provider uses copies of its
// own. Every call on any object of a SplitProvider (local or proxied)
// exchanges memory with the child before and after it runs: the parent's
// changes since the last exchange reach the child before the call, and the
// child's (data placed by the child's provider) reach the caller's buffers
// before the call returns. So a buffer is in step whenever the caller can
// legitimately look at it: after reaping the completion that covers it, on
// either side. A registration is synced from the first successful post or
// Bind that names it on, until it is deregistered or its adapter closes.
// Memory windows' invalidate Results are reflected the same way.
//
// A SplitProvider is safe for concurrent use, as are its objects.
type SplitProvider struct {
	local                 nd.Provider
	localAddr, remoteAddr netip.Addr
	c                     *Client
}

var _ nd.Provider = (*SplitProvider)(nil)

// Split returns a provider whose Addresses are [localAddr, remoteAddr]:
// OpenAdapter(localAddr) opens local's adapter, OpenAdapter(remoteAddr) the
// child's through c. The two addresses must differ. The objects of both
// are wrapped so that every call keeps the child's memory in step (see
// SplitProvider). Closing c is the caller's business.
func Split(local nd.Provider, localAddr, remoteAddr netip.Addr, c *Client) *SplitProvider {
	return &SplitProvider{local: local, localAddr: localAddr, remoteAddr: remoteAddr, c: c}
}

// MemoryInStepAtCalls reports true: a registration's bytes are in step
// between the two processes only at the calls of the nd interfaces, so a
// test that polls memory for a Write to land (and writes it back) cannot
// run over a split provider.
func (s *SplitProvider) MemoryInStepAtCalls() bool { return true }

// Name returns the local provider's name.
func (s *SplitProvider) Name() string { return s.local.Name() }

// Addresses returns [localAddr, remoteAddr].
func (s *SplitProvider) Addresses() ([]netip.Addr, error) {
	return []netip.Addr{s.localAddr, s.remoteAddr}, nil
}

// OpenAdapter opens the local adapter for localAddr, the child's for
// remoteAddr, and fails with nd.ErrInvalidAddress for any other address.
func (s *SplitProvider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	switch addr.Unmap() {
	case s.localAddr:
		var a nd.Adapter
		var err error
		s.c.around(func() { a, err = s.local.OpenAdapter(addr) })
		if err != nil {
			return nil, err
		}
		return &lAdapter{c: s.c, a: a}, nil
	case s.remoteAddr:
		return s.c.OpenAdapter(addr)
	}
	return nil, nd.ErrInvalidAddress
}

// OpenNetwork reports what the local provider's OpenNetwork method reports
// (see ndtest.OpenNetwork), or false if it has none.
func (s *SplitProvider) OpenNetwork() bool {
	o, ok := s.local.(interface{ OpenNetwork() bool })
	return ok && o.OpenNetwork()
}

// The local wrappers forward every call to the real object of the local
// provider, between two memory exchanges with the child. Arguments that are
// wrappers are unwrapped; anything else (a proxied object, say) is passed
// as is, so the local provider sees an object of another adapter, as it
// would in one process. Memory regions are not wrapped: they have no call
// that needs an exchange.

type lAdapter struct {
	c *Client
	a nd.Adapter
}

func (a *lAdapter) Address() netip.Addr { return a.a.Address() }

func (a *lAdapter) Query() (info nd.AdapterInfo, err error) {
	a.c.around(func() { info, err = a.a.Query() })
	return
}

func (a *lAdapter) CreateSharedReceiveQueue(cq nd.CompletionQueue, limits nd.SharedReceiveQueueLimits) (nd.SharedReceiveQueue, error) {
	var q nd.SharedReceiveQueue
	var err error
	a.c.around(func() { q, err = nd.CreateSharedReceiveQueue(a.a, unwrapCQ(cq), limits) })
	if err != nil {
		return nil, err
	}
	return &lSRQ{c: a.c, q: q}, nil
}

type lSRQ struct {
	c *Client
	q nd.SharedReceiveQueue
}

func (q *lSRQ) Receive(res *nd.Result, sgl []nd.SGE) (err error) {
	q.c.around(func() { err = q.q.Receive(res, sgl) })
	return
}

func (q *lSRQ) Notify(ctx context.Context) (err error) {
	q.c.around(func() { err = q.q.Notify(ctx) })
	return
}

func (q *lSRQ) Flush() (err error) {
	q.c.around(func() { err = q.q.Flush() })
	return
}

func (q *lSRQ) Close() (err error) {
	q.c.around(func() { err = q.q.Close() })
	return
}

func unwrapSRQ(x nd.SharedReceiveQueue) nd.SharedReceiveQueue {
	if w, ok := x.(*lSRQ); ok {
		return w.q
	}
	return x
}

func (a *lAdapter) CreateCompletionQueue(entries int) (nd.CompletionQueue, error) {
	var q nd.CompletionQueue
	var err error
	a.c.around(func() { q, err = a.a.CreateCompletionQueue(entries) })
	if err != nil {
		return nil, err
	}
	return &lCQ{c: a.c, q: q}, nil
}

func (a *lAdapter) RegisterMemory(ctx context.Context, buf []byte) (mr nd.MemoryRegion, err error) {
	a.c.around(func() { mr, err = a.a.RegisterMemory(ctx, buf) })
	return
}

func (a *lAdapter) DeregisterMemory(ctx context.Context, mr nd.MemoryRegion) (err error) {
	a.c.around(func() { err = a.a.DeregisterMemory(ctx, mr) })
	return
}

func (a *lAdapter) CreateMemoryWindow(invalidateResult *nd.Result) (nd.MemoryWindow, error) {
	var w nd.MemoryWindow
	var err error
	a.c.around(func() { w, err = a.a.CreateMemoryWindow(invalidateResult) })
	if err != nil {
		return nil, err
	}
	return &lWindow{c: a.c, w: w}, nil
}

func (a *lAdapter) CreateConnector() (nd.Connector, error) {
	var k nd.Connector
	var err error
	a.c.around(func() { k, err = a.a.CreateConnector() })
	if err != nil {
		return nil, err
	}
	return &lConnector{c: a.c, k: k}, nil
}

func (a *lAdapter) Listen(backlog, protocol int, port uint16) (nd.Listener, error) {
	var l nd.Listener
	var err error
	a.c.around(func() { l, err = a.a.Listen(backlog, protocol, port) })
	if err != nil {
		return nil, err
	}
	return &lListener{c: a.c, l: l}, nil
}

func (a *lAdapter) Close() (err error) {
	a.c.around(func() { err = a.a.Close() })
	return
}

type lCQ struct {
	c *Client
	q nd.CompletionQueue
}

func (q *lCQ) GetResults(results []*nd.Result) (n int) {
	q.c.around(func() { n = q.q.GetResults(results) })
	return
}

func (q *lCQ) Notify(ctx context.Context, typ nd.NotifyType) (err error) {
	q.c.around(func() { err = q.q.Notify(ctx, typ) })
	return
}

func (q *lCQ) Resize(entries int) (err error) {
	q.c.around(func() { err = q.q.Resize(entries) })
	return
}

func (q *lCQ) Close() (err error) {
	q.c.around(func() { err = q.q.Close() })
	return
}

type lConnector struct {
	c *Client
	k nd.Connector
}

func (k *lConnector) CreateEndpoint(inbound, outbound nd.CompletionQueue, limits nd.EndpointLimits) (nd.Endpoint, error) {
	var ep nd.Endpoint
	var err error
	k.c.around(func() { ep, err = k.k.CreateEndpoint(unwrapCQ(inbound), unwrapCQ(outbound), limits) })
	if err != nil {
		return nil, err
	}
	return &lEndpoint{c: k.c, e: ep}, nil
}

func (k *lConnector) CreateEndpointWithSRQ(inbound, outbound nd.CompletionQueue, srq nd.SharedReceiveQueue, limits nd.EndpointLimits) (nd.Endpoint, error) {
	var ep nd.Endpoint
	var err error
	k.c.around(func() {
		ep, err = nd.CreateEndpointWithSRQ(k.k, unwrapCQ(inbound), unwrapCQ(outbound), unwrapSRQ(srq), limits)
	})
	if err != nil {
		return nil, err
	}
	return &lEndpoint{c: k.c, e: ep}, nil
}

func (k *lConnector) Connect(ctx context.Context, ep nd.Endpoint, remote netip.AddrPort, protocol int, localPort uint16, privateData []byte) (err error) {
	k.c.around(func() { err = k.k.Connect(ctx, unwrapEndpoint(ep), remote, protocol, localPort, privateData) })
	return
}

func (k *lConnector) CompleteConnect(ctx context.Context) (err error) {
	k.c.around(func() { err = k.k.CompleteConnect(ctx) })
	return
}

func (k *lConnector) Accept(ctx context.Context, ep nd.Endpoint, privateData []byte) (err error) {
	k.c.around(func() { err = k.k.Accept(ctx, unwrapEndpoint(ep), privateData) })
	return
}

func (k *lConnector) Reject(privateData []byte) (err error) {
	k.c.around(func() { err = k.k.Reject(privateData) })
	return
}

func (k *lConnector) GetConnectionData(privateData []byte) (cd nd.ConnectionData, err error) {
	k.c.around(func() { cd, err = k.k.GetConnectionData(privateData) })
	return
}

func (k *lConnector) GetLocalAddress() (ap netip.AddrPort, err error) {
	k.c.around(func() { ap, err = k.k.GetLocalAddress() })
	return
}

func (k *lConnector) GetPeerAddress() (ap netip.AddrPort, err error) {
	k.c.around(func() { ap, err = k.k.GetPeerAddress() })
	return
}

func (k *lConnector) NotifyDisconnect(ctx context.Context) (err error) {
	k.c.around(func() { err = k.k.NotifyDisconnect(ctx) })
	return
}

func (k *lConnector) Disconnect(ctx context.Context) (err error) {
	k.c.around(func() { err = k.k.Disconnect(ctx) })
	return
}

func (k *lConnector) Close() (err error) {
	k.c.around(func() { err = k.k.Close() })
	return
}

// DisconnectReason implements nd.DisconnectReasoner with the local
// connector's reason.
func (k *lConnector) DisconnectReason() (err error) {
	k.c.around(func() { err = nd.DisconnectReason(k.k) })
	return
}

type lListener struct {
	c *Client
	l nd.Listener
}

func (l *lListener) GetConnectionRequest(ctx context.Context, conn nd.Connector) (err error) {
	l.c.around(func() { err = l.l.GetConnectionRequest(ctx, unwrapConnector(conn)) })
	return
}

func (l *lListener) Port() uint16 { return l.l.Port() }

func (l *lListener) Close() (err error) {
	l.c.around(func() { err = l.l.Close() })
	return
}

type lEndpoint struct {
	c *Client
	e nd.Endpoint
}

func (e *lEndpoint) Send(res *nd.Result, sgl []nd.SGE, flags nd.Flags) (err error) {
	e.c.around(func() { err = e.e.Send(res, sgl, flags) })
	return
}

func (e *lEndpoint) SendAndInvalidate(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, flags nd.Flags) (err error) {
	e.c.around(func() { err = e.e.SendAndInvalidate(res, sgl, remote, flags) })
	return
}

func (e *lEndpoint) Receive(res *nd.Result, sgl []nd.SGE) (err error) {
	e.c.around(func() { err = e.e.Receive(res, sgl) })
	return
}

func (e *lEndpoint) Bind(res *nd.Result, mr nd.MemoryRegion, mw nd.MemoryWindow, buf []byte, flags nd.Flags) (d nd.MWDescriptor, err error) {
	e.c.around(func() { d, err = e.e.Bind(res, mr, unwrapWindow(mw), buf, flags) })
	return
}

func (e *lEndpoint) Invalidate(res *nd.Result, mw nd.MemoryWindow, flags nd.Flags) (err error) {
	e.c.around(func() { err = e.e.Invalidate(res, unwrapWindow(mw), flags) })
	return
}

func (e *lEndpoint) Read(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) (err error) {
	e.c.around(func() { err = e.e.Read(res, sgl, remote, offset, flags) })
	return
}

func (e *lEndpoint) Write(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) (err error) {
	e.c.around(func() { err = e.e.Write(res, sgl, remote, offset, flags) })
	return
}

func (e *lEndpoint) Flush() (err error) {
	e.c.around(func() { err = e.e.Flush() })
	return
}

func (e *lEndpoint) StartRequestBatch() { e.c.around(e.e.StartRequestBatch) }

func (e *lEndpoint) SubmitRequestBatch() { e.c.around(e.e.SubmitRequestBatch) }

func (e *lEndpoint) MaxInlineData() int { return e.e.MaxInlineData() }

func (e *lEndpoint) Close() (err error) {
	e.c.around(func() { err = e.e.Close() })
	return
}

type lWindow struct {
	c *Client
	w nd.MemoryWindow
}

func (w *lWindow) Close() (err error) {
	w.c.around(func() { err = w.w.Close() })
	return
}

func unwrapCQ(x nd.CompletionQueue) nd.CompletionQueue {
	if w, ok := x.(*lCQ); ok {
		return w.q
	}
	return x
}

func unwrapEndpoint(x nd.Endpoint) nd.Endpoint {
	if w, ok := x.(*lEndpoint); ok {
		return w.e
	}
	return x
}

func unwrapConnector(x nd.Connector) nd.Connector {
	if w, ok := x.(*lConnector); ok {
		return w.k
	}
	return x
}

func unwrapWindow(x nd.MemoryWindow) nd.MemoryWindow {
	if w, ok := x.(*lWindow); ok {
		return w.w
	}
	return x
}
