//go:build windows && (amd64 || arm64)

package ndspi

import (
	"context"
	"encoding/binary"
	"net/netip"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndrules"
)

// connector is an nd.Connector over an INDConnector or an IND2Connector.
// ND v2 splits nd's endpoint in two: CreateEndpoint makes a queue pair of
// the adapter, and the connector connects it (Bind to the adapter's address
// and the local port, then Connect with the endpoint's read limits) or
// accepts with it. Its methods are safe for concurrent use.
type connector struct {
	a   *adapter
	obj com
	g   guard

	closed atomic.Bool
	bound  atomic.Bool // ND v2: Bind was made
	// passive: GetConnectionRequest bound a request to it (ND v2: it is
	// not bound to a local address of its own; Connect goes straight to
	// the provider, which refuses it).
	passive atomic.Bool

	// ep is its endpoint (under a.mu); listening is the listener whose
	// GetConnectionRequest it waits in, if any.
	ep        *endpoint
	listening atomic.Pointer[listener]
}

var (
	_ nd.Connector                   = (*connector)(nil)
	_ nd.SharedReceiveQueueConnector = (*connector)(nil)
)

// CreateConnector implements nd.Adapter: ND's CreateConnector (ND v2: on
// the adapter's overlapped file).
func (a *adapter) CreateConnector() (nd.Connector, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	s, err := newScratch()
	if err != nil {
		return nil, err
	}
	defer s.free()
	var st nd.Status
	if a.v1 {
		st = a.obj.call(ndabi.INDAdapterCreateConnector, s.ptr(0))
	} else {
		st = a.obj.call(ndabi.IND2AdapterCreateConnector, guidArg(&ndabi.IIDIND2Connector), uintptr(a.file), s.ptr(0))
	}
	if st != nd.Success {
		return nil, st
	}
	c := &connector{a: a, obj: com(s.word(0))}
	if !add(a, a.connectors, c) {
		c.obj.release()
		return nil, nd.ErrDeviceRemoved
	}
	return c, nil
}

// connectorOf is the connector nd names, if it is an open one of a.
func (a *adapter) connectorOf(x nd.Connector) (*connector, bool) {
	c, ok := x.(*connector)
	if !ok || c == nil || c.a != a || c.closed.Load() {
		return nil, false
	}
	return c, true
}

func (c *connector) status() nd.Status { return c.a.status(c.closed.Load()) }

// request is an overlapped request of the connector.
func (c *connector) request(op string, again bool) request {
	return request{port: c.a.b.port, g: &c.g, obj: c.obj, v1: c.a.v1, op: op, again: again, closed: c.status}
}

// live reports whether the connector and its adapter are open; the status
// of a call if not.
func (c *connector) live() nd.Status {
	if c.closed.Load() || c.a.closed.Load() {
		return c.status()
	}
	return nd.Success
}

// CreateEndpoint implements nd.Connector. ND v1: INDConnector's
// CreateEndpoint, whose limits the provider checks. ND v2: the adapter's
// CreateQueuePair (its parameter positions mapped to nd's), asking for the
// adapter's whole inline size; the read limits, which ND v2 passes to
// Connect and Accept instead, are checked here against the adapter's.
func (c *connector) CreateEndpoint(inbound, outbound nd.CompletionQueue, limits nd.EndpointLimits) (nd.Endpoint, error) {
	return c.createEndpoint(inbound, outbound, nil, limits)
}

// CreateEndpointWithSRQ implements nd.SharedReceiveQueueConnector: ND v2's
// CreateQueuePairWithSrq. An ND v1 provider has no shared receive queues:
// ErrNotSupported.
func (c *connector) CreateEndpointWithSRQ(inbound, outbound nd.CompletionQueue, srq nd.SharedReceiveQueue, limits nd.EndpointLimits) (nd.Endpoint, error) {
	if c.a.v1 {
		return nil, nd.ErrNotSupported
	}
	if st := c.live(); st != nd.Success {
		return nil, st
	}
	s, ok := c.a.srqOf(srq)
	if !ok {
		return nil, nd.ErrInvalidParameter3
	}
	return c.createEndpoint(inbound, outbound, s, limits)
}

