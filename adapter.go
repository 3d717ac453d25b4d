package nd

import (
	"context"
	"net/netip"
)

// Adapter is ND's INDAdapter: one opened instance of an RDMA adapter, owner
// of completion queues, memory registrations, memory windows, connectors and
// listeners. Its methods are safe for concurrent use.
type Adapter interface {
	// Address is the local address the adapter was opened for.
	Address() netip.Addr

	// Query reports the adapter's limits and capabilities; after Close,
	// ErrDeviceRemoved.
	Query() (AdapterInfo, error)

	// CreateCompletionQueue creates a completion queue with room for
	// entries completions (1..MaxCQEntries, else an *ArgError with
	// ErrInvalidParameter). A queue sized for the queue depths of the
	// endpoints that use it never overruns.
	CreateCompletionQueue(entries int) (CompletionQueue, error)

	// RegisterMemory registers buf for use in scatter/gather lists and
	// memory windows of this adapter's endpoints. The registration keeps
	// buf alive until DeregisterMemory. ctx bounds the registration (a
	// device's pinning of the memory may take time): its end cancels it
	// (ErrCanceled). An empty buf is an *ArgError with
	// ErrInvalidBufferSize, a nil one or one larger than
	// MaxRegistrationSize an *ArgError with ErrInvalidParameter.
	RegisterMemory(ctx context.Context, buf []byte) (MemoryRegion, error)

	// DeregisterMemory ends a registration. It returns ErrDeviceBusy while a
	// memory window is bound inside the region, and waits for transfers in
	// progress on the region to finish, or for ctx to end (ErrCanceled, the
	// region still registered). After it returns, requests that
	// name the region complete with ErrAccessViolation. Deregistering
	// twice is an *ArgError with ErrInvalidParameter1; after the adapter
	// closed it returns nil (cleanup).
	DeregisterMemory(ctx context.Context, mr MemoryRegion) error

	// CreateMemoryWindow creates an unbound memory window. invalidateResult
	// (which may be nil) is the caller's Result that the adapter updates
	// when the peer invalidates the window with SendAndInvalidate: its
	// Status becomes Success (it is never queued on a completion queue; the
	// Receive that carried the invalidation completes as usual).
	CreateMemoryWindow(invalidateResult *Result) (MemoryWindow, error)

	// CreateConnector creates a connector, the object that makes or accepts
	// one connection and owns at most one endpoint; after Close,
	// ErrDeviceRemoved.
	CreateConnector() (Connector, error)

	// Listen starts listening for connection requests on port (0 assigns
	// one; Listener.Port reports it) for protocol (0..MaxProtocol; only
	// requests naming the same protocol match: pass ProtocolTCP unless the
	// program chose another). backlog bounds the requests waiting for
	// GetConnectionRequest (0 is unlimited); requests beyond it are
	// refused. A negative backlog or a protocol out of range is an
	// *ArgError (ErrInvalidParameter1, ErrInvalidParameter2). A port
	// already listened on for the protocol is ErrAddressAlreadyExists.
	Listen(backlog, protocol int, port uint16) (Listener, error)

	// Close closes the adapter and every listener, connector, endpoint and
	// completion queue made from it: connections are torn down, the
	// endpoints' outstanding requests complete with ErrCanceled into their
	// queues (GetResults still returns them), blocked calls return
	// ErrCanceled, and later calls on the adapter and its objects return
	// ErrDeviceRemoved, except Close (nil), GetResults and
	// DeregisterMemory. Close is idempotent.
	Close() error
}

// CompletionQueue is ND's INDCompletionQueue. Its methods are safe for
// concurrent use; many endpoints may share one queue.
type CompletionQueue interface {
	// GetResults fills results with the *Result pointers of completed
	// requests, the very pointers given when posting, after their Status,
	// Cause and BytesTransferred were written; it returns how many it
	// filled and never blocks (WaitResults waits for one). Per endpoint,
	// outbound requests come back in post order and Receives in post
	// order; there is no order between the two directions of an endpoint,
	// nor between endpoints sharing the queue. A request's slot in its
	// endpoint's queue is free once GetResults returned it. It allocates
	// nothing. After Close (the queue's or the adapter's) it still returns
	// what the queue holds, the last completions of the requests accepted
	// before, then 0.
	GetResults(results []*Result) int

	// Notify arms the queue and blocks until it fires: NotifyAny on the next
	// completion, NotifySolicited on a solicited or error completion,
	// NotifyErrors on an error of the queue. A completion that arrived after
	// the last GetResults that left the queue empty, and that has not yet
	// fired a notification, fires it at once. One firing completes every
	// Notify waiting at that moment. Notify returns nil when it fired,
	// ErrBufferOverflow if the queue overran (the queue and its endpoints
	// are then unusable), and ErrCanceled when ctx ends or the queue
	// closes while it waits. Called after the queue closed it returns
	// ErrInvalidHandle (ErrDeviceRemoved after the adapter closed).
	Notify(ctx context.Context, typ NotifyType) error

	// Resize changes the capacity to entries without losing completions;
	// ErrBufferOverflow if fewer than the completions queued now,
	// ErrInvalidParameter beyond MaxCQEntries; after Close, as Notify.
	Resize(entries int) error

	// Close closes the queue: waiting Notify calls return ErrCanceled, and
	// every endpoint that uses the queue is closed, so that its outstanding
	// requests complete with ErrCanceled (those of this queue's direction
	// into this queue, which keeps taking them) and later posts on it
	// return ErrInvalidHandle. Close is idempotent.
	Close() error
}
