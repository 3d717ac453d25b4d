package ndexport

import (
	"context"
	"net/netip"
	"sync"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/ndabi"
)

// Connector2 is ND v2's IND2Connector. It owns an nd connector that
// receives connection requests (GetConnectionRequest); a connection it
// makes or accepts is carried by its queue pair's connector (Connect uses
// it directly, Accept hands the request over to it), and its calls go to
// whichever connector carries its connection now.
type Connector2 struct {
	Base
	ad   *Adapter2
	file File
	own  *engine.Connector

	mu    sync.Mutex
	cur   *engine.Connector
	curQP *QueuePair2 // the queue pair whose connector cur is, held (holdConn)
	qp    *QueuePair2
	local netip.AddrPort // Bind's
	bound bool
}

func (cn *Connector2) released() {
	cn.mu.Lock()
	cur := cn.cur
	cn.mu.Unlock()
	if cur != cn.own {
		go cur.Disconnect(context.Background()) // the queue pair's requests flush
	}
}

func (cn *Connector2) finalize() {
	cn.own.Close()
	cn.mu.Lock()
	held := cn.curQP
	cn.curQP = nil
	cn.mu.Unlock()
	if held != nil {
		held.releaseConn()
	}
	cn.ad.unhold()
}

// carry makes qp's connector the one that carries cn's connection (cn.mu
// held): cn holds it, so that its calls keep answering for the connection
// after the consumer released qp; it returns the queue pair cn held
// before, for the caller to release (releaseConn) once cn.mu is unlocked.
func (cn *Connector2) carry(qp *QueuePair2) (old *QueuePair2) {
	old = cn.curQP
	if old == qp {
		return nil
	}
	qp.holdConn()
	cn.cur, cn.curQP = qp.conn, qp
	return old
}

// current is the connector that carries cn's connection now.
func (cn *Connector2) current() *engine.Connector {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.cur
}

// ownAddress checks an address given to Bind: the adapter's, or the
// unspecified address of its family (ND_INVALID_ADDRESS otherwise).
func (ad *Adapter2) ownAddress(ap netip.AddrPort) (netip.AddrPort, nd.Status) {
	a := ap.Addr().Unmap()
	if a != ad.addr && !a.IsUnspecified() {
		return netip.AddrPort{}, nd.ErrInvalidAddress
	}
	return netip.AddrPortFrom(ad.addr, ap.Port()), nd.Success
}

