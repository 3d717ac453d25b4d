//go:build verbs && linux

package verbs

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

const resolveTimeoutMS = 2000

// connector is an ND connector: one rdma_cm id on the adapter's event
// channel, made by Connect or bound to a request by GetConnectionRequest.
type connector struct {
	a        *Adapter
	evs      chan cmEvent
	closedCh chan struct{}
	ended    chan struct{}
	endOnce  sync.Once

	// idMu orders the calls into librdmacm with the id made outside mu
	// (withID holds it for reading) before the id's destruction (dropID
	// holds it for writing): the connection's end, reported on the
	// adapter's event goroutine, may disconnect the id while the
	// application's Close or a failed Connect destroys it.
	idMu sync.RWMutex

	mu            sync.Mutex
	closed        bool
	shut          atomic.Bool // closed, for the endpoint's checks without mu
	state         ndrules.ConnState
	handle        uintptr
	id            cID
	ep            *endpoint
	req           *request
	everConnected bool
	disconnected  bool // Disconnect already reported success
	hasPeer       bool
	peerPD        []byte
	peerIRD       int // the peer's limits (the application's) from its frame
	peerORD       int
	local, remote netip.AddrPort
}

var _ nd.Connector = (*connector)(nil)

func newConnector(a *Adapter) *connector {
	return &connector{a: a, evs: make(chan cmEvent, 16), closedCh: make(chan struct{}), ended: make(chan struct{})}
}

func (c *connector) onEvent(ev cmEvent) {
	switch ev.typ {
	case evDisconnected, evDeviceRemoval:
		c.mu.Lock()
		ep := c.ep
		c.mu.Unlock()
		if ep != nil {
			ep.terminate()
		} else {
			c.connectionEnded(nil)
		}
	case evTimewaitExit:
		return
	}
	select {
	case c.evs <- ev:
	default:
	}
}

// connectionEnded records the end of the connection and tells the peer.
func (c *connector) connectionEnded(*endpoint) {
	c.mu.Lock()
	switch c.state {
	case ndrules.Connected:
		c.state = ndrules.Ended
	case ndrules.Replied, ndrules.Accepting:
		c.state = ndrules.Aborted
	}
	ever := c.everConnected
	c.mu.Unlock()
	if ever {
		c.endOnce.Do(func() { close(c.ended) })
	}
	c.withID(cmDisconnect)
}

// endpointClosed lets CreateEndpoint make a new endpoint once e closed (a
// connector has one at a time).
func (c *connector) endpointClosed(e *endpoint) {
	c.mu.Lock()
	if c.ep == e {
		c.ep = nil
	}
	c.mu.Unlock()
}

// closedErr is the error of a call made after c or its adapter closed.
func (c *connector) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.a.closedErr(c.closed)
}

// wait returns the next connection event for a blocking call.
func (c *connector) wait(ctx context.Context, op string) (cmEvent, error) {
	for {
		select {
		case ev := <-c.evs:
			if ev.typ == evTimewaitExit {
				continue
			}
			return ev, nil
		case <-ctx.Done():
			return cmEvent{}, canceled(op, ctx)
		case <-c.closedCh:
			return cmEvent{}, &nd.OpError{Op: op, Status: nd.ErrCanceled, Err: errClosed}
		case <-c.a.done:
			return cmEvent{}, &nd.OpError{Op: op, Status: nd.ErrCanceled, Err: errClosed}
		}
	}
}

// private data framing -----------------------------------------------------

func (c *connector) wrap(protocol int, pd []byte) []byte {
	return wrapPrivateData(c.a.dev.iwarp, protocol, pd)
}

// wire is the IRD or ORD announced for an application limit: one more on
// iWARP, as provider/tcp announces (it keeps a Read slot to confirm
// delivery), so both transports read each other's limits the same way.
func (c *connector) wire(n int) int {
	if c.a.dev.iwarp {
		return min(n+1, 128)
	}
	return n
}

func (c *connector) app(n int, godirect bool) int {
	if c.a.dev.iwarp && godirect && n > 0 {
		return n - 1
	}
	return n
}

// Connector methods ---------------------------------------------------------

