package ndrules

import (
	"fmt"

	"github.com/godirect/nd"
)

// Arg is the error of a call that refused its argument arg with ND's
// status st: an *nd.ArgError naming the Go argument, reason saying what is
// wrong with it.
func Arg(op, arg string, st nd.Status, reason string) error {
	return &nd.ArgError{Op: op, Arg: arg, Status: st, Reason: reason}
}

// argf is Arg with a formatted reason.
func argf(op, arg string, st nd.Status, format string, a ...any) error {
	return Arg(op, arg, st, fmt.Sprintf(format, a...))
}

// CQEntries checks the size of a completion queue for op
// (CreateCompletionQueue, Resize): 1 to MaxCQEntries, else
// ErrInvalidParameter for entries.
func CQEntries(op string, info *nd.AdapterInfo, entries int) error {
	if entries < 1 || entries > info.MaxCQEntries {
		return argf(op, "entries", nd.ErrInvalidParameter, "%d is outside 1..%d (MaxCQEntries)", entries, info.MaxCQEntries)
	}
	return nil
}

// Resize checks CompletionQueue.Resize to entries while queued completions
// wait in the queue: the size as CQEntries, then ErrBufferOverflow when the
// queued completions would not fit (the queue is left unchanged).
func Resize(info *nd.AdapterInfo, entries, queued int) error {
	if err := CQEntries("Resize", info, entries); err != nil {
		return err
	}
	if entries < queued {
		return argf("Resize", "entries", nd.ErrBufferOverflow, "%d is fewer than the %d completions queued", entries, queued)
	}
	return nil
}

// NotifyType checks CompletionQueue.Notify's type, its first parameter:
// NotifyErrors, NotifyAny or NotifySolicited, else ErrInvalidParameter1.
func NotifyType(typ nd.NotifyType) error {
	switch typ {
	case nd.NotifyErrors, nd.NotifyAny, nd.NotifySolicited:
		return nil
	}
	return argf("Notify", "typ", nd.ErrInvalidParameter1, "%d is not NotifyErrors, NotifyAny or NotifySolicited", typ)
}

// Listen checks Listen's backlog (ErrInvalidParameter1 when negative; 0 is
// unlimited) and protocol (0 to MaxProtocol, else ErrInvalidParameter2).
func Listen(backlog, protocol int) error {
	switch {
	case backlog < 0:
		return argf("Listen", "backlog", nd.ErrInvalidParameter1, "%d is negative", backlog)
	case protocol < 0 || protocol > nd.MaxProtocol:
		return argf("Listen", "protocol", nd.ErrInvalidParameter2, "%d is outside 0..%d", protocol, nd.MaxProtocol)
	}
	return nil
}

// RegisterMemory checks RegisterMemory's buffer: a nil buffer is
// ErrInvalidParameter, an empty one ErrInvalidBufferSize, one longer than
// MaxRegistrationSize ErrInvalidParameter.
func RegisterMemory(info *nd.AdapterInfo, buf []byte) error {
	switch {
	case buf == nil:
		return Arg("RegisterMemory", "buf", nd.ErrInvalidParameter, "nil")
	case len(buf) == 0:
		return Arg("RegisterMemory", "buf", nd.ErrInvalidBufferSize, "empty")
	case len(buf) > info.MaxRegistrationSize:
		return argf("RegisterMemory", "buf", nd.ErrInvalidParameter, "%d bytes, more than MaxRegistrationSize (%d)", len(buf), info.MaxRegistrationSize)
	}
	return nil
}

// endpointLimit is one of CreateEndpoint's limits: its field, the lowest
// value, the adapter's highest, and ND's status for it.
type endpointLimit struct {
	field   string
	value   int
	low     int
	high    int
	maxName string
	st      nd.Status
}

