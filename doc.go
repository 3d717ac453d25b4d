// Package nd is the Network Direct SPI (ND v1, the interface MS-MPI is built
// on) in Go form: adapters, completion queues, endpoints that post Send,
// Receive and one-sided RDMA Read and Write against registered memory and
// memory windows, and connectors and listeners that set connections up with
// private data and read limits.
//
// The package holds the nouns and their contracts. Implementations live in
// providers: provider/loop (in-process), provider/tcp (iWARP over TCP,
// between processes and hosts), provider/shm (shared memory between the
// processes of a host) and provider/verbs (RDMA devices), which register
// themselves with RegisterProvider when imported; OpenProvider finds them
// by name. The conformance suite in package ndtest checks any provider
// against these contracts.
//
// To start: this package's Example connects two endpoints in one process
// and reads through a memory window; provider/tcp's and provider/shm's
// examples run a server and a client in two processes (a window
// advertised, written and checked); package ndnet turns a connection into
// a net.Conn.
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
// ND v2 ideas are added beside the v1 API, never instead of it: a
// SharedReceiveQueue (ND v2's IND2SharedReceiveQueue) is one pool of
// Receives for many endpoints, made with CreateSharedReceiveQueue and used
// by the endpoints made with CreateEndpointWithSRQ; both report
// ErrNotSupported for a provider without it.
//
// # Errors
//
// Every provider returns errors of one shape, and every error carries ND's
// status: errors.Is(err, nd.ErrX) and StatusOf work on all of them; compare
// statuses with them rather than with ==. The ndtest case Errors/Shape
// checks the shape.
//
//   - A posting call (Send, SendAndInvalidate, Receive, Bind, Invalidate,
//     Read, Write, and a shared receive queue's Receive) returns a bare
//     Status and nothing else, so that its errors cost no allocation and
//     compare with ==. ND numbers a refused parameter by its position in
//     the C method (ErrInvalidParameter4 for Send's flags); each method's
//     documentation names the Go argument.
//   - Any other call that refuses an argument returns an *ArgError naming
//     the call and the Go argument, with ND's status for it, such as
//     "nd: Connect: protocol: 300 is outside 0..255
//     (ND_INVALID_PARAMETER_4)".
//   - A call that fails on its object's state or on a closed object
//     returns the bare Status.
//   - A call whose failure has more to say returns an *OpError naming the
//     call: a blocking call whose context ended or whose object closed
//     while it waited (Status ErrCanceled, Err the context's error, if
//     any), a failure with an underlying cause such as an operating system
//     or device error, a provider that cannot serve at all and says why
//     (provider/verbs built without its build tag), or a provider name
//     that nothing registered (OpenProvider).
//
// A request that fails completes with its Result's Status, and Cause says
// more where ND's status is shared: an ErrAccessViolation is
// CauseLocalAccess (a scatter/gather entry of this side) or
// CauseRemoteAccess (the peer refused the Read or Write). Result.Err folds
// both into one error. The failure ends the connection, and both sides can
// ask why with DisconnectReason: the initiator of a refused Write learns
// of its Write, the target that it refused the peer's Write
// (CausePeerAccess), and what the Write named.
//
// # Waiting for completions
//
// GetResults never blocks; Notify blocks until the queue has something.
// WaitResults (and Waiter, which polls for a while first) puts the two
// together: it returns at least one completion, or the error that ended
// the wait.
//
// # Ordering
//
// Completions come back per endpoint and per direction in post order:
// outbound requests (Send, SendAndInvalidate, Read, Write, Bind,
// Invalidate) in the order they were posted, Receives in the order they
// were posted, which is the order the peer's Sends arrive in. Nothing is
// ordered between the two directions of an endpoint, or between endpoints,
// even on one completion queue. RDMA Write data is placed front to back,
// and a Send posted after a Write is never seen by the peer before the
// Write's data: a Write followed by a Send that says "done" is the usual
// way to hand the peer a buffer. A request posted after a Read may start
// before the Read's data arrived; FlagReadFence on it holds it until every
// earlier Read of the endpoint has completed (a Send that tells the peer
// its buffer may be reused, after Reading from it). docs/semantics.md has
// the full table.
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
//     returns ErrCanceled. A closed object given as an argument is refused
//     with an *ArgError whose Status is ErrInvalidParameterN, N its
//     position in ND's method.
//   - Close is idempotent and returns nil; GetResults and DeregisterMemory,
//     cleanup, work after the adapter closed.
package nd