// CreateEndpoint implements nd.Connector.
func (c *connector) CreateEndpoint(inbound, outbound nd.CompletionQueue, l nd.EndpointLimits) (nd.Endpoint, error) {
	return c.createEndpoint("CreateEndpoint", inbound, outbound, nil, l)
}

var _ nd.SharedReceiveQueueConnector = (*connector)(nil)

// CreateEndpointWithSRQ implements nd.SharedReceiveQueueConnector: as in the
// engine, a queue that is not this adapter's, or closed, is
// ErrInvalidParameter3, and the queue's limits stand for the inbound ones.
func (c *connector) CreateEndpointWithSRQ(inbound, outbound nd.CompletionQueue, srqi nd.SharedReceiveQueue, l nd.EndpointLimits) (nd.Endpoint, error) {
	if err := c.closedErr(); err != nil {
		return nil, err
	}
	const op = "CreateEndpointWithSRQ"
	s, ok := srqi.(*srq)
	if !ok || s == nil || s.a != c.a {
		return nil, ndrules.Arg(op, "srq", nd.ErrInvalidParameter3, notOpenSRQ)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.cq.shut.Load() {
		return nil, ndrules.Arg(op, "srq", nd.ErrInvalidParameter3, notOpenSRQ)
	}
	l.InboundEntries, l.InboundSGE = 1, 0
	return c.createEndpoint(op, inbound, outbound, s, l)
}

// The reasons of the argument errors made here.
const (
	notOpenSRQ     = "not an open shared receive queue of this adapter"
	notOwnEndpoint = "not the endpoint of this connector"
)

// createEndpoint is CreateEndpoint, on s when it is not nil; op names the
// call in its errors.
func (c *connector) createEndpoint(op string, inbound, outbound nd.CompletionQueue, s *srq, l nd.EndpointLimits) (nd.Endpoint, error) {
	a := c.a
	if err := c.closedErr(); err != nil {
		return nil, err
	}
	in, _ := inbound.(*cq)
	out, _ := outbound.(*cq)
	if err := ndrules.CreateEndpoint(op, &a.info, in != nil && in.a == a, out != nil && out.a == a, &l); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := a.closedErr(c.closed); err != nil {
		return nil, err
	}
	if c.ep != nil {
		return nil, nd.ErrNotSupported
	}
	e, err := newEndpoint(op, c, in, out, s, l)
	if err != nil {
		return nil, err
	}
	c.ep = e
	a.mu.Lock()
	a.eps[e] = struct{}{}
	a.mu.Unlock()
	return e, nil
}

// Connect implements nd.Connector.
func (c *connector) Connect(ctx context.Context, ep nd.Endpoint, remote netip.AddrPort, protocol int, localPort uint16, privateData []byte) error {
	const op = "Connect"
	c.mu.Lock()
	e, ok := ep.(*endpoint)
	switch {
	case c.a.closedErr(c.closed) != nil:
		c.mu.Unlock()
		return c.a.closedErr(c.closed)
	case !ok || e.c != c || e != c.ep:
		c.mu.Unlock()
		return ndrules.Arg(op, "ep", nd.ErrInvalidParameter1, notOwnEndpoint)
	}
	if st := c.state.Connect(); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	if err := ndrules.ConnectParams(&c.a.info, remote, protocol, len(privateData)); err != nil {
		c.mu.Unlock()
		return err
	}
	ra := remote.Addr().Unmap()
	if !ra.Is4() || ra.IsLoopback() || ra.IsUnspecified() {
		// rdma_cm reaches no adapter through 127/8 (docs/verbs.md).
		c.mu.Unlock()
		return nd.ErrBadNetworkName
	}
	remote = netip.AddrPortFrom(ra, remote.Port())
	c.state, c.hasPeer, c.peerPD = ndrules.Connecting, false, nil
	h := c.a.register(c)
	id, err := createID(c.a.ch, h)
	if err != nil {
		c.a.unregister(h)
		c.state = ndrules.Idle
		c.mu.Unlock()
		return withCause(op, nd.ErrInsufficientResources, err)
	}
	c.handle, c.id = h, id
	c.mu.Unlock()

	if err := c.resolveRemote(ctx, e, id, remote, localPort); err != nil {
		return err
	}
	if err := e.attach(id); err != nil {
		return c.connectFailed(nd.ErrInsufficientResources, err)
	}
	priv := c.wrap(protocol, privateData)
	if err := cmConnect(id, e.qpn, priv, c.wire(e.lim.InboundReadLimit), c.wire(e.lim.OutboundReadLimit), c.a.rnrRetry, false); err != nil {
		e.dead.Store(true)
		return c.connectFailed(nd.ErrConnectionRefused, err)
	}
	return c.awaitConnected(ctx, e, id)
}

// connectFailed ends a Connect that failed after it made the rdma_cm id:
// the id goes and the connector is idle again. It returns err when it is
// an *nd.OpError (a wait that was canceled or whose connector closed),
// st with err as its cause otherwise. It takes c.mu.
func (c *connector) connectFailed(st nd.Status, err error) error {
	c.dropID()
	c.mu.Lock()
	c.state = ndrules.Idle
	c.mu.Unlock()
	if oe, ok := err.(*nd.OpError); ok {
		return oe
	}
	return withCause("Connect", st, err)
}

// resolveRemote binds Connect's rdma_cm id to the adapter's address at
// localPort and resolves remote's address and route, waiting for each;
// a failure ends the Connect (connectFailed). Called without c.mu.
func (c *connector) resolveRemote(ctx context.Context, e *endpoint, id cID, remote netip.AddrPort, localPort uint16) error {
	const op = "Connect"
	if err := bindAddr(id, netip.AddrPortFrom(c.a.addr, localPort)); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return c.connectFailed(nd.ErrAddressAlreadyAssociated, err)
		}
		return c.connectFailed(nd.ErrInvalidAddress, err)
	}
	if err := resolveAddr(id, remote, resolveTimeoutMS); err != nil {
		return c.connectFailed(nd.ErrBadNetworkName, err)
	}
	steps := []struct{ want, st int }{{evAddrResolved, 0}, {evRouteResolved, 0}}
	for k, s := range steps {
		ev, err := c.wait(ctx, op)
		if err != nil {
			e.dead.Store(true)
			return c.connectFailed(nd.ErrCanceled, err)
		}
		if ev.typ != s.want {
			return c.connectFailed(nd.ErrBadNetworkName, syscall.Errno(-ev.status))
		}
		if k == 0 {
			if err := resolveRoute(id, resolveTimeoutMS); err != nil {
				return c.connectFailed(nd.ErrBadNetworkName, err)
			}
		}
	}
	return nil
}

