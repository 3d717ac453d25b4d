package ndrules

import "github.com/godirect/nd"

// CQEntries checks a completion queue's size for CreateCompletionQueue and
// Resize: 1 to MaxCQEntries, else ErrInvalidParameter.
func CQEntries(info *nd.AdapterInfo, entries int) nd.Status {
	if entries < 1 || entries > info.MaxCQEntries {
		return nd.ErrInvalidParameter
	}
	return nd.Success
}

// Resize checks CompletionQueue.Resize to entries while queued completions
// wait in the queue: the size as CQEntries, then ErrBufferOverflow when the
// queued completions would not fit (the queue is left unchanged).
func Resize(info *nd.AdapterInfo, entries, queued int) nd.Status {
	if st := CQEntries(info, entries); st != nd.Success {
		return st
	}
	if entries < queued {
		return nd.ErrBufferOverflow
	}
	return nd.Success
}

// NotifyType checks CompletionQueue.Notify's type, its first parameter:
// NotifyErrors, NotifyAny or NotifySolicited, else ErrInvalidParameter1.
func NotifyType(typ nd.NotifyType) nd.Status {
	switch typ {
	case nd.NotifyErrors, nd.NotifyAny, nd.NotifySolicited:
		return nd.Success
	}
	return nd.ErrInvalidParameter1
}

// Listen checks Listen's backlog (ErrInvalidParameter1 when negative; 0 is
// unlimited) and protocol (0 to 255, else ErrInvalidParameter2).
func Listen(backlog, protocol int) nd.Status {
	switch {
	case backlog < 0:
		return nd.ErrInvalidParameter1
	case protocol < 0 || protocol > 255:
		return nd.ErrInvalidParameter2
	}
	return nd.Success
}

// RegisterMemory checks RegisterMemory's buffer: a nil buffer is
// ErrInvalidParameter, an empty one ErrInvalidBufferSize, one longer than
// MaxRegistrationSize ErrInvalidParameter.
func RegisterMemory(info *nd.AdapterInfo, buf []byte) nd.Status {
	switch {
	case buf == nil:
		return nd.ErrInvalidParameter
	case len(buf) == 0:
		return nd.ErrInvalidBufferSize
	case len(buf) > info.MaxRegistrationSize:
		return nd.ErrInvalidParameter
	}
	return nd.Success
}

// EndpointLimits checks CreateEndpoint's six limits against the adapter's,
// by their ND parameter positions: InboundEntries (3) and OutboundEntries
// (4) from 1, InboundSGE (5), OutboundSGE (6), InboundReadLimit (7) and
// OutboundReadLimit (8) from 0, each up to the adapter's maximum. The
// completion queues, parameters 1 and 2, are the provider's to check first.
func EndpointLimits(info *nd.AdapterInfo, l *nd.EndpointLimits) nd.Status {
	switch {
	case l.InboundEntries < 1 || l.InboundEntries > info.MaxInboundRequests:
		return nd.ErrInvalidParameter3
	case l.OutboundEntries < 1 || l.OutboundEntries > info.MaxOutboundRequests:
		return nd.ErrInvalidParameter4
	case l.InboundSGE < 0 || l.InboundSGE > info.MaxInboundSGE:
		return nd.ErrInvalidParameter5
	case l.OutboundSGE < 0 || l.OutboundSGE > info.MaxOutboundSGE:
		return nd.ErrInvalidParameter6
	case l.InboundReadLimit < 0 || l.InboundReadLimit > info.MaxInboundReadLimit:
		return nd.ErrInvalidParameter7
	case l.OutboundReadLimit < 0 || l.OutboundReadLimit > info.MaxOutboundReadLimit:
		return nd.ErrInvalidParameter8
	}
	return nd.Success
}

// CreateEndpoint checks CreateEndpoint's parameters in order: the inbound
// and outbound completion queues (inOK, outOK false: not an open queue of
// the adapter; ErrInvalidParameter1, 2), then the limits (EndpointLimits).
func CreateEndpoint(info *nd.AdapterInfo, inOK, outOK bool, l *nd.EndpointLimits) nd.Status {
	switch {
	case !inOK:
		return nd.ErrInvalidParameter1
	case !outOK:
		return nd.ErrInvalidParameter2
	}
	return EndpointLimits(info, l)
}

// CreateSharedReceiveQueue checks CreateSharedReceiveQueue's call in ND's
// order: ErrDeviceRemoved once the adapter closed, ErrNotSupported for an
// adapter without shared receive queues (MaxSharedReceiveQueueDepth 0),
// ErrInvalidParameter1 unless cqOK (the completion queue is the adapter's
// and open), then the limits (SharedReceiveQueueLimits).
func CreateSharedReceiveQueue(adapterClosed bool, info *nd.AdapterInfo, cqOK bool, l *nd.SharedReceiveQueueLimits) nd.Status {
	switch {
	case adapterClosed:
		return nd.ErrDeviceRemoved
	case info.MaxSharedReceiveQueueDepth == 0:
		return nd.ErrNotSupported
	case !cqOK:
		return nd.ErrInvalidParameter1
	}
	return SharedReceiveQueueLimits(info, l)
}

// SharedReceiveQueueLimits checks CreateSharedReceiveQueue's limits by ND
// v2's parameter positions: Entries 1 to MaxSharedReceiveQueueDepth (3), SGE
// 0 to MaxInboundSGE (4), NotifyThreshold 0 to Entries (5). A provider
// without shared receive queues (depth 0) answers ErrNotSupported before.
func SharedReceiveQueueLimits(info *nd.AdapterInfo, l *nd.SharedReceiveQueueLimits) nd.Status {
	switch {
	case l.Entries < 1 || l.Entries > info.MaxSharedReceiveQueueDepth:
		return nd.ErrInvalidParameter3
	case l.SGE < 0 || l.SGE > info.MaxInboundSGE:
		return nd.ErrInvalidParameter4
	case l.NotifyThreshold < 0 || l.NotifyThreshold > l.Entries:
		return nd.ErrInvalidParameter5
	}
	return nd.Success
}
