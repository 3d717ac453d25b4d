// Package nd is the Network Direct SPI (ND v1, the interface MS-MPI is built
// on) in Go form: adapters, completion queues, endpoints that post Send,
// Receive and one-sided RDMA Read and Write against registered memory and
// memory windows, and connectors and listeners that set connections up with
// private data and read limits.
//
// The package holds the nouns and their contracts. Implementations live in
// providers: provider/loop (in-process), provider/tcp (iWARP over TCP) and
// others, which register themselves with RegisterProvider. The conformance
// suite in package ndtest checks any provider against these contracts.
//
// # Mapping from ND
//
// Every ND v1 method has a Go counterpart with the same name. What ND does
// with an OVERLAPPED (Connect, Accept, CompleteConnect, Disconnect,
// NotifyDisconnect, GetConnectionRequest, RegisterMemory, DeregisterMemory,
// CompletionQueue.Notify) is a blocking call that takes a context.Context;
// canceling the context is ND's CancelOverlappedRequests and the call returns
// an error for which errors.Is(err, ErrCanceled) holds. Posting calls (Send,
// SendAndInvalidate, Receive, Bind, Invalidate, Read, Write) never block and
// take no context: an immediate error means nothing was queued; otherwise the
// outcome arrives later as the caller's own *Result, handed back by
// CompletionQueue.GetResults.
//
// Statuses are ND's numeric values (type Status, an error). An error
// completion terminates the connection, and every other outstanding request
// of that endpoint then completes with ErrCanceled.
//
// # Errors
//
// Every provider returns errors of one shape. A call that fails on its
// parameters, on its object's state or on a closed object returns the bare
// Status (err.(nd.Status) holds; posting calls never return anything else).
// A call whose failure has more to say returns an *OpError naming the call:
// a blocking call whose context ended or whose object closed while it
// waited (Status ErrCanceled, Err the context's error, if any), or a failure
// with an underlying cause such as an operating system or device error, or
// a provider that cannot serve at all and says why (provider/verbs built
// without its build tag).
// errors.Is(err, nd.ErrX) and StatusOf work on both; compare statuses with
// them rather than with ==. The ndtest case Errors/Shape checks this.
//
// ND v2 ideas are added beside the v1 API, never instead of it: a
// SharedReceiveQueue (ND v2's IND2SharedReceiveQueue) is one pool of
// Receives for many endpoints, made with CreateSharedReceiveQueue and used
// by the endpoints made with CreateEndpointWithSRQ; both report
// ErrNotSupported for a provider without it.
//
// # Closing
//
// A posting call that returns nil is followed by exactly one completion,
// whatever is closed, in whatever order, concurrently with posts and polls
// (docs/semantics.md has the full table):
//
//   - Closing an object closes the objects made from it (an Adapter: its
//     listeners, connectors, endpoints, shared receive queues and
//     completion queues; a Connector: its endpoint; a CompletionQueue: the
//     shared receive queues made on it) and, for a CompletionQueue or a
//     SharedReceiveQueue, the endpoints that use it.
//   - The requests outstanding on an endpoint that closes complete
//     ErrCanceled, into its completion queues; a queue that closed still
//     takes them, and GetResults still returns what a closed queue holds.
//   - A call made after its object, or one it depends on, closed returns at
//     once and queues nothing: ErrDeviceRemoved once the adapter closed,
//     ErrInvalidHandle otherwise. A call waiting when the close happens
//     returns ErrCanceled. A closed object given as a parameter is
//     ErrInvalidParameterN, N its position.
//   - Close is idempotent and returns nil; GetResults and DeregisterMemory,
//     cleanup, work after the adapter closed.
package nd