func (c *connector) createEndpoint(inbound, outbound nd.CompletionQueue, srq *srq, limits nd.EndpointLimits) (nd.Endpoint, error) {
	if st := c.live(); st != nd.Success {
		return nil, st
	}
	a := c.a
	in, ok := a.cqOf(inbound)
	if !ok {
		return nil, nd.ErrInvalidParameter1
	}
	out, ok := a.cqOf(outbound)
	if !ok {
		return nil, nd.ErrInvalidParameter2
	}
	if srq != nil {
		limits.InboundEntries, limits.InboundSGE = 0, 0
	}
	s, err := newScratch()
	if err != nil {
		return nil, err
	}
	defer s.free()
	if a.v1 {
		u := func(n int) uintptr { return uintptr(n) } // a negative limit becomes one no adapter serves
		st := c.obj.call(ndabi.INDConnectorCreateEndpoint, uintptr(in.obj), uintptr(out.obj),
			u(limits.InboundEntries), u(limits.OutboundEntries), u(limits.InboundSGE), u(limits.OutboundSGE),
			u(limits.InboundReadLimit), u(limits.OutboundReadLimit), s.ptr(8), s.ptr(0))
		if st != nd.Success {
			return nil, st
		}
		e := &endpoint{a: a, c: c, in: in, out: out, limits: limits, inline: clampInt(s.word(8)), obj: com(s.word(0))}
		if err := e.setup(); err != nil {
			e.obj.release()
			return nil, err
		}
		return c.adopt(e)
	}
	a.mu.Lock()
	busy := c.ep != nil
	a.mu.Unlock()
	if busy {
		return nil, nd.ErrNotSupported // one endpoint per connector, as ND v1's
	}
	u := func(n int) uintptr {
		if n < 0 {
			return 1<<32 - 1
		}
		return uintptr(uint32(min(n, 1<<32-1)))
	}
	// The slots are sized once the provider accepted the limits; the
	// table id (the queue pair's context) is needed first.
	e := &endpoint{a: a, c: c, in: in, out: out, srq: srq, limits: limits, inline: a.info.MaxInlineData}
	id, ok := a.slots.add(&e.qs)
	if !ok {
		return nil, nd.ErrInsufficientResources
	}
	var st nd.Status
	if srq == nil {
		st = createQPParam(a.obj.call(ndabi.IND2AdapterCreateQueuePair, guidArg(&ndabi.IIDIND2QueuePair),
			uintptr(in.obj), uintptr(out.obj), uintptr(id),
			u(limits.InboundEntries), u(limits.OutboundEntries), u(limits.InboundSGE), u(limits.OutboundSGE),
			uintptr(e.inline), s.ptr(0)))
	} else {
		st = createQPWithSRQParam(a.obj.call(ndabi.IND2AdapterCreateQueuePairWithSrq, guidArg(&ndabi.IIDIND2QueuePair),
			uintptr(in.obj), uintptr(out.obj), uintptr(srq.obj), uintptr(id),
			u(limits.OutboundEntries), u(limits.OutboundSGE), uintptr(e.inline), s.ptr(0)))
	}
	if st == nd.Success {
		switch {
		case limits.InboundReadLimit < 0 || limits.InboundReadLimit > a.info.MaxInboundReadLimit:
			st = nd.ErrInvalidParameter7
		case limits.OutboundReadLimit < 0 || limits.OutboundReadLimit > a.info.MaxOutboundReadLimit:
			st = nd.ErrInvalidParameter8
		}
		if st != nd.Success {
			com(s.word(0)).release()
		}
	}
	if st != nd.Success {
		a.slots.remove(id)
		return nil, st
	}
	e.obj, e.id = com(s.word(0)), id
	if err := e.setup(); err != nil {
		e.obj.release()
		a.slots.remove(id)
		return nil, err
	}
	return c.adopt(e)
}

// adopt records e as the connector's endpoint, unless something it needs
// closed meanwhile.
func (c *connector) adopt(e *endpoint) (nd.Endpoint, error) {
	if !e.attach() {
		e.closed.Store(true)
		e.obj.release()
		e.a.slots.remove(e.id)
		e.freeMem()
		return nil, c.a.status(true)
	}
	return e, nil
}

