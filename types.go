package nd

import (
	"encoding/binary"
	"errors"
)

// Result is ND's ND_RESULT: the caller-owned record of one posted request.
// The caller passes a *Result to a posting call and must keep it untouched
// until CompletionQueue.GetResults hands the same pointer back; the provider
// writes Status, Cause and BytesTransferred before it does, possibly from
// another goroutine (GetResults orders those writes before the caller's
// reads). A Result may be embedded as the first field of a larger request
// record to carry the caller's context. It is laid out as ND_RESULT (Cause
// sits in the padding after Status), so that ND's own structure can stand
// for it.
type Result struct {
	// Status is the outcome of the request: Success, or the error that
	// ended it (see each posting call for the statuses it completes with).
	// A failed request ended the connection; the endpoint's other
	// outstanding requests complete ErrCanceled.
	Status Status
	// Cause tells apart failures that share a Status, where the provider
	// knows: for ErrAccessViolation, CauseLocalAccess (a scatter/gather
	// entry of this side) or CauseRemoteAccess (the peer refused the Read
	// or Write). It is CauseNone for a successful request and where
	// nothing more is known. Err folds it into an error.
	Cause Cause
	// BytesTransferred is the number of bytes the request moved: for Send,
	// SendAndInvalidate, Read and Write the total length of the request's
	// scatter/gather list, for Receive the bytes placed. It is 0 for a
	// request that did not succeed, and undefined for Bind and Invalidate.
	BytesTransferred int
}

// Err returns nil for a successful request; otherwise its Status, or, when
// Cause is known, an error for which errors.Is holds for both the Status
// and the Cause and whose text says both:
//
//	if err := r.Err(); errors.Is(err, nd.CauseRemoteAccess) { ... }
//
// It allocates only for a failed request with a Cause.
func (r Result) Err() error {
	switch {
	case r.Status == Success:
		return nil
	case r.Cause == CauseNone:
		return r.Status
	}
	return &resultError{r.Status, r.Cause}
}

// SGE is one scatter/gather entry (ND_SGE). Buffer must lie inside the
// memory registered as Region, which must come from the same adapter. A nil
// Region marks inline data: the bytes are copied when the request is posted,
// may live anywhere, and may be reused as soon as the posting call returns;
// the request's inline bytes may not exceed the endpoint's MaxInlineData.
// Inline data is legal for Send, SendAndInvalidate and Write, not for Receive
// and Read: there an entry without a Region names no registration, and the
// request completes with ErrAccessViolation, as for an entry outside its
// registration.
//
// A scatter/gather list ([]SGE) is only read during the posting call; posting
// with a list the caller keeps and reuses allocates nothing.
type SGE struct {
	Buffer []byte       // the bytes: a slice of Region's buffer, or any memory for inline data
	Region MemoryRegion // the registration Buffer lies in; nil for inline data
}

// Flags control a posted request (ND_OP_FLAG_*). Each posting call documents
// which flags it accepts.
type Flags uint32

// The ND v1 operation flags, at their ND values.
const (
	// FlagSilentSuccess: a successful completion produces no CQ entry; a
	// failed one still does.
	FlagSilentSuccess Flags = 0x01
	// FlagReadFence: the request starts only after every earlier Read on the
	// endpoint has completed.
	FlagReadFence Flags = 0x02
	// FlagSendAndSolicitEvent (Send only): the peer's Receive completion
	// satisfies a NotifySolicited request on the peer's CQ.
	FlagSendAndSolicitEvent Flags = 0x04
	// FlagAllowRead (Bind only): the peer may RDMA Read the window.
	FlagAllowRead Flags = 0x08
	// FlagAllowWrite (Bind only): the peer may RDMA Write the window.
	FlagAllowWrite Flags = 0x10
)

// NotifyType selects what satisfies CompletionQueue.Notify (ND_CQ_NOTIFY_*).
type NotifyType int

const (
	// NotifyErrors is satisfied only by an error of the queue itself
	// (overrun).
	NotifyErrors NotifyType = 0
	// NotifyAny is satisfied by the next completion of any kind.
	NotifyAny NotifyType = 1
	// NotifySolicited is satisfied by a Receive completion for a Send that
	// carried FlagSendAndSolicitEvent, and by any completion with an error.
	NotifySolicited NotifyType = 2
)

// MWDescriptorSize is the size of a marshaled MWDescriptor in bytes.
const MWDescriptorSize = 20

// MWDescriptor is ND's ND_MW_DESCRIPTOR: what Endpoint.Bind returns for a
// memory window and what the peer passes to Read, Write and
// SendAndInvalidate. On the wire it is 20 bytes, all fields big-endian, so it
// can be shipped between machines of any byte order. Base and Token are
// opaque to the peer, which only computes Base + Offset. It is a value: its
// methods other than UnmarshalBinary only read it and are safe for
// concurrent use.
type MWDescriptor struct {
	Base   uint64 // address of the window's first byte, as the provider names it
	Length uint64 // length of the window in bytes
	Token  uint32 // access token; random, changes on every Bind
}

var errDescriptorSize = errors.New("nd: an MWDescriptor is exactly 20 bytes")

// Put writes the 20-byte big-endian form of d into b, which must be at least
// MWDescriptorSize bytes long.
func (d MWDescriptor) Put(b []byte) {
	_ = b[19]
	binary.BigEndian.PutUint64(b[0:8], d.Base)
	binary.BigEndian.PutUint64(b[8:16], d.Length)
	binary.BigEndian.PutUint32(b[16:20], d.Token)
}