// awaitConnected waits for the answer to Connect's connection request on
// id: an accepting peer's limits and private data are kept and the
// connector is Replied; a refusal or an error ends the Connect
// (connectFailed). Called without c.mu; it takes it.
func (c *connector) awaitConnected(ctx context.Context, e *endpoint, id cID) error {
	const op = "Connect"
	for {
		ev, err := c.wait(ctx, op)
		if err != nil {
			e.dead.Store(true)
			return c.connectFailed(nd.ErrCanceled, err)
		}
		switch ev.typ {
		case evEstablished, evConnectResponse:
			_, kind, data := unwrap(c.a.dev.iwarp, ev.pd)
			godirect := kind != peerForeign
			c.mu.Lock()
			c.hasPeer, c.peerPD = true, append([]byte(nil), data...)
			pird, pord := ev.ird, ev.ord
			if c.a.dev.iwarp {
				// iw_cm reports the initiator's adopted IRD/ORD: the
				// peer's ORD and IRD.
				pird, pord = ev.ord, ev.ird
			}
			c.peerIRD, c.peerORD = c.app(pird, godirect), c.app(pord, godirect)
			c.local, c.remote = idAddrs(id)
			e.ord = min(e.lim.OutboundReadLimit, c.peerIRD)
			e.confirmWrites = c.a.dev.iwarp && kind == peerTCP
			c.state = ndrules.Replied
			c.mu.Unlock()
			return nil
		case evRejected:
			_, _, data := unwrap(c.a.dev.iwarp, ev.pd)
			c.mu.Lock()
			c.hasPeer, c.peerPD, c.peerIRD, c.peerORD = true, append([]byte(nil), data...), 0, 0
			c.mu.Unlock()
			e.dead.Store(true)
			return c.connectFailed(nd.ErrConnectionRefused, nil)
		case evUnreachable, evConnectError, evDisconnected, evDeviceRemoval:
			e.dead.Store(true)
			return c.connectFailed(nd.ErrConnectionRefused, syscall.Errno(-ev.status))
		}
	}
}