// endpointOf is the endpoint nd names, if it is this connector's.
func (c *connector) endpointOf(x nd.Endpoint) (*endpoint, bool) {
	e, ok := x.(*endpoint)
	if !ok || e == nil || e.c != c || e.closed.Load() {
		return nil, false
	}
	return e, true
}

// htons is a port in network byte order.
func htons(p uint16) uint16 { return p>>8 | p<<8 }

// pdArgs is the C memory of a call that passes private data: a scratch
// block, the private data's address pd (in the scratch at the offset asked
// when it fits there), and the memory of its own it took otherwise.
type pdArgs struct {
	s, own cmem
	pd     uintptr
}

// newPDArgs takes a scratch block and places data at byte off of it
// (privateData); free releases both.
func newPDArgs(off int, data []byte) (pdArgs, error) {
	s, err := newScratch()
	if err != nil {
		return pdArgs{}, err
	}
	pd, own, err := privateData(s, off, data)
	if err != nil {
		s.free()
		return pdArgs{}, err
	}
	return pdArgs{s: s, own: own, pd: pd}, nil
}

// free releases the private data's own memory, then the scratch block.
func (a pdArgs) free() {
	a.own.free()
	a.s.free()
}

// privateData copies data into memory the provider reads, at byte off of
// s if it fits there, else into memory of its own (returned to free).
func privateData(s cmem, off int, data []byte) (uintptr, cmem, error) {
	if len(data) == 0 {
		return 0, cmem{}, nil
	}
	if off+len(data) <= s.n {
		copy(s.bytes()[off:], data)
		return s.ptr(off), cmem{}, nil
	}
	m, err := allocC(len(data))
	if err != nil {
		return 0, cmem{}, err
	}
	copy(m.bytes(), data)
	return m.addr, m, nil
}

// Connect implements nd.Connector. ND v1: Connect with the protocol and
// local port. ND v2: Bind (the adapter's address, localPort; once per
// connector) and Connect with the endpoint's read limits; ND v2 has no
// protocol number, so protocol is not carried (any listener of the port
// takes the request).
func (c *connector) Connect(ctx context.Context, ep nd.Endpoint, remote netip.AddrPort, protocol int, localPort uint16, privateData_ []byte) error {
	if st := c.live(); st != nd.Success {
		return st
	}
	e, ok := c.endpointOf(ep)
	if !ok {
		return nd.ErrInvalidParameter1
	}
	args, err := newPDArgs(64, privateData_)
	if err != nil {
		return err
	}
	defer args.free()
	s, pd := args.s, args.pd
	sa, saLen := sockaddrArg(s, 0, remote)
	rq := c.request("Connect", false)
	if c.a.v1 {
		return rq.do(ctx, func(ov uintptr) nd.Status {
			return c.obj.call(ndabi.INDConnectorConnect, uintptr(e.obj), sa, saLen, uintptr(int32(protocol)), uintptr(htons(localPort)), pd, uintptr(len(privateData_)), ov)
		})
	}
	if !c.bound.Load() && !c.passive.Load() {
		la, laLen := sockaddrArg(s, 32, netip.AddrPortFrom(c.a.addr, localPort))
		if st := c.obj.call(ndabi.IND2ConnectorBind, la, laLen); st != nd.Success {
			return st
		}
		c.bound.Store(true)
	}
	return rq.do(ctx, func(ov uintptr) nd.Status {
		return c.obj.call(ndabi.IND2ConnectorConnect, uintptr(e.obj), sa, saLen,
			uintptr(e.limits.InboundReadLimit), uintptr(e.limits.OutboundReadLimit), pd, uintptr(len(privateData_)), ov)
	})
}

// CompleteConnect implements nd.Connector: ND's CompleteConnect.
func (c *connector) CompleteConnect(ctx context.Context) error {
	if st := c.live(); st != nd.Success {
		return st
	}
	rq := c.request("CompleteConnect", false)
	slot := ndabi.INDConnectorCompleteConnect
	if !c.a.v1 {
		slot = ndabi.IND2ConnectorCompleteConnect
	}
	err := rq.do(ctx, func(ov uintptr) nd.Status { return c.obj.call(slot, ov) })
	if err == nil {
		c.connected()
	}
	return err
}

