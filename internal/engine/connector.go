package engine

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// Connector makes or accepts one connection (nd.Connector). Its methods are
// safe for concurrent use.
type Connector struct {
	a *Adapter

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced on every change of state
	state        ndrules.ConnState
	closed       bool
	shut         atomic.Bool // mirrors closed for the endpoint's checks without mu
	rejected     bool        // the peer refused the last attempt
	abortStatus  nd.Status   // why the link of an aborted attempt closed
	disconnected bool        // Disconnect was called
	reason       endReason   // why the connection ended (state Ended)
	ep           *Endpoint
	cur          *attempt // the attempt events are accepted from
	link         Link

	havePeer         bool
	peerIRD, peerORD int
	peerData         []byte
	local, remote    netip.AddrPort

	// waitingOn is the listener whose GetConnectionRequest waits to bind a
	// request to this connector, so that Close can end that wait.
	waitingOn *Listener
}

var _ nd.Connector = (*Connector)(nil)

func newConnector(a *Adapter) *Connector {
	return &Connector{a: a, changed: make(chan struct{})}
}

// closedStatus is the status of a call on c once c or its adapter closed,
// or Success.
func (c *Connector) closedStatus() nd.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.a.closedStatus(c.closed)
}

func (c *Connector) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitLocked waits, with c.mu held on entry and on return, until done()
// holds, ctx ends or the connector closes.
func (c *Connector) waitLocked(ctx context.Context, op string, done func() bool) error {
	for !done() {
		if c.closed {
			return &nd.OpError{Op: op, Status: nd.ErrCanceled}
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
			c.mu.Lock()
		case <-ctx.Done():
			c.mu.Lock()
			if done() {
				return nil
			}
			return canceled(op, ctx.Err())
		}
	}
	return nil
}

// CreateEndpoint implements nd.Connector.
func (c *Connector) CreateEndpoint(inbound, outbound nd.CompletionQueue, limits nd.EndpointLimits) (nd.Endpoint, error) {
	return c.createEndpoint("CreateEndpoint", inbound, outbound, nil, limits)
}

// CreateEndpointWithSRQ implements nd.SharedReceiveQueueConnector.
func (c *Connector) CreateEndpointWithSRQ(inbound, outbound nd.CompletionQueue, srq nd.SharedReceiveQueue, limits nd.EndpointLimits) (nd.Endpoint, error) {
	if st := c.closedStatus(); st != nd.Success {
		return nil, st
	}
	s, ok := srq.(*SRQ)
	if !ok || s == nil || s.a != c.a {
		return nil, ndrules.Arg("CreateEndpointWithSRQ", "srq", nd.ErrInvalidParameter3, notOpenSRQ)
	}
	// The queue's limits stand for the inbound ones.
	limits.InboundEntries, limits.InboundSGE = 1, 0
	return c.createEndpoint("CreateEndpointWithSRQ", inbound, outbound, s, limits)
}

// The reasons of the engine's argument errors.
const (
	notOwnEndpoint = "not the endpoint of this connector"
	notOpenSRQ     = "not an open shared receive queue of this adapter"
)

// createEndpoint is CreateEndpoint, on srq when it is not nil; op names the
// call in its errors.
func (c *Connector) createEndpoint(op string, inbound, outbound nd.CompletionQueue, srq *SRQ, limits nd.EndpointLimits) (nd.Endpoint, error) {
	a := c.a
	if st := c.closedStatus(); st != nd.Success {
		return nil, st
	}
	in, _ := inbound.(*CQ)
	out, _ := outbound.(*CQ)
	if err := ndrules.CreateEndpoint(op, &a.info, in != nil && in.a == a, out != nil && out.a == a, &limits); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := a.closedStatus(c.closed); st != nd.Success {
		return nil, st
	}
	if c.ep != nil {
		return nil, nd.ErrNotSupported // one endpoint at a time
	}
	ep, err := newEndpoint(op, a, c, in, out, srq, limits)
	if err != nil {
		return nil, err
	}
	c.ep = ep
	return ep, nil
}