// Bind is IND2Connector::Bind: the local address of the connection it will
// make (the adapter's, or unspecified; port 0: any). A connector already
// bound, connecting or connected is STATUS_ADDRESS_ALREADY_ASSOCIATED. The
// port is what Connect asks for first; when another connection holds it
// (ND v2 consumers such as MS-MPI bind every connector to their listener's
// port), Connect takes another.
func (cn *Connector2) Bind(addr unsafe.Pointer, n uintptr) nd.Status {
	ap, st := parseSockaddr(addr, n)
	if st != nd.Success {
		return st
	}
	if ap, st = cn.ad.ownAddress(ap); st != nd.Success {
		return st
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.bound || cn.qp != nil {
		return nd.ErrAddressAlreadyAssociated
	}
	cn.local, cn.bound = ap, true
	return nd.Success
}

// readLimits clamps the read limits a consumer passes to Connect and Accept
// to the adapter's, as ND asks (silently).
func (ad *Adapter2) readLimits(ird, ord uint32) (int, int) {
	return int(min(uint64(ird), uint64(ad.info.MaxInboundReadLimit))), int(min(uint64(ord), uint64(ad.info.MaxOutboundReadLimit)))
}

// take makes qp the queue pair of cn's connection, carried by qp's
// connector; ND_CONNECTION_ACTIVE when cn already has one.
func (cn *Connector2) take(qp *QueuePair2) nd.Status {
	cn.mu.Lock()
	if cn.qp != nil {
		cn.mu.Unlock()
		return nd.ErrConnectionActive
	}
	cn.qp = qp
	old := cn.carry(qp)
	cn.mu.Unlock()
	if old != nil {
		old.releaseConn()
	}
	return nd.Success
}

// drop undoes take after a failed Connect, so that the consumer may try
// again with the same connector; the queue pair's connector stays the
// current one, which holds what the peer sent with a refusal.
func (cn *Connector2) drop(qp *QueuePair2) {
	cn.mu.Lock()
	if cn.qp == qp {
		cn.qp = nil
	}
	cn.mu.Unlock()
}

// Connect is IND2Connector::Connect: qp (nil when the consumer's pointer is
// not one of this package's queue pairs: ND_INVALID_PARAMETER_1) connects
// to dest, offering read limits ird and ord and the private data.
func (cn *Connector2) Connect(qp *QueuePair2, dest unsafe.Pointer, n uintptr, ird, ord uint32, pd unsafe.Pointer, pdLen uintptr, ov *ndabi.Overlapped) nd.Status {
	if qp == nil || qp.ad != cn.ad {
		return nd.ErrInvalidParameter1
	}
	remote, st := parseSockaddr(dest, n)
	if st != nd.Success {
		return st
	}
	data, st := copyIn(pd, pdLen, cn.ad.info.MaxCallerData)
	if st != nd.Success {
		return st
	}
	if ov == nil {
		return nd.ErrInvalidParameter8
	}
	if st := cn.take(qp); st != nd.Success {
		return st
	}
	if err := qp.ep.SetReadLimits(cn.ad.readLimits(ird, ord)); err != nil {
		cn.drop(qp)
		return status(err)
	}
	cn.mu.Lock()
	port := cn.local.Port()
	cn.mu.Unlock()
	st = cn.start(cn.file, ov, nd.ErrInvalidParameter8, func(ctx context.Context) nd.Status {
		err := qp.conn.Connect(ctx, qp.ep, remote, V2Protocol, port, data)
		if port != 0 && status(err) == nd.ErrAddressAlreadyAssociated {
			err = qp.conn.Connect(ctx, qp.ep, remote, V2Protocol, 0, data)
		}
		if err != nil {
			cn.drop(qp)
		}
		return status(err)
	})
	if st != nd.Pending {
		cn.drop(qp)
	}
	return st
}

// CompleteConnect is IND2Connector::CompleteConnect.
func (cn *Connector2) CompleteConnect(ov *ndabi.Overlapped) nd.Status {
	return cn.overlapped(ov, func(ctx context.Context, c *engine.Connector) error { return c.CompleteConnect(ctx) })
}

// overlapped starts a request that runs call on the connector carrying the
// connection; a nil ov is ND_INVALID_PARAMETER_1.
func (cn *Connector2) overlapped(ov *ndabi.Overlapped, call func(ctx context.Context, c *engine.Connector) error) nd.Status {
	if ov == nil {
		return nd.ErrInvalidParameter1
	}
	c := cn.current()
	return cn.start(cn.file, ov, nd.ErrInvalidParameter1, func(ctx context.Context) nd.Status { return status(call(ctx, c)) })
}

// Accept is IND2Connector::Accept: the request GetConnectionRequest bound
// to cn is accepted with qp, which offers read limits ird and ord and the
// private data. The request moves to qp's connector first: a request the
// peer abandoned is ND_CONNECTION_ABORTED, none ND_CONNECTION_INVALID, a
// queue pair already connecting or connected ND_CONNECTION_ACTIVE.
func (cn *Connector2) Accept(qp *QueuePair2, ird, ord uint32, pd unsafe.Pointer, pdLen uintptr, ov *ndabi.Overlapped) nd.Status {
	if qp == nil || qp.ad != cn.ad {
		return nd.ErrInvalidParameter1
	}
	data, st := copyIn(pd, pdLen, cn.ad.info.MaxCalleeData)
	if st != nd.Success {
		return st
	}
	if ov == nil {
		return nd.ErrInvalidParameter6
	}
	if err := qp.ep.SetReadLimits(cn.ad.readLimits(ird, ord)); err != nil {
		return status(err)
	}
	cn.mu.Lock()
	if cn.qp != nil {
		cn.mu.Unlock()
		return nd.ErrConnectionActive
	}
	if err := cn.own.HandOver(qp.conn); err != nil {
		cn.mu.Unlock()
		return status(err)
	}
	cn.qp = qp
	old := cn.carry(qp)
	cn.mu.Unlock()
	if old != nil {
		old.releaseConn()
	}
	return cn.start(cn.file, ov, nd.ErrInvalidParameter6, func(ctx context.Context) nd.Status {
		return status(qp.conn.Accept(ctx, qp.ep, data))
	})
}

// Reject is IND2Connector::Reject.
func (cn *Connector2) Reject(pd unsafe.Pointer, pdLen uintptr) nd.Status {
	data, st := copyIn(pd, pdLen, cn.ad.info.MaxCalleeData)
	if st != nd.Success {
		return st
	}
	return status(cn.current().Reject(data))
}

// GetReadLimits is IND2Connector::GetReadLimits: the peer's read limits
// from this side's point of view (each pointer optional).
func (cn *Connector2) GetReadLimits(ird, ord *uint32) nd.Status {
	return connectionData[uint32](cn.current(), ird, ord, nil, nil)
}

// GetPrivateData is IND2Connector::GetPrivateData, with ND's size
// protocol.
func (cn *Connector2) GetPrivateData(pd unsafe.Pointer, n *uint32) nd.Status {
	if n == nil {
		return nd.ErrInvalidParameter2
	}
	return connectionData[uint32](cn.current(), nil, nil, pd, n)
}

// GetLocalAddress is IND2Connector::GetLocalAddress.
func (cn *Connector2) GetLocalAddress(addr unsafe.Pointer, n *uint32) nd.Status {
	ap, err := cn.current().GetLocalAddress()
	if err != nil {
		return status(err)
	}
	return putSockaddr(ap, addr, n)
}

// GetPeerAddress is IND2Connector::GetPeerAddress.
func (cn *Connector2) GetPeerAddress(addr unsafe.Pointer, n *uint32) nd.Status {
	ap, err := cn.current().GetPeerAddress()
	if err != nil {
		return status(err)
	}
	return putSockaddr(ap, addr, n)
}

// NotifyDisconnect is IND2Connector::NotifyDisconnect.
func (cn *Connector2) NotifyDisconnect(ov *ndabi.Overlapped) nd.Status {
	return cn.overlapped(ov, func(ctx context.Context, c *engine.Connector) error { return c.NotifyDisconnect(ctx) })
}

// Disconnect is IND2Connector::Disconnect.
func (cn *Connector2) Disconnect(ov *ndabi.Overlapped) nd.Status {
	return cn.overlapped(ov, func(ctx context.Context, c *engine.Connector) error { return c.Disconnect(ctx) })
}

// Listener2 is ND v2's IND2Listener. Bind takes the port (an nd listener
// with no backlog limit); Listen sets the backlog and lets
// GetConnectionRequest hand out the requests, including those that came
// in between.
type Listener2 struct {
	Base
	ad   *Adapter2
	file File

	mu        sync.Mutex
	l         nd.Listener
	addr      netip.Addr
	listening bool
}

func (ls *Listener2) released() {}
func (ls *Listener2) finalize() {
	ls.mu.Lock()
	l := ls.l
	ls.mu.Unlock()
	if l != nil {
		l.Close()
	}
	ls.ad.unhold()
}

// Bind is IND2Listener::Bind: the adapter's address (or the unspecified
// one) and a port (0: one is assigned). A port another listener of the
// adapter holds is STATUS_ADDRESS_ALREADY_ASSOCIATED, a second Bind
// ND_INVALID_DEVICE_STATE.
func (ls *Listener2) Bind(addr unsafe.Pointer, n uintptr) nd.Status {
	ap, st := parseSockaddr(addr, n)
	if st != nd.Success {
		return st
	}
	if ap, st = ls.ad.ownAddress(ap); st != nd.Success {
		return st
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.l != nil {
		return nd.ErrInvalidDeviceState
	}
	l, err := ls.ad.a.Listen(0, V2Protocol, ap.Port())
	if err != nil {
		if st := status(err); st != nd.ErrAddressAlreadyExists {
			return st
		}
		return nd.ErrAddressAlreadyAssociated
	}
	ls.l, ls.addr = l, ap.Addr()
	return nd.Success
}

// Listen is IND2Listener::Listen: requests beyond backlog that wait for
// GetConnectionRequest are refused from now on (0: no bound; beyond 2^31,
// none either).
func (ls *Listener2) Listen(backlog uint32) nd.Status {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.l == nil {
		return nd.ErrInvalidDeviceState
	}
	if el, ok := ls.l.(*engine.Listener); ok && backlog <= 1<<31 {
		el.SetBacklog(int(backlog))
	}
	ls.listening = true
	return nd.Success
}

// listener returns the nd listener once Listen was called.
func (ls *Listener2) listener() (nd.Listener, netip.Addr, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.l, ls.addr, ls.listening
}

// GetLocalAddress is IND2Listener::GetLocalAddress (ND_INVALID_DEVICE_STATE
// before Listen).
func (ls *Listener2) GetLocalAddress(addr unsafe.Pointer, n *uint32) nd.Status {
	l, a, ok := ls.listener()
	if !ok {
		return nd.ErrInvalidDeviceState
	}
	return putSockaddr(netip.AddrPortFrom(a, l.Port()), addr, n)
}

// GetConnectionRequest is IND2Listener::GetConnectionRequest: the next
// request is bound to c (nil when the consumer's pointer is not one of
// this package's connectors: ND_INVALID_PARAMETER_1).
func (ls *Listener2) GetConnectionRequest(c *Connector2, ov *ndabi.Overlapped) nd.Status {
	l, _, ok := ls.listener()
	switch {
	case !ok:
		return nd.ErrInvalidDeviceState
	case c == nil || c.ad != ls.ad:
		return nd.ErrInvalidParameter1
	case ov == nil:
		return nd.ErrInvalidParameter2
	}
	return ls.startInOrder(ls.file, ov, nd.ErrInvalidParameter2, queueConnectionRequest(l, c.own))
}
