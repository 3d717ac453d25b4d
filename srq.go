package nd

import "context"

// SharedReceiveQueue is ND v2's IND2SharedReceiveQueue: one pool of posted
// Receives that many endpoints of an adapter draw from, instead of each
// endpoint keeping Receives of its own (see CreateEndpointWithSRQ). A
// process with many peers then posts Receives for the traffic it expects in
// total rather than for the worst case of every peer. Its methods are safe
// for concurrent use; Receive and Flush never block.
//
// An inbound Send on an endpoint that uses the queue takes the oldest
// Receive posted to it, whatever endpoint it arrives on. That Receive then
// belongs to the endpoint: it completes on the endpoint's inbound completion
// queue, in the order the endpoint's messages arrived (per endpoint,
// Receive completions come in message order), with BytesTransferred and the
// statuses of Endpoint.Receive. A Send that finds the queue empty ends that
// endpoint's connection, as a Send with no Receive posted does on an
// endpoint of its own (the connection ends with ErrRemoteError and the
// endpoint's outstanding requests complete ErrCanceled; the sender's Send
// completes Success or ErrRemoteError); the other endpoints on the queue go
// on. The ND v2 documentation asks providers to hold such a Send until a
// Receive is posted, as InfiniBand's receiver-not-ready retries do; iWARP
// (Linux siw) terminates the connection instead, and so does this package:
// keep the queue above its low-water mark (Notify) to avoid it.
//
// A Receive occupies an entry of the queue from its post until GetResults
// hands its completion back, on whichever queue it completed, so that the
// depth bounds the Receives and completions in flight together.
type SharedReceiveQueue interface {
	// Receive posts a buffer for the next Send that arrives on any
	// endpoint using the queue. It may be called before any endpoint
	// connects. Immediate errors, which queue nothing: ErrInvalidParameter1
	// for a nil Result, ErrDataOverrun for more SGEs than the queue's
	// limit, ErrBufferOverflow for more bytes than the adapter's
	// MaxInboundLength, ErrNoMoreEntries when the queue holds Entries
	// Receives not yet reaped. A scatter/gather entry outside its
	// registration, inline or of another adapter completes the Receive
	// with ErrAccessViolation when a Send takes it (ending that
	// endpoint's connection). After the queue, its completion queue or the
	// adapter closed: ErrInvalidHandle (ErrDeviceRemoved after the adapter
	// closed). Posting with a reused scatter/gather list and Result
	// allocates nothing.
	Receive(res *Result, sgl []SGE) error

	// Notify blocks until the Receives posted to the queue and not yet
	// taken by a Send number fewer than the queue's NotifyThreshold (ND
	// v2's ND_SRQ_LIMIT event): it returns nil then, at once if they
	// already do. One drop below the threshold completes every Notify
	// waiting at that moment, whether a Send took a Receive or Flush
	// completed them. With a threshold of 0 it never fires. It
	// returns ErrCanceled when ctx ends or the queue closes while it
	// waits; called after the queue closed, ErrInvalidHandle
	// (ErrDeviceRemoved after the adapter closed).
	Notify(ctx context.Context) error

	// Flush completes every Receive posted to the queue and not yet taken
	// by a Send with ErrCanceled, in post order, on the queue's own
	// completion queue (the one given at creation). Receives that
	// endpoints took already are not affected. The queue stays usable:
	// later Receives are posted as before. After Close, as Receive.
	Flush() error

	// Close closes the queue: waiting Notify calls return ErrCanceled, the
	// Receives not yet taken complete with ErrCanceled on the queue's
	// completion queue, and every endpoint that uses the queue is closed
	// (its outstanding requests complete ErrCanceled into its queues).
	// Close is idempotent.
	Close() error
}

// SharedReceiveQueueLimits are the sizes of ND v2's
// CreateSharedReceiveQueue. A value the adapter cannot serve is reported by
// its ND v2 parameter position: ErrInvalidParameter3 for Entries,
// ErrInvalidParameter4 for SGE, ErrInvalidParameter5 for NotifyThreshold.
type SharedReceiveQueueLimits struct {
	// Entries is the Receives posted and not yet reaped
	// (1..MaxSharedReceiveQueueDepth).
	Entries int
	// SGE is the scatter/gather entries per Receive (0..MaxInboundSGE).
	SGE int
	// NotifyThreshold is the low-water mark of Notify: it fires when fewer
	// Receives than this wait in the queue (0..Entries; 0 disables it).
	NotifyThreshold int
}

// SharedReceiveQueueAdapter is what an Adapter implements when it supports
// shared receive queues (its AdapterInfo.MaxSharedReceiveQueueDepth is then
// not 0). Use CreateSharedReceiveQueue, which reports ErrNotSupported for an
// adapter without them. Its method is safe for concurrent use, as the
// Adapter's are.
type SharedReceiveQueueAdapter interface {
	// CreateSharedReceiveQueue creates a shared receive queue of limits
	// on the adapter. Receives that no endpoint took complete on cq when
	// they are flushed (Flush, Close); a cq that is nil, closed or of
	// another adapter is ErrInvalidParameter1. Closing cq closes the
	// queue. After the adapter closed: ErrDeviceRemoved.
	CreateSharedReceiveQueue(cq CompletionQueue, limits SharedReceiveQueueLimits) (SharedReceiveQueue, error)
}

// SharedReceiveQueueConnector is what a Connector implements when its
// adapter supports shared receive queues. Use CreateEndpointWithSRQ. Its
// method is safe for concurrent use, as the Connector's are.
type SharedReceiveQueueConnector interface {
	// CreateEndpointWithSRQ is Connector.CreateEndpoint for an endpoint
	// whose inbound Sends take their Receives from srq (ND v2's
	// CreateQueuePairWithSrq). The endpoint's own Receive returns
	// ErrInvalidDeviceRequest: post to srq instead. A srq that is nil,
	// closed or of another adapter is ErrInvalidParameter3, in place of
	// limits.InboundEntries; limits.InboundEntries and InboundSGE are not
	// used (the queue's limits apply), the other limits are checked as by
	// CreateEndpoint. Closing srq closes the endpoint.
	CreateEndpointWithSRQ(inbound, outbound CompletionQueue, srq SharedReceiveQueue, limits EndpointLimits) (Endpoint, error)
}

// CreateSharedReceiveQueue creates a shared receive queue on a (see
// SharedReceiveQueueAdapter). It returns ErrNotSupported when the adapter
// has no shared receive queues (ND v2: MaxSharedReceiveQueueDepth 0).
func CreateSharedReceiveQueue(a Adapter, cq CompletionQueue, limits SharedReceiveQueueLimits) (SharedReceiveQueue, error) {
	sa, ok := a.(SharedReceiveQueueAdapter)
	if !ok {
		return nil, ErrNotSupported
	}
	return sa.CreateSharedReceiveQueue(cq, limits)
}

// CreateEndpointWithSRQ creates c's endpoint on srq (see
// SharedReceiveQueueConnector). It returns ErrNotSupported when c's
// provider has no shared receive queues.
func CreateEndpointWithSRQ(c Connector, inbound, outbound CompletionQueue, srq SharedReceiveQueue, limits EndpointLimits) (Endpoint, error) {
	sc, ok := c.(SharedReceiveQueueConnector)
	if !ok {
		return nil, ErrNotSupported
	}
	return sc.CreateEndpointWithSRQ(inbound, outbound, srq, limits)
}