// Connect implements nd.Connector.
func (c *Connector) Connect(ctx context.Context, ep nd.Endpoint, remote netip.AddrPort, protocol int, localPort uint16, privateData []byte) error {
	e, _ := ep.(*Endpoint)
	c.mu.Lock()
	switch {
	case c.a.closedStatus(c.closed) != nd.Success:
		st := c.a.closedStatus(c.closed)
		c.mu.Unlock()
		return st
	case e == nil || e != c.ep:
		c.mu.Unlock()
		return ndrules.Arg("Connect", "ep", nd.ErrInvalidParameter1, notOwnEndpoint)
	}
	if st := c.state.Connect(); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	if err := ndrules.ConnectParams(&c.a.info, remote, protocol, len(privateData)); err != nil {
		c.mu.Unlock()
		return err
	}
	t := &attempt{c: c}
	c.cur, c.state, c.rejected, c.havePeer, c.link = t, ndrules.Connecting, false, false, nil
	d := &DialRequest{
		Local: c.a.addr, LocalPort: localPort, Remote: remote, Protocol: protocol,
		IRD: e.limits.InboundReadLimit, ORD: e.limits.OutboundReadLimit,
		PrivateData: privateData,
	}
	c.mu.Unlock()

	link, err := c.a.transport.Dial(ctx, d, t)
	c.mu.Lock()
	if err != nil {
		if c.cur == t {
			c.state, c.cur = ndrules.Idle, nil
			c.signalLocked()
		}
		c.mu.Unlock()
		if ctx.Err() != nil {
			return canceled("Connect", ctx.Err())
		}
		return err
	}
	c.link, c.local, c.remote = link, link.LocalAddr(), link.RemoteAddr()
	err = c.waitLocked(ctx, "Connect", func() bool { return c.cur != t || c.state != ndrules.Connecting })
	switch {
	case err != nil || c.cur != t:
		// Abandoned: the peer learns it from the closed link.
		if c.cur == t {
			c.state, c.cur, c.link = ndrules.Idle, nil, nil
			c.signalLocked()
		}
		c.mu.Unlock()
		link.Close(nd.ErrConnectionAborted)
		if err == nil {
			err = &nd.OpError{Op: "Connect", Status: nd.ErrCanceled}
		}
		return err
	case c.state == ndrules.Replied:
		c.mu.Unlock()
		return nil
	case c.rejected:
		c.state, c.cur, c.link = ndrules.Idle, nil, nil
		c.mu.Unlock()
		return nd.ErrConnectionRefused
	default:
		c.state, c.cur, c.link = ndrules.Idle, nil, nil
		st := c.abortStatus
		c.mu.Unlock()
		switch st {
		case nd.ErrIOTimeout: // the passive side never answered
			return st
		case nd.ErrInsufficientResources: // a side ran out of descriptors or memory
			return &nd.OpError{Op: "Connect", Status: st, Err: errPeerShort}
		}
		return nd.ErrConnectionAborted
	}
}

// errPeerShort is the cause of a Connect that failed because the transport
// found a side out of resources after the request left.
var errPeerShort = errors.New("the connection's setup ran out of file descriptors or memory (a process's RLIMIT_NOFILE, memory or mappings)")

