package nd

// Endpoint is ND's INDEndpoint: one side of a reliable connection, with an
// inbound queue (Receives) and an outbound queue (everything else). Its
// methods are safe for concurrent use and never block: an immediate error
// means nothing was queued and the endpoint is unaffected; otherwise exactly
// one completion follows on the endpoint's completion queue (none for a
// successful request with FlagSilentSuccess). A completion with an error
// status terminates the connection, and every other outstanding request
// completes with ErrCanceled. Posting with a reused scatter/gather list and
// Result allocates nothing.
//
// A request occupies a slot of its queue from its post until GetResults hands
// its completion back (a successful silent request frees its slot when it
// completes), as on verbs hardware: a completion queue sized for the sum of
// its endpoints' queues therefore never overruns.
//
// Immediate errors common to the posting calls, all bare Statuses:
// ErrConnectionInvalid when the endpoint never connected (Receive
// excepted), ErrDataOverrun for more SGEs than the endpoint's limit,
// ErrBufferOverflow for more bytes than the adapter's MaxOutboundLength /
// MaxInboundLength or more inline bytes than MaxInlineData,
// ErrNoMoreEntries when the queue is full, ErrInvalidParameter1 for a nil
// res, and for flags the call does not take ErrInvalidParameterN, N the
// position of flags in ND's method (given on each call). A scatter/gather
// entry outside its registration, or naming a region that is deregistered
// or of another adapter, completes the request with ErrAccessViolation and
// CauseLocalAccess. Every call after the endpoint, its connector or one of
// its queues closed returns ErrInvalidHandle (ErrDeviceRemoved after the
// adapter closed) and queues nothing.
//
// Ordering. Outbound requests (Send, SendAndInvalidate, Read, Write, Bind,
// Invalidate) complete in the order they were posted, and Receives in the
// order they were posted; nothing orders one direction against the other.
// Writes are placed front to back, and a Send or Write posted after a Write
// reaches the peer after the Write's data: a Write then a Send is how a
// program hands the peer the bytes it wrote. A request posted after a Read
// may start before the Read's data arrived, unless it carries
// FlagReadFence.
//
// A request completes with a Status (and Cause) in its Result: Success, or
// the error that ended it and the connection (the endpoint's other
// outstanding requests, and the peer's, complete ErrCanceled; the reason is
// DisconnectReason's), ErrCanceled once the connection ended by a Flush,
// Disconnect, a close or the peer, or ErrIOTimeout when the peer stopped
// answering (the provider's ResponseTimeout). docs/semantics.md lists what
// each transport reports in each case.
type Endpoint interface {
	// Send sends the bytes of sgl as one message, consumed by the oldest
	// Receive the peer posted; the peer's Receives take the endpoint's
	// Sends in post order. A zero-length Send completes a peer Receive with
	// 0 bytes. The peer sees the message only after the data of every
	// Write posted before it. Flags: FlagSilentSuccess, FlagReadFence,
	// FlagSendAndSolicitEvent (others: ErrInvalidParameter4, ND's position
	// of flags). It completes Success once the peer has the bytes
	// (docs/semantics.md says when, per transport). If the peer has no
	// Receive posted, or its Receive is too small, the peer ends the
	// connection (its Receive completes ErrBufferOverflow, or its
	// DisconnectReason says CauseNoReceive), and the Send completes
	// ErrRemoteError (Success toward a peer that confirms nothing, such as
	// Linux's siw).
	Send(res *Result, sgl []SGE, flags Flags) error

	// SendAndInvalidate is Send that also invalidates the peer's memory
	// window named by remote once the peer's Receive completes. If the
	// window cannot be invalidated the peer's Receive completes with
	// ErrInvalidationError. Flags as Send's (others: ErrInvalidParameter5).
	SendAndInvalidate(res *Result, sgl []SGE, remote MWDescriptor, flags Flags) error

	// Receive posts a buffer for the peer's next Send. It may be called
	// before the endpoint connects, and should be: a Send that finds no
	// Receive ends the connection. Receives take the peer's Sends in the
	// order both were posted. BytesTransferred is set to the bytes placed,
	// filling the entries in order. A Send larger than the Receive
	// completes it ErrBufferOverflow and ends the connection.
	Receive(res *Result, sgl []SGE) error

	// Bind binds mw to buf, which must lie inside mr (ErrInvalidParameter4
	// otherwise), with FlagAllowRead and/or FlagAllowWrite (at least one,
	// else ErrInvalidParameter6, ND's position of flags), and returns the
	// descriptor for the peer at once; send it to the peer (its
	// MarshalBinary or Put form) for its Read and Write. mr not a live
	// registration of the adapter is ErrAccessViolation, mw not an open
	// window of it ErrInvalidParameter3. The window is usable only by this
	// endpoint's peer, until Invalidate, a SendAndInvalidate from the
	// peer, or the end of the connection. Binding a window that is already
	// bound completes with ErrInvalidRequest.
	Bind(res *Result, mr MemoryRegion, mw MemoryWindow, buf []byte, flags Flags) (MWDescriptor, error)

	// Invalidate unbinds mw, in order with the endpoint's other outbound
	// requests. From then on the peer's accesses through it are refused;
	// the Invalidate completes once no access that started before still
	// reads or writes its bytes. A window that is not bound to this
	// endpoint completes with ErrInvalidationError; mw not an open window
	// of the adapter is ErrInvalidParameter2, flags other than
	// FlagSilentSuccess and FlagReadFence ErrInvalidParameter3.
	Invalidate(res *Result, mw MemoryWindow, flags Flags) error

	// Read reads from the peer's window remote at offset into sgl, as many
	// bytes as sgl holds. Flags: FlagSilentSuccess, FlagReadFence (others:
	// ErrInvalidParameter6, ND's position of flags). A range outside the
	// window, a window without FlagAllowRead, an unknown or stale token,
	// or a window bound to another endpoint completes with
	// ErrAccessViolation and CauseRemoteAccess (the peer refused it; its
	// DisconnectReason says CausePeerAccess); an entry of sgl outside its
	// registration, or inline, with CauseLocalAccess. Reads beyond the
	// negotiated outbound read limit wait; with a limit of 0 a Read
	// completes with ErrInvalidRequest.
	Read(res *Result, sgl []SGE, remote MWDescriptor, offset uint64, flags Flags) error

	// Write writes sgl to the peer's window remote at offset, front to
	// back: the last byte is placed last, and a Send or Write posted after
	// it reaches the peer after its data. It completes Success once the
	// data is placed at the peer (docs/semantics.md, per transport).
	// Flags: FlagSilentSuccess, FlagReadFence (others:
	// ErrInvalidParameter6). Failures as for Read, with FlagAllowWrite: a
	// Write the peer refuses completes ErrAccessViolation with
	// CauseRemoteAccess and 0 bytes, and places nothing.
	Write(res *Result, sgl []SGE, remote MWDescriptor, offset uint64, flags Flags) error

	// Flush completes every outstanding request of the endpoint, in both
	// directions, with ErrCanceled and ends the connection. The endpoint
	// takes no more work afterwards (later requests complete ErrCanceled).
	Flush() error

	// StartRequestBatch and SubmitRequestBatch bracket a run of posts; they
	// are hints, and posts work the same without them.
	StartRequestBatch()
	SubmitRequestBatch()

	// MaxInlineData is the inline data size granted to the endpoint.
	MaxInlineData() int

	// Close releases the endpoint: a connection still up is torn down,
	// outstanding requests complete with ErrCanceled into the endpoint's
	// queues, a Connect or Accept using it returns ErrCanceled, and the
	// connector may create a new endpoint. Close is idempotent.
	Close() error
}

// MemoryRegion is a registration made by Adapter.RegisterMemory
// (ND_MR_HANDLE). It is safe for concurrent use.
type MemoryRegion interface {
	// Bytes returns the registered buffer.
	Bytes() []byte
}

// MemoryWindow is a window created by Adapter.CreateMemoryWindow
// (INDMemoryWindow). It is safe for concurrent use.
type MemoryWindow interface {
	// Close releases the window, invalidating it if it is bound. Bind and
	// Invalidate naming a closed window return ErrInvalidParameter3 and
	// ErrInvalidParameter2. Close is idempotent.
	Close() error
}