// Accept implements nd.Connector: ND v1's Accept, or ND v2's with the
// endpoint's queue pair and read limits.
func (c *connector) Accept(ctx context.Context, ep nd.Endpoint, privateData_ []byte) error {
	if st := c.live(); st != nd.Success {
		return st
	}
	e, ok := c.endpointOf(ep)
	if !ok {
		return nd.ErrInvalidParameter1
	}
	args, err := newPDArgs(0, privateData_)
	if err != nil {
		return err
	}
	defer args.free()
	pd := args.pd
	rq := c.request("Accept", false)
	err = rq.do(ctx, func(ov uintptr) nd.Status {
		if c.a.v1 {
			return c.obj.call(ndabi.INDConnectorAccept, uintptr(e.obj), pd, uintptr(len(privateData_)), ov)
		}
		return c.obj.call(ndabi.IND2ConnectorAccept, uintptr(e.obj),
			uintptr(e.limits.InboundReadLimit), uintptr(e.limits.OutboundReadLimit), pd, uintptr(len(privateData_)), ov)
	})
	if err == nil {
		e.connected.Store(true)
	}
	return err
}

// connected marks the connector's endpoint connected.
func (c *connector) connected() {
	c.a.mu.Lock()
	e := c.ep
	c.a.mu.Unlock()
	if e != nil {
		e.connected.Store(true)
	}
}

// Reject implements nd.Connector: ND's Reject.
func (c *connector) Reject(privateData_ []byte) error {
	if st := c.live(); st != nd.Success {
		return st
	}
	if !c.g.enter() {
		return c.status()
	}
	defer c.g.exit()
	args, err := newPDArgs(0, privateData_)
	if err != nil {
		return err
	}
	defer args.free()
	slot := ndabi.INDConnectorReject
	if !c.a.v1 {
		slot = ndabi.IND2ConnectorReject
	}
	return c.obj.call(slot, args.pd, uintptr(len(privateData_))).Err()
}

// GetConnectionData implements nd.Connector: ND v1's GetConnectionData, or
// ND v2's GetReadLimits and GetPrivateData, with ND's size protocol (what
// fits is copied; ErrBufferOverflow with the full length).
func (c *connector) GetConnectionData(privateData_ []byte) (nd.ConnectionData, error) {
	if st := c.live(); st != nd.Success {
		return nd.ConnectionData{}, st
	}
	if !c.g.enter() {
		return nd.ConnectionData{}, c.status()
	}
	defer c.g.exit()
	s, err := newScratch()
	if err != nil {
		return nd.ConnectionData{}, err
	}
	defer s.free()
	buf, own := s.ptr(64), cmem{}
	if len(privateData_) > s.n-64 {
		if own, err = allocC(len(privateData_)); err != nil {
			return nd.ConnectionData{}, err
		}
		defer own.free()
		buf = own.addr
	}
	if len(privateData_) == 0 {
		buf = 0
	}
	var cd nd.ConnectionData
	var st nd.Status
	var n int
	if c.a.v1 {
		s.setWord(16, uint64(len(privateData_)))
		st = c.obj.call(ndabi.INDConnectorGetConnectionData, s.ptr(0), s.ptr(8), buf, s.ptr(16))
		if st != nd.Success && st != nd.ErrBufferOverflow {
			return nd.ConnectionData{}, st
		}
		cd = nd.ConnectionData{InboundReadLimit: clampInt(s.word(0)), OutboundReadLimit: clampInt(s.word(8)), PrivateDataLength: clampInt(s.word(16))}
	} else {
		if st = c.obj.call(ndabi.IND2ConnectorGetReadLimits, s.ptr(0), s.ptr(4)); st != nd.Success {
			return nd.ConnectionData{}, st
		}
		s.setU32(16, uint32(len(privateData_)))
		st = c.obj.call(ndabi.IND2ConnectorGetPrivateData, buf, s.ptr(16))
		if st != nd.Success && st != nd.ErrBufferOverflow {
			return nd.ConnectionData{}, st
		}
		cd = nd.ConnectionData{InboundReadLimit: int(s.u32(0)), OutboundReadLimit: int(s.u32(4)), PrivateDataLength: int(s.u32(16))}
	}
	n = min(len(privateData_), cd.PrivateDataLength)
	if n > 0 {
		copy(privateData_, unsafeBytes(buf, n))
	}
	return cd, st.Err()
}