// CompleteConnect implements nd.Connector.
func (c *Connector) CompleteConnect(ctx context.Context) error {
	c.mu.Lock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	if st := c.state.CompleteConnect(); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return canceled("CompleteConnect", err)
	}
	ep, link := c.ep, c.link
	ird := min(ep.limits.InboundReadLimit, c.peerORD)
	ord := min(ep.limits.OutboundReadLimit, c.peerIRD)
	c.state = ndrules.Connected
	c.signalLocked()
	c.mu.Unlock()
	if err := ep.attach(link, ird, ord); err != nil {
		// The endpoint closed meanwhile.
		c.mu.Lock()
		if c.state == ndrules.Connected {
			c.state, c.reason = ndrules.Ended, byThisSide("Close")
			c.signalLocked()
		}
		c.mu.Unlock()
		link.Close(nd.ErrConnectionAborted)
		return &nd.OpError{Op: "CompleteConnect", Status: nd.ErrCanceled, Err: err}
	}
	ep.ready()
	if err := link.Ready(); err != nil {
		ep.terminate(nd.ErrConnectionAborted, endReason{peer: true, st: nd.ErrConnectionAborted})
		return nd.ErrConnectionAborted
	}
	return nil
}

// Accept implements nd.Connector.
func (c *Connector) Accept(ctx context.Context, ep nd.Endpoint, privateData []byte) error {
	e, _ := ep.(*Endpoint)
	c.mu.Lock()
	switch {
	case c.a.closedStatus(c.closed) != nd.Success:
		st := c.a.closedStatus(c.closed)
		c.mu.Unlock()
		return st
	case e == nil || e != c.ep:
		c.mu.Unlock()
		return ndrules.Arg("Accept", "ep", nd.ErrInvalidParameter1, notOwnEndpoint)
	}
	if st := c.state.Accept(); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	if err := ndrules.CalleeData("Accept", &c.a.info, len(privateData)); err != nil {
		c.mu.Unlock()
		return err
	}
	t, link := c.cur, c.link
	ird := min(e.limits.InboundReadLimit, c.peerORD)
	ord := min(e.limits.OutboundReadLimit, c.peerIRD)
	c.state = ndrules.Accepting
	c.mu.Unlock()

	// Attach first, so that the active side's first Send finds the endpoint.
	if err := e.attach(link, ird, ord); err != nil {
		// The endpoint closed meanwhile.
		c.fail(t, ndrules.Aborted)
		link.Close(nd.ErrConnectionAborted)
		return &nd.OpError{Op: "Accept", Status: nd.ErrCanceled, Err: err}
	}
	if err := link.Accept(ird, ord, privateData); err != nil {
		e.detach()
		c.fail(t, ndrules.Aborted)
		link.Close(nd.ErrConnectionAborted)
		return nd.ErrConnectionAborted
	}
	c.mu.Lock()
	err := c.waitLocked(ctx, "Accept", func() bool { return c.cur != t || c.state != ndrules.Accepting })
	state, rejected, abandoned := c.state, c.rejected, c.cur != t
	if err != nil && c.cur == t && c.state == ndrules.Accepting {
		c.state = ndrules.Aborted
		c.signalLocked()
	}
	c.mu.Unlock()
	switch {
	case err != nil:
		e.detach()
		link.Close(nd.ErrConnectionAborted)
		return err
	case abandoned:
		// The endpoint or the connector closed while this call waited.
		link.Close(nd.ErrConnectionAborted)
		return &nd.OpError{Op: "Accept", Status: nd.ErrCanceled}
	case state == ndrules.Connected || state == ndrules.Ended:
		return nil
	case rejected:
		c.fail(t, ndrules.Idle)
		return nd.ErrConnectionRefused
	default:
		return nd.ErrConnectionAborted
	}
}

// fail moves the connector to state s if t is still its attempt.
func (c *Connector) fail(t *attempt, s ndrules.ConnState) {
	c.mu.Lock()
	if c.cur == t {
		c.state = s
		c.signalLocked()
	}
	c.mu.Unlock()
}

// Reject implements nd.Connector.
func (c *Connector) Reject(privateData []byte) error {
	if st := c.closedStatus(); st != nd.Success {
		return st
	}
	if err := ndrules.CalleeData("Reject", &c.a.info, len(privateData)); err != nil {
		return err
	}
	c.mu.Lock()
	if st := c.state.Reject(); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	link := c.link
	c.state, c.cur, c.link = ndrules.Idle, nil, nil
	c.signalLocked()
	c.mu.Unlock()
	err := link.Reject(privateData)
	link.Close(nd.ErrConnectionRefused)
	if err != nil {
		return nd.ErrConnectionAborted
	}
	return nil
}

