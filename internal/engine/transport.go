// Package engine is the software RDMA engine that every software transport of
// godirect shares. It implements the nd interfaces: limits, scatter/gather
// and registration checks, queues and their ordering, fences, silent
// success, solicited events, memory windows and remote access checks, error
// -> termination -> ErrCanceled flush, completion queue overrun, read-limit
// negotiation and the connection state machine. A transport only moves
// connection requests, replies and data between two engines; it plugs in
// through the Transport and Link interfaces and reaches back through the
// exported methods of Endpoint and Listener.
package engine

import (
	"context"
	"net/netip"

	"github.com/godirect/nd"
)

// The calls a transport makes into the engine, all safe for concurrent use
// and made without the transport's locks that the engine could wait for:
//
//   - a listener's Listener.Deliver hands it a connection request;
//   - LinkEvents (returned by Deliver, or given to Dial) report what the
//     peer did during setup and the end of the connection;
//   - for inbound traffic on an attached link: Endpoint.TakeReceive,
//     ReceiveNow and CompleteReceive (Sends), Endpoint.Access or
//     AccessFault (the peer's RDMA Read and Write of a window),
//     Endpoint.InvalidateWindow (SendAndInvalidate), Endpoint.Limits;
//   - for outbound requests Transmit left in progress:
//     Endpoint.CompleteOutbound, exactly once per request;
//   - Endpoint.WaitTransmit, to know that no Transmit is under way;
//   - Endpoint.Terminate when inbound traffic breaks the protocol or the
//     connection fails.
//
// The engine calls the transport through Transport, Link and the optional
// Progress, InboundCloser, CloseWaiter and WindowTable below.

// Transport is what a software transport provides to an Adapter.
type Transport interface {
	// Listen reserves (protocol, port) on addr for l; port 0 asks for one
	// to be assigned. Incoming requests are handed to l.Deliver. It returns
	// the port listened on, or ErrAddressAlreadyExists.
	Listen(l *Listener, addr netip.Addr, protocol int, port uint16) (uint16, error)
	// Unlisten releases what Listen reserved. Later requests are refused.
	Unlisten(l *Listener)
	// Dial carries a connection request to the listener at d.Remote and
	// returns the active end of the new link. The passive side's answer
	// arrives through events (Accepted, Rejected, Closed). Dial returns
	// ErrConnectionRefused when nobody listens there, ErrBadNetworkName when
	// no adapter serves the address, ErrAddressAlreadyAssociated when
	// d.LocalPort is taken; it may block on the network until ctx ends.
	Dial(ctx context.Context, d *DialRequest, events LinkEvents) (Link, error)
}

// DialRequest is a connection request as the active side makes it, and as
// the passive side receives it (ConnRequest).
type DialRequest struct {
	Local       netip.Addr     // the active adapter's address
	LocalPort   uint16         // 0: the transport picks one
	Remote      netip.AddrPort // the listener
	Protocol    int
	IRD, ORD    int // the active endpoint's inbound and outbound read limits
	PrivateData []byte
}

// ConnRequest is a connection request as it reaches a listener.
type ConnRequest struct {
	Local, Remote netip.AddrPort // from the passive side's point of view
	Protocol      int
	IRD, ORD      int // the active side's inbound and outbound read limits
	PrivateData   []byte
}

// Link is one end of a connection, provided by the transport. The engine
// calls it without holding its own locks, and never concurrently for the
// same Link except Transmit (from one goroutine at a time) against Close.
type Link interface {
	// LocalAddr and RemoteAddr are the connection's addresses as seen from
	// this end.
	LocalAddr() netip.AddrPort
	RemoteAddr() netip.AddrPort
	// Accept (passive) answers the request with the passive endpoint's
	// negotiated read limits and private data.
	Accept(ird, ord int, privateData []byte) error
	// Reject refuses the connection (passive before Accept, active after
	// Accepted).
	Reject(privateData []byte) error
	// Ready (active) completes the connection: the peer's Accept returns.
	Ready() error
	// Attach connects the link to the endpoint whose traffic it carries;
	// inbound data goes to ep's exported methods from then on.
	Attach(ep *Endpoint)
	// Transmit moves one outbound work request. It must not block on the
	// peer. It returns done=true with the final status when the request is
	// complete, or done=false when the transport will call
	// Endpoint.CompleteOutbound later.
	Transmit(wr *WorkRequest) (done bool, status nd.Status)
	// Close ends the connection: Success is a graceful disconnect, another
	// status an abortive termination for that reason. The peer's events get
	// Closed. Close is idempotent.
	Close(status nd.Status)
}

// LinkEvents receives what the peer did; the transport calls it from any
// goroutine, never while holding a lock the engine could wait for.
type LinkEvents interface {
	// Accepted: the passive side accepted with its read limits and data.
	Accepted(ird, ord int, privateData []byte)
	// Rejected: the peer refused the connection.
	Rejected(privateData []byte)
	// Ready: the active side completed the connection.
	Ready()
	// Closed: the connection ended (Success: gracefully).
	Closed(status nd.Status)
}

// InboundCloser is what a Link may also implement to learn that the
// engine ends the connection because of the inbound Send the link is
// handing it: a TakeReceive or ReceiveNow that found no fitting Receive, a
// CompleteReceive with an error. The engine then calls CloseInbound
// instead of Close, before that call returns and on the goroutine that made
// it, so that the link can name the message to its peer from its own
// state, without sharing it with other goroutines.
type InboundCloser interface {
	CloseInbound(status nd.Status)
}

// CloseWaiter is what a Link may also implement when Close only starts the
// end of the connection and a goroutine of the transport hands it to the
// network later (the last frames, a Terminate, the end of the stream).
// Disconnect calls WaitClosed after the link's Close was called, without
// engine locks held, and returns when it does. WaitClosed returns nil once
// the end is out of the process's hands: the peer learns of it even if the
// process exits at once. It returns ctx's error if ctx ends first. It is
// safe for concurrent use, may be called more than once, and waits too
// when another goroutine's Close is still under way.
type CloseWaiter interface {
	WaitClosed(ctx context.Context) error
}

// Progress is what a Transport may also implement when the application's
// polls move the inbound traffic of all its links at once, through one
// readiness set: GetResults on an empty completion queue of any adapter of
// the transport calls Poll; Notify calls Poll once before it waits, Watch
// when it starts waiting and Unwatch when it stops. Poll moves what has
// arrived on the links that are ready, without blocking, and reports
// whether it moved anything; when nothing is ready it costs the same
// whatever the number of links. Between Watch and Unwatch an application
// goroutine waits for completions: the transport's own goroutines must
// move inbound traffic promptly, whatever other goroutines' polls do. All
// three are called without engine locks held, from any goroutine,
// concurrently with each other.
type Progress interface {
	Poll() bool
	Watch()
	Unwatch()
}

// WindowTable is what a Link may also implement to publish the windows
// bound to its endpoint, so that the peer can check and carry out one-sided
// accesses itself, without this side's goroutines (shared memory). The
// engine stays authoritative: it calls WindowBound after binding and before
// the application gets the descriptor, and WindowUnbound after it stopped
// honouring the token and before the unbinding is reported (Invalidate's
// completion, the Receive of a SendAndInvalidate, Window.Close, the end of
// the connection). WindowUnbound must return only when no peer access
// through the window is in flight. Neither is called with engine locks
// held.
type WindowTable interface {
	WindowBound(token uint32, base uint64, buf []byte, rights nd.Flags)
	WindowUnbound(token uint32)
}