// dropID destroys the connector's rdma_cm id.
func (c *connector) dropID() {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	c.mu.Lock()
	id, h := c.id, c.handle
	c.id, c.handle = nil, 0
	c.mu.Unlock()
	if id != nil {
		destroyID(id)
		c.a.unregister(h)
	}
}

// withID calls f with the connector's rdma_cm id, if it still has one,
// while dropID cannot destroy it. f must not call dropID.
func (c *connector) withID(f func(cID)) {
	c.idMu.RLock()
	defer c.idMu.RUnlock()
	c.mu.Lock()
	id := c.id
	c.mu.Unlock()
	if id != nil {
		f(id)
	}
}

// CompleteConnect implements nd.Connector.
func (c *connector) CompleteConnect(ctx context.Context) error {
	const op = "CompleteConnect"
	c.mu.Lock()
	if err := c.a.closedErr(c.closed); err != nil {
		c.mu.Unlock()
		return err
	}
	if st := c.state.CompleteConnect(); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	e, id := c.ep, c.id
	c.mu.Unlock()
	if !c.a.dev.iwarp {
		if err := e.toRTS(id, c.wire(e.ord), c.wire(min(e.lim.InboundReadLimit, c.peerORD))); err != nil {
			return withCause(op, nd.ErrConnectionAborted, err)
		}
		if err := cmEstablish(id); err != nil {
			return withCause(op, nd.ErrConnectionAborted, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != ndrules.Replied {
		return nd.ErrConnectionAborted
	}
	c.state, c.everConnected = ndrules.Connected, true
	e.connected.Store(true)
	return nil
}

// Accept implements nd.Connector.
func (c *connector) Accept(ctx context.Context, ep nd.Endpoint, privateData []byte) error {
	const op = "Accept"
	c.mu.Lock()
	e, ok := ep.(*endpoint)
	switch {
	case c.a.closedErr(c.closed) != nil:
		c.mu.Unlock()
		return c.a.closedErr(c.closed)
	case !ok || e.c != c || e != c.ep:
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
	if c.req.aborted.Load() {
		c.state = ndrules.Aborted
		c.mu.Unlock()
		return nd.ErrConnectionAborted
	}
	c.state = ndrules.Accepting
	id := c.id
	ird := min(e.lim.InboundReadLimit, c.peerORD)
	ord := min(e.lim.OutboundReadLimit, c.peerIRD)
	c.mu.Unlock()
	abort := func(st nd.Status, err error) error {
		e.dead.Store(true)
		c.mu.Lock()
		c.state = ndrules.Aborted
		c.mu.Unlock()
		return withCause(op, st, err)
	}
	if err := e.attach(id); err != nil {
		return abort(nd.ErrConnectionAborted, err)
	}
	e.ord = ord
	e.confirmWrites = c.a.dev.iwarp && c.req.peer == peerTCP
	if !c.a.dev.iwarp {
		if err := e.toRTS(id, ord, ird); err != nil {
			return abort(nd.ErrConnectionAborted, err)
		}
	}
	if err := cmConnect(id, e.qpn, c.wrap(0, privateData), c.wire(ird), c.wire(ord), c.a.rnrRetry, true); err != nil {
		return abort(nd.ErrConnectionAborted, err)
	}
	for {
		ev, err := c.wait(ctx, op)
		if err != nil {
			c.withID(cmDisconnect)
			return abort(nd.ErrCanceled, err)
		}
		switch ev.typ {
		case evEstablished:
			c.mu.Lock()
			if c.state != ndrules.Accepting {
				c.mu.Unlock()
				return nd.ErrConnectionAborted
			}
			c.state, c.everConnected = ndrules.Connected, true
			e.connected.Store(true)
			c.mu.Unlock()
			return nil
		case evRejected:
			return abort(nd.ErrConnectionRefused, nil)
		case evDisconnected, evConnectError, evUnreachable, evDeviceRemoval:
			return abort(nd.ErrConnectionAborted, syscall.Errno(-ev.status))
		}
	}
}

// Reject implements nd.Connector.
func (c *connector) Reject(privateData []byte) error {
	c.mu.Lock()
	if err := c.a.closedErr(c.closed); err != nil {
		c.mu.Unlock()
		return err
	}
	state, id, e := c.state, c.id, c.ep
	if err := ndrules.CalleeData("Reject", &c.a.info, len(privateData)); err != nil {
		c.mu.Unlock()
		return err
	}
	if st := state.Reject(); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	c.state = ndrules.Idle
	c.mu.Unlock()
	if state == ndrules.Requested {
		cmReject(id, c.wrap(0, privateData))
		c.dropID()
		return nil
	}
	// The active side refuses the accepted terms.
	if !c.a.dev.iwarp {
		cmReject(id, c.wrap(0, privateData))
	}
	if e != nil {
		e.terminate()
	}
	return nil
}

// GetConnectionData implements nd.Connector.
func (c *connector) GetConnectionData(privateData []byte) (nd.ConnectionData, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.a.closedErr(c.closed); err != nil {
		return nd.ConnectionData{}, err
	}
	if !c.hasPeer {
		return nd.ConnectionData{}, nd.ErrConnectionInvalid
	}
	cd, st := ndrules.ConnectionData(&c.a.info, c.peerIRD, c.peerORD, c.peerPD, privateData)
	return cd, st.Err()
}

// GetLocalAddress implements nd.Connector.
func (c *connector) GetLocalAddress() (netip.AddrPort, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.a.closedErr(c.closed); err != nil {
		return netip.AddrPort{}, err
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
func (c *connector) GetPeerAddress() (netip.AddrPort, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.a.closedErr(c.closed); err != nil {
		return netip.AddrPort{}, err
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
func (c *connector) NotifyDisconnect(ctx context.Context) error {
	c.mu.Lock()
	err := c.a.closedErr(c.closed)
	wait, st := c.state.NotifyDisconnect()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if !wait {
		return st.Err()
	}
	select {
	case <-c.ended:
		return nil
	case <-ctx.Done():
		return canceled("NotifyDisconnect", ctx)
	case <-c.closedCh:
		return &nd.OpError{Op: "NotifyDisconnect", Status: nd.ErrCanceled, Err: errClosed}
	}
}

// Disconnect implements nd.Connector.
func (c *connector) Disconnect(ctx context.Context) error {
	c.mu.Lock()
	if err := c.a.closedErr(c.closed); err != nil {
		c.mu.Unlock()
		return err
	}
	state, e := c.state, c.ep
	if st := state.Disconnect(c.disconnected); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	c.state, c.disconnected = ndrules.Ended, true
	c.mu.Unlock()
	if state == ndrules.Connected {
		e.terminate()
	} // else the peer ended it first
	return nil
}

// Close implements nd.Connector.
func (c *connector) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.shut.Store(true)
	close(c.closedCh)
	st, e := c.state, c.ep
	c.mu.Unlock()
	if st == ndrules.Requested {
		c.withID(func(id cID) { cmReject(id, nil) })
	}
	if e != nil {
		e.Close() // ends the connection; its requests complete ErrCanceled
	} else {
		c.withID(cmDisconnect)
	}
	c.dropID()
	c.a.mu.Lock()
	delete(c.a.conns, c)
	c.a.mu.Unlock()
	return nil
}

// bindRequest makes c the owner of a request from GetConnectionRequest.
func (c *connector) bindRequest(r *request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != ndrules.Idle || c.id != nil || c.closed {
		return nd.ErrConnectionActive
	}
	c.id, c.handle, c.req = r.id, r.handle, r
	c.a.retarget(r.handle, c)
	c.state, c.hasPeer = ndrules.Requested, true
	c.peerPD, c.peerIRD, c.peerORD = r.pd, r.ird, r.ord
	c.local, c.remote = r.local, r.remote
	return nil
}

// listening ---------------------------------------------------------------

// request is a connection request waiting for GetConnectionRequest.
type request struct {
	id            cID
	handle        uintptr
	pd            []byte
	ird, ord      int
	peer          peerKind
	local, remote netip.AddrPort
	aborted       atomic.Bool
}

func (r *request) onEvent(ev cmEvent) {
	switch ev.typ {
	case evDisconnected, evConnectError, evUnreachable, evRejected, evDeviceRemoval:
		r.aborted.Store(true)
	}
}

// portListener is the rdma_cm listening id of one port; the ND listeners of
// the port's protocols share it.
type portListener struct {
	a      *Adapter
	id     cID
	handle uintptr
	port   uint16

	mu        sync.Mutex
	listeners map[int]*listener
}

type listener struct {
	pl       *portListener
	protocol int
	backlog  int

	mu      sync.Mutex
	closed  bool
	queue   []*request
	waiters []chan *request
}

var _ nd.Listener = (*listener)(nil)

// anyPortTries is how many ports Listen on port 0 tries before it gives up.
const anyPortTries = 16

func (a *Adapter) listen(backlog, protocol int, port uint16) (nd.Listener, error) {
	a.mu.Lock()
	if pl := a.ports[port]; port != 0 && pl != nil {
		a.mu.Unlock()
		pl.mu.Lock()
		defer pl.mu.Unlock()
		if pl.listeners[protocol] != nil {
			return nil, nd.ErrAddressAlreadyExists
		}
		l := &listener{pl: pl, protocol: protocol, backlog: backlog}
		pl.listeners[protocol] = l
		return l, nil
	}
	a.mu.Unlock()
	pl := &portListener{a: a, listeners: map[int]*listener{}}
	pl.handle = a.register(pl)
	var id cID
	fail := func(st nd.Status, err error) (nd.Listener, error) {
		if id != nil {
			destroyID(id)
		}
		a.unregister(pl.handle)
		return nil, withCause("Listen", st, err)
	}
	for try := 1; ; try++ {
		var err error
		if id, err = createID(a.ch, pl.handle); err != nil {
			id = nil
			return fail(nd.ErrInsufficientResources, err)
		}
		if err := bindAddr(id, netip.AddrPortFrom(a.addr, port)); err != nil {
			return fail(errStatus(err, nd.ErrAddressAlreadyExists), err)
		}
		err = listenID(id, 128)
		if err == nil {
			break
		}
		// Port 0 asks for any free port, but rdma_cm picks it from its
		// own port space, blind to the host's TCP sockets; an iWARP
		// device then fails to listen when a TCP socket (one of this
		// host's connections, even in TIME_WAIT) holds the port. Another
		// pick is another port.
		if port != 0 || !errors.Is(err, syscall.EADDRINUSE) || try == anyPortTries {
			return fail(errStatus(err, nd.ErrAddressAlreadyExists), err)
		}
		destroyID(id)
		id = nil
	}
	local, _ := idAddrs(id)
	pl.id, pl.port = id, local.Port()
	l := &listener{pl: pl, protocol: protocol, backlog: backlog}
	pl.listeners[protocol] = l
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return fail(nd.ErrDeviceRemoved, nil)
	}
	a.ports[pl.port] = pl
	a.mu.Unlock()
	return l, nil
}

// onEvent receives the connection requests of the port.
func (pl *portListener) onEvent(ev cmEvent) {
	if ev.typ != evConnectRequest {
		return
	}
	a := pl.a
	proto, kind, data := unwrap(a.dev.iwarp, ev.pd)
	godirect := kind != peerForeign
	pl.mu.Lock()
	l := pl.listeners[proto]
	if proto < 0 {
		for p, x := range pl.listeners {
			if l == nil || p < l.protocol {
				l = x
			}
		}
	}
	pl.mu.Unlock()
	if l == nil {
		cmReject(ev.id, nil)
		destroyID(ev.id)
		return
	}
	app := func(n int) int {
		if a.dev.iwarp && godirect && n > 0 {
			return n - 1
		}
		return n
	}
	r := &request{id: ev.id, pd: append([]byte(nil), data...), ird: app(ev.ird), ord: app(ev.ord), peer: kind}
	r.local, r.remote = idAddrs(ev.id)
	r.handle = a.register(r)
	setHandle(ev.id, r.handle)
	if !l.deliver(r) {
		cmReject(ev.id, nil)
		destroyID(ev.id)
		a.unregister(r.handle)
	}
}

// deliver hands r to a waiting GetConnectionRequest or queues it; false if
// the backlog is full or the listener closed.
func (l *listener) deliver(r *request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if len(l.waiters) > 0 {
		w := l.waiters[0]
		l.waiters = l.waiters[1:]
		w <- r
		return true
	}
	if l.backlog > 0 && len(l.queue) >= l.backlog {
		return false
	}
	l.queue = append(l.queue, r)
	return true
}

// GetConnectionRequest implements nd.Listener.
func (l *listener) GetConnectionRequest(ctx context.Context, conn nd.Connector) error {
	const op = "GetConnectionRequest"
	l.mu.Lock()
	if err := l.pl.a.closedErr(l.closed); err != nil {
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	c, ok := conn.(*connector)
	if !ok || c.a != l.pl.a || c.shut.Load() {
		return ndrules.Arg("GetConnectionRequest", "c", nd.ErrInvalidParameter1, "not an open connector of this adapter")
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return &nd.OpError{Op: op, Status: nd.ErrCanceled, Err: errClosed}
	}
	var r *request
	var ch chan *request
	if len(l.queue) > 0 {
		r = l.queue[0]
		l.queue = l.queue[1:]
	} else {
		ch = make(chan *request, 1)
		l.waiters = append(l.waiters, ch)
	}
	l.mu.Unlock()
	if r == nil {
		select {
		case r = <-ch:
		case <-ctx.Done():
		case <-l.pl.a.done:
		}
		if r == nil {
			l.mu.Lock()
			for i, w := range l.waiters {
				if w == ch {
					l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
					break
				}
			}
			l.mu.Unlock()
			select {
			case r = <-ch:
			default:
			}
			if r == nil || ctx.Err() != nil {
				if r != nil {
					l.requeue(r)
				}
				if ctx.Err() != nil {
					return canceled(op, ctx)
				}
				return &nd.OpError{Op: op, Status: nd.ErrCanceled, Err: errClosed}
			}
		}
	}
	if r == nil {
		return &nd.OpError{Op: op, Status: nd.ErrCanceled, Err: errClosed}
	}
	if err := c.bindRequest(r); err != nil {
		l.requeue(r)
		return err
	}
	return nil
}

func (l *listener) requeue(r *request) {
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.queue = append([]*request{r}, l.queue...)
	}
	l.mu.Unlock()
	if closed {
		cmReject(r.id, nil)
		destroyID(r.id)
		l.pl.a.unregister(r.handle)
	}
}

// Port implements nd.Listener.
func (l *listener) Port() uint16 { return l.pl.port }

// Close implements nd.Listener.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	q, ws := l.queue, l.waiters
	l.queue, l.waiters = nil, nil
	l.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
	a := l.pl.a
	for _, r := range q {
		cmReject(r.id, nil)
		destroyID(r.id)
		a.unregister(r.handle)
	}
	pl := l.pl
	pl.mu.Lock()
	delete(pl.listeners, l.protocol)
	empty := len(pl.listeners) == 0
	pl.mu.Unlock()
	if empty {
		a.mu.Lock()
		if a.ports[pl.port] == pl {
			delete(a.ports, pl.port)
		}
		a.mu.Unlock()
		destroyID(pl.id)
		a.unregister(pl.handle)
	}
	return nil
}

func (pl *portListener) closeAll() {
	pl.mu.Lock()
	ls := make([]*listener, 0, len(pl.listeners))
	for _, l := range pl.listeners {
		ls = append(ls, l)
	}
	pl.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
}