// GetConnectionData implements nd.Connector.
func (c *Connector) GetConnectionData(privateData []byte) (nd.ConnectionData, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		return nd.ConnectionData{}, st
	}
	if !c.havePeer {
		return nd.ConnectionData{}, nd.ErrConnectionInvalid
	}
	cd, st := ndrules.ConnectionData(&c.a.info, c.peerIRD, c.peerORD, c.peerData, privateData)
	return cd, st.Err()
}

// GetLocalAddress implements nd.Connector.
func (c *Connector) GetLocalAddress() (netip.AddrPort, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		return netip.AddrPort{}, st
	}
	if st := c.state.Addresses(); st != nd.Success {
		return netip.AddrPort{}, st
	}
	if !c.local.IsValid() {
		return netip.AddrPort{}, nd.ErrConnectionInvalid
	}
	return c.local, nil
}

// GetPeerAddress implements nd.Connector.
func (c *Connector) GetPeerAddress() (netip.AddrPort, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		return netip.AddrPort{}, st
	}
	if st := c.state.Addresses(); st != nd.Success {
		return netip.AddrPort{}, st
	}
	if !c.remote.IsValid() {
		return netip.AddrPort{}, nd.ErrConnectionInvalid
	}
	return c.remote, nil
}

// NotifyDisconnect implements nd.Connector.
func (c *Connector) NotifyDisconnect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		return st
	}
	wait, st := c.state.NotifyDisconnect()
	if !wait {
		return st.Err()
	}
	return c.waitLocked(ctx, "NotifyDisconnect", func() bool { return c.state != ndrules.Connected })
}

// Disconnect implements nd.Connector.
func (c *Connector) Disconnect(ctx context.Context) error {
	c.mu.Lock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	state, ep, link, again := c.state, c.ep, c.link, c.disconnected
	if state == ndrules.Connected || state == ndrules.Ended {
		c.disconnected = true
	}
	c.mu.Unlock()
	if st := state.Disconnect(again); st != nd.Success {
		return st
	}
	if state == ndrules.Connected {
		ep.terminate(nd.Success, byThisSide("Disconnect"))
	}
	// Ended: the peer or an error ended it first, and the end this side
	// owes the peer (its close, a Terminate) may still be on its way.
	return waitClosed(ctx, link)
}

// waitClosed waits, for Disconnect, until the end of the connection that
// link's Close started is out of the process's hands, when the link says
// so later than Close returns (CloseWaiter); ErrCanceled when ctx ends
// first.
func waitClosed(ctx context.Context, link Link) error {
	w, ok := link.(CloseWaiter)
	if !ok {
		return nil
	}
	if err := w.WaitClosed(ctx); err != nil {
		return canceled("Disconnect", err)
	}
	return nil
}

// Close implements nd.Connector.
func (c *Connector) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.shut.Store(true)
	c.a.closes.Add(1)
	state, ep, link, l := c.state, c.ep, c.link, c.waitingOn
	c.cur, c.waitingOn = nil, nil
	c.signalLocked()
	c.mu.Unlock()
	if l != nil {
		l.cancelWait(c)
	}
	switch state {
	case ndrules.Connected:
		ep.terminate(nd.Success, byThisSide("Close")) // gracefully, as Disconnect
	case ndrules.Requested:
		link.Reject(nil)
		link.Close(nd.ErrConnectionRefused)
	case ndrules.Connecting, ndrules.Replied, ndrules.Accepting:
		if link != nil {
			link.Close(nd.ErrConnectionAborted)
		}
	}
	if ep != nil {
		ep.close(nd.ErrCanceled)
	}
	c.a.forget(c)
	return nil
}