// address asks the provider for a sockaddr with slot (GetLocalAddress or
// GetPeerAddress), with ND's size protocol (SIZE_T in v1, ULONG in v2).
func (c *connector) address(slot1, slot2 int) (netip.AddrPort, error) {
	if st := c.live(); st != nd.Success {
		return netip.AddrPort{}, st
	}
	if !c.g.enter() {
		return netip.AddrPort{}, c.status()
	}
	defer c.g.exit()
	s, err := newScratch()
	if err != nil {
		return netip.AddrPort{}, err
	}
	defer s.free()
	var st nd.Status
	var n int
	if c.a.v1 {
		s.setWord(0, 128)
		st = c.obj.call(slot1, s.ptr(64), s.ptr(0))
		n = clampInt(s.word(0))
	} else {
		s.setU32(0, 128)
		st = c.obj.call(slot2, s.ptr(64), s.ptr(0))
		n = int(s.u32(0))
	}
	if st != nd.Success {
		return netip.AddrPort{}, st
	}
	ap, ok := ndabi.ParseSockaddr(s.bytes()[64 : 64+min(n, 128)])
	if !ok {
		return netip.AddrPort{}, &nd.OpError{Op: "a sockaddr the provider wrote", Status: nd.ErrUnsuccessful}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// GetLocalAddress implements nd.Connector.
func (c *connector) GetLocalAddress() (netip.AddrPort, error) {
	return c.address(ndabi.INDConnectorGetLocalAddress, ndabi.IND2ConnectorGetLocalAddress)
}

// GetPeerAddress implements nd.Connector.
func (c *connector) GetPeerAddress() (netip.AddrPort, error) {
	return c.address(ndabi.INDConnectorGetPeerAddress, ndabi.IND2ConnectorGetPeerAddress)
}

// NotifyDisconnect implements nd.Connector: ND's NotifyDisconnect.
func (c *connector) NotifyDisconnect(ctx context.Context) error {
	if st := c.live(); st != nd.Success {
		return st
	}
	rq := c.request("NotifyDisconnect", true)
	slot := ndabi.INDConnectorNotifyDisconnect
	if !c.a.v1 {
		slot = ndabi.IND2ConnectorNotifyDisconnect
	}
	return rq.do(ctx, func(ov uintptr) nd.Status { return c.obj.call(slot, ov) })
}

// Disconnect implements nd.Connector: ND's Disconnect. Canceled by
// anything but ctx (the connector's Close, another call's
// CancelOverlappedRequests), it returns nil: the connection ends all the
// same.
func (c *connector) Disconnect(ctx context.Context) error {
	if st := c.live(); st != nd.Success {
		return st
	}
	rq := c.request("Disconnect", false)
	rq.endsAnyway = true
	slot := ndabi.INDConnectorDisconnect
	if !c.a.v1 {
		slot = ndabi.IND2ConnectorDisconnect
	}
	return rq.do(ctx, func(ov uintptr) nd.Status { return c.obj.call(slot, ov) })
}

// Close implements nd.Connector: the connector's requests are canceled
// (blocked calls return ErrCanceled), a GetConnectionRequest waiting for
// it is canceled, its endpoint closes, and it is released (which ends a
// connection still up, and rejects a request bound to it).
func (c *connector) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	a := c.a
	if l := c.listening.Load(); l != nil {
		l.g.cancel(l.obj)
	}
	c.g.close(c.obj)
	a.mu.Lock()
	e := c.ep
	a.mu.Unlock()
	if e != nil {
		e.Close()
	}
	c.obj.release()
	remove(a, a.connectors, c)
	return nil
}

// listener is an nd.Listener: ND v1's INDListen from the adapter's Listen,
// or ND v2's IND2Listener after Bind and Listen. Its methods are safe for
// concurrent use.
type listener struct {
	a      *adapter
	obj    com
	g      guard
	port   uint16
	closed atomic.Bool
}

var _ nd.Listener = (*listener)(nil)

// Listen implements nd.Adapter. ND v1: the adapter's Listen(backlog,
// protocol, port). ND v2: CreateListener, Bind (the adapter's address and
// port; a port in use is ErrAddressAlreadyExists, as nd's Listen says) and
// Listen(backlog). ND v2 has no protocol number: protocol is checked
// (0..255) and not carried, so two listeners of one port and different
// protocols collide there.
func (a *adapter) Listen(backlog, protocol int, port uint16) (nd.Listener, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	if err := ndrules.Listen(backlog, protocol); err != nil {
		return nil, err
	}
	s, err := newScratch()
	if err != nil {
		return nil, err
	}
	defer s.free()
	l := &listener{a: a}
	if a.v1 {
		if st := a.obj.call(ndabi.INDAdapterListen, uintptr(backlog), uintptr(int32(protocol)), uintptr(htons(port)), s.ptr(8), s.ptr(0)); st != nd.Success {
			return nil, st
		}
		l.obj = com(s.word(0))
		l.port = htons(binary.LittleEndian.Uint16(s.bytes()[8:]))
	} else {
		if st := a.obj.call(ndabi.IND2AdapterCreateListener, guidArg(&ndabi.IIDIND2Listener), uintptr(a.file), s.ptr(0)); st != nd.Success {
			return nil, st
		}
		l.obj = com(s.word(0))
		sa, saLen := sockaddrArg(s, 64, netip.AddrPortFrom(a.addr, port))
		st := listenBindStatus(l.obj.call(ndabi.IND2ListenerBind, sa, saLen))
		if st == nd.Success {
			st = l.obj.call(ndabi.IND2ListenerListen, uintptr(uint32(backlog)))
		}
		if st == nd.Success {
			s.setU32(8, 128)
			st = l.obj.call(ndabi.IND2ListenerGetLocalAddress, s.ptr(128), s.ptr(8))
		}
		if st != nd.Success {
			l.obj.release()
			return nil, st
		}
		ap, _ := ndabi.ParseSockaddr(s.bytes()[128 : 128+min(int(s.u32(8)), 128)])
		l.port = ap.Port()
	}
	if !add(a, a.listeners, l) {
		l.obj.release()
		return nil, nd.ErrDeviceRemoved
	}
	return l, nil
}

// Port implements nd.Listener.
func (l *listener) Port() uint16 { return l.port }

func (l *listener) status() nd.Status { return l.a.status(l.closed.Load()) }

// GetConnectionRequest implements nd.Listener: ND's GetConnectionRequest
// with c, which a closed or foreign connector is not
// (ErrInvalidParameter1). Closing c while it waits cancels it.
func (l *listener) GetConnectionRequest(ctx context.Context, c nd.Connector) error {
	if l.closed.Load() || l.a.closed.Load() {
		return l.status()
	}
	cc, ok := l.a.connectorOf(c)
	if !ok {
		return nd.ErrInvalidParameter1
	}
	a := l.a
	cc.listening.Store(l)
	defer cc.listening.CompareAndSwap(l, nil)
	rq := request{port: a.b.port, g: &l.g, obj: l.obj, v1: a.v1, op: "GetConnectionRequest", again: true,
		closed: l.status, abandoned: cc.closed.Load}
	slot := ndabi.INDListenGetConnectionRequest
	if !a.v1 {
		slot = ndabi.IND2ListenerGetConnectionRequest
	}
	err := rq.do(ctx, func(ov uintptr) nd.Status { return l.obj.call(slot, uintptr(cc.obj), ov) })
	if err == nil {
		cc.passive.Store(true)
	}
	return err
}

// Close implements nd.Listener: waiting GetConnectionRequest calls return
// ErrCanceled, and the listener is released (the provider refuses the
// requests it held, and later ones).
func (l *listener) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.g.close(l.obj)
	l.obj.release()
	remove(l.a, l.a.listeners, l)
	return nil
}