// AppendBinary appends the 20-byte big-endian form of d to b; its error is
// always nil (encoding.BinaryAppender).
func (d MWDescriptor) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, d.Base)
	b = binary.BigEndian.AppendUint64(b, d.Length)
	return binary.BigEndian.AppendUint32(b, d.Token), nil
}

// MarshalBinary returns the 20-byte big-endian form of d; its error is
// always nil.
func (d MWDescriptor) MarshalBinary() ([]byte, error) {
	return d.AppendBinary(make([]byte, 0, MWDescriptorSize))
}

// UnmarshalBinary sets d from its 20-byte big-endian form; any other length
// is an error.
func (d *MWDescriptor) UnmarshalBinary(b []byte) error {
	if len(b) != MWDescriptorSize {
		return errDescriptorSize
	}
	d.Base = binary.BigEndian.Uint64(b[0:8])
	d.Length = binary.BigEndian.Uint64(b[8:16])
	d.Token = binary.BigEndian.Uint32(b[16:20])
	return nil
}

// AdapterFlags describe adapter capabilities (ND v2's ND_ADAPTER_FLAG_*,
// reported beside the v1 fields).
type AdapterFlags uint32

// The adapter flags, at their ND v2 values.
const (
	// AdapterInOrderDMA: RDMA Write data is placed front to back, so the
	// last byte of a buffer arrives last and may be polled.
	AdapterInOrderDMA AdapterFlags = 0x00000001
	// AdapterCQInterruptModeration: completion interrupts can be moderated.
	AdapterCQInterruptModeration AdapterFlags = 0x00000004
	// AdapterMultiEngine: completion queues progress in parallel.
	AdapterMultiEngine AdapterFlags = 0x00000008
	// AdapterCQResize: CompletionQueue.Resize is supported.
	AdapterCQResize AdapterFlags = 0x00000100
	// AdapterLoopbackConnections: an adapter can connect to its own address.
	AdapterLoopbackConnections AdapterFlags = 0x00010000
)

// AdapterInfo is ND's ND_ADAPTER_INFO (version 1) with the v2 flags beside
// it. Every limit is one the adapter enforces.
type AdapterInfo struct {
	VendorID              uint32       // the adapter's vendor (godirect's software providers: 0x00474F44, "GOD")
	DeviceID              uint32       // the vendor's device (godirect: 1 loop, 2 tcp, 3 shm)
	MaxInboundSGE         int          // scatter/gather entries per Receive
	MaxInboundRequests    int          // outstanding Receives per endpoint
	MaxInboundLength      int          // bytes in one Receive's scatter/gather list
	MaxOutboundSGE        int          // scatter/gather entries per Send, Read or Write
	MaxOutboundRequests   int          // outstanding outbound requests per endpoint
	MaxOutboundLength     int          // bytes in one Send, Read or Write
	MaxInlineData         int          // inline bytes per request
	MaxInboundReadLimit   int          // Reads in flight toward one endpoint (IRD)
	MaxOutboundReadLimit  int          // Reads in flight from one endpoint (ORD)
	MaxCQEntries          int          // entries of one completion queue
	MaxRegistrationSize   int          // bytes of one memory registration
	MaxWindowSize         int          // bytes of one memory window
	LargeRequestThreshold int          // above this size, Read/Write beats Send/Receive
	MaxCallerData         int          // private data bytes on Connect
	MaxCalleeData         int          // private data bytes on Accept and Reject
	Flags                 AdapterFlags // what the adapter can do (AdapterInOrderDMA, ...)
	// MaxSharedReceiveQueueDepth is ND v2's field of the same name: the
	// Entries of one SharedReceiveQueue; 0 when the adapter has none
	// (CreateSharedReceiveQueue then reports ErrNotSupported). Its Receives
	// have at most MaxInboundSGE entries and MaxInboundLength bytes.
	MaxSharedReceiveQueueDepth int
}

// EndpointLimits are the six sizes of ND's CreateEndpoint, in ND's parameter
// order. A limit the adapter cannot serve is reported as
// ErrInvalidParameter3 (InboundEntries) through ErrInvalidParameter8
// (OutboundReadLimit), its ND parameter position; the two completion queues
// are parameters 1 and 2.
type EndpointLimits struct {
	InboundEntries    int // Receives posted and not yet reaped (1..MaxInboundRequests)
	OutboundEntries   int // outbound requests posted and not yet reaped (1..MaxOutboundRequests)
	InboundSGE        int // SGEs per Receive (0..MaxInboundSGE)
	OutboundSGE       int // SGEs per Send, Read or Write (0..MaxOutboundSGE)
	InboundReadLimit  int // Reads the peer may have in flight toward us (0..MaxInboundReadLimit)
	OutboundReadLimit int // Reads we may have in flight (0..MaxOutboundReadLimit)
}

// ConnectionData is what Connector.GetConnectionData reports besides the
// private data: the read limits from the local point of view, and the full
// length of the peer's private data.
type ConnectionData struct {
	InboundReadLimit  int // Reads the peer will have in flight toward us
	OutboundReadLimit int // Reads we may have in flight toward the peer
	PrivateDataLength int // length of the peer's private data
}