// endpointClosed records that ep, c's endpoint, closed: a connection
// attempt it was part of is abandoned (a waiting Connect or Accept returns
// ErrCanceled, the peer sees the attempt aborted), and CreateEndpoint may
// make a new endpoint. A request bound by GetConnectionRequest and not yet
// accepted stays: a new endpoint may accept it.
func (c *Connector) endpointClosed(ep *Endpoint) {
	c.mu.Lock()
	if c.ep != ep {
		c.mu.Unlock()
		return
	}
	c.ep = nil
	var link Link
	if !c.closed {
		switch c.state {
		case ndrules.Connecting, ndrules.Replied, ndrules.Accepting:
			link = c.link
			c.state, c.cur, c.link = ndrules.Idle, nil, nil
		case ndrules.Connected:
			c.state, c.reason = ndrules.Ended, byThisSide("Close")
		}
	}
	c.signalLocked()
	c.mu.Unlock()
	if link != nil {
		link.Close(nd.ErrConnectionAborted)
	}
}

// ended records that the connection of c's endpoint ended, for reason why.
func (c *Connector) ended(why *endReason) {
	c.mu.Lock()
	if c.state == ndrules.Connected {
		c.state, c.reason = ndrules.Ended, *why
		c.signalLocked()
	}
	c.mu.Unlock()
}

// attempt relays one connection attempt's link events to the connector
// that owns the attempt; events of an abandoned attempt are dropped. On the
// passive side the attempt exists before a connector takes it.
type attempt struct {
	mu      sync.Mutex
	c       *Connector
	aborted bool // the link closed before a connector took the attempt
	req     ConnRequest
	link    Link
}

func (t *attempt) owner() *Connector {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c
}

// Accepted implements LinkEvents.
func (t *attempt) Accepted(ird, ord int, privateData []byte) {
	c := t.owner()
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.cur == t && c.state == ndrules.Connecting {
		c.state, c.havePeer = ndrules.Replied, true
		c.peerIRD, c.peerORD = ird, ord
		c.peerData = append([]byte(nil), privateData...)
		c.signalLocked()
	}
	c.mu.Unlock()
}

// Rejected implements LinkEvents.
func (t *attempt) Rejected(privateData []byte) {
	c := t.owner()
	if c == nil {
		return
	}
	c.mu.Lock()
	var ep *Endpoint
	if c.cur == t && (c.state == ndrules.Connecting || c.state == ndrules.Accepting) {
		if c.state == ndrules.Connecting {
			c.havePeer, c.peerIRD, c.peerORD = true, 0, 0
			c.peerData = append([]byte(nil), privateData...)
		} else {
			ep = c.ep
		}
		c.state, c.rejected = ndrules.Idle, true
		c.signalLocked()
	}
	c.mu.Unlock()
	if ep != nil {
		ep.detach()
	}
}

// Ready implements LinkEvents.
func (t *attempt) Ready() {
	c := t.owner()
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.cur == t && c.state == ndrules.Accepting {
		// The endpoint takes posts before Accept can return.
		c.ep.ready()
		c.state = ndrules.Connected
		c.signalLocked()
	}
	c.mu.Unlock()
}

// Closed implements LinkEvents.
func (t *attempt) Closed(status nd.Status) {
	t.mu.Lock()
	c := t.c
	if c == nil {
		t.aborted = true
	}
	t.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.cur != t {
		c.mu.Unlock()
		return
	}
	state, ep := c.state, c.ep
	c.abortStatus = status
	switch state {
	case ndrules.Connecting:
		c.state = ndrules.Aborted
	case ndrules.Replied, ndrules.Requested, ndrules.Accepting:
		c.state = ndrules.Aborted
	}
	c.signalLocked()
	c.mu.Unlock()
	if ep == nil {
		return
	}
	switch state {
	case ndrules.Accepting:
		ep.detach()
	case ndrules.Connected:
		ep.terminate(nd.ErrCanceled, ep.peerEnd(status))
	}
}