// EndpointLimits checks the six limits of op (CreateEndpoint,
// CreateEndpointWithSRQ) against the adapter's, by their ND parameter
// positions: InboundEntries (3) and OutboundEntries (4) from 1, InboundSGE
// (5), OutboundSGE (6), InboundReadLimit (7) and OutboundReadLimit (8)
// from 0, each up to the adapter's maximum. The completion queues,
// parameters 1 and 2, are the provider's to check first.
func EndpointLimits(op string, info *nd.AdapterInfo, l *nd.EndpointLimits) error {
	for _, c := range [...]endpointLimit{
		{"InboundEntries", l.InboundEntries, 1, info.MaxInboundRequests, "MaxInboundRequests", nd.ErrInvalidParameter3},
		{"OutboundEntries", l.OutboundEntries, 1, info.MaxOutboundRequests, "MaxOutboundRequests", nd.ErrInvalidParameter4},
		{"InboundSGE", l.InboundSGE, 0, info.MaxInboundSGE, "MaxInboundSGE", nd.ErrInvalidParameter5},
		{"OutboundSGE", l.OutboundSGE, 0, info.MaxOutboundSGE, "MaxOutboundSGE", nd.ErrInvalidParameter6},
		{"InboundReadLimit", l.InboundReadLimit, 0, info.MaxInboundReadLimit, "MaxInboundReadLimit", nd.ErrInvalidParameter7},
		{"OutboundReadLimit", l.OutboundReadLimit, 0, info.MaxOutboundReadLimit, "MaxOutboundReadLimit", nd.ErrInvalidParameter8},
	} {
		if c.value < c.low || c.value > c.high {
			return argf(op, "limits."+c.field, c.st, "%d is outside %d..%d (the adapter's %s)", c.value, c.low, c.high, c.maxName)
		}
	}
	return nil
}

// CreateEndpoint checks the parameters of op (CreateEndpoint,
// CreateEndpointWithSRQ) in order: the inbound and outbound completion
// queues (inOK, outOK false: not an open queue of the adapter;
// ErrInvalidParameter1, 2), then the limits (EndpointLimits).
func CreateEndpoint(op string, info *nd.AdapterInfo, inOK, outOK bool, l *nd.EndpointLimits) error {
	switch {
	case !inOK:
		return Arg(op, "inbound", nd.ErrInvalidParameter1, NotOpenQueue)
	case !outOK:
		return Arg(op, "outbound", nd.ErrInvalidParameter2, NotOpenQueue)
	}
	return EndpointLimits(op, info, l)
}

// NotOpenQueue is the reason a completion queue argument is refused.
const NotOpenQueue = "not an open completion queue of this adapter"

// CreateSharedReceiveQueue checks CreateSharedReceiveQueue's call in ND's
// order: ErrDeviceRemoved once the adapter closed, ErrNotSupported for an
// adapter without shared receive queues (MaxSharedReceiveQueueDepth 0),
// both bare statuses; ErrInvalidParameter1 for cq unless cqOK (the
// completion queue is the adapter's and open), then the limits
// (SharedReceiveQueueLimits).
func CreateSharedReceiveQueue(adapterClosed bool, info *nd.AdapterInfo, cqOK bool, l *nd.SharedReceiveQueueLimits) error {
	switch {
	case adapterClosed:
		return nd.ErrDeviceRemoved
	case info.MaxSharedReceiveQueueDepth == 0:
		return nd.ErrNotSupported
	case !cqOK:
		return Arg("CreateSharedReceiveQueue", "cq", nd.ErrInvalidParameter1, NotOpenQueue)
	}
	return SharedReceiveQueueLimits(info, l)
}

// SharedReceiveQueueLimits checks CreateSharedReceiveQueue's limits by ND
// v2's parameter positions: Entries 1 to MaxSharedReceiveQueueDepth (3), SGE
// 0 to MaxInboundSGE (4), NotifyThreshold 0 to Entries (5). A provider
// without shared receive queues (depth 0) answers ErrNotSupported before.
func SharedReceiveQueueLimits(info *nd.AdapterInfo, l *nd.SharedReceiveQueueLimits) error {
	const op = "CreateSharedReceiveQueue"
	switch {
	case l.Entries < 1 || l.Entries > info.MaxSharedReceiveQueueDepth:
		return argf(op, "limits.Entries", nd.ErrInvalidParameter3, "%d is outside 1..%d (the adapter's MaxSharedReceiveQueueDepth)", l.Entries, info.MaxSharedReceiveQueueDepth)
	case l.SGE < 0 || l.SGE > info.MaxInboundSGE:
		return argf(op, "limits.SGE", nd.ErrInvalidParameter4, "%d is outside 0..%d (the adapter's MaxInboundSGE)", l.SGE, info.MaxInboundSGE)
	case l.NotifyThreshold < 0 || l.NotifyThreshold > l.Entries:
		return argf(op, "limits.NotifyThreshold", nd.ErrInvalidParameter5, "%d is outside 0..%d (limits.Entries)", l.NotifyThreshold, l.Entries)
	}
	return nil
}
