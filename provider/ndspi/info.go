package ndspi

import (
	"math"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// What an adapter's Query reports, and the parameter positions of ND v2's
// calls, as package nd states them: pure conversions, the same on every
// platform.

// clampInt is a SIZE_T of the provider's as an int, saturating.
func clampInt(n uint64) int { return int(min(n, math.MaxInt32)) }

// adapterInfo1 is ND v1's ND_ADAPTER_INFO1 as nd.AdapterInfo. ND v1 has no
// adapter flags and no shared receive queues. Its flags are
// AdapterCQResize alone: every ND v1 completion queue has Resize (ND v2
// made it optional, with the flag); whether data is placed in order and
// whether an adapter connects to its own address, ND v1 does not say.
func adapterInfo1(in *ndabi.AdapterInfo1) nd.AdapterInfo {
	u := func(n uintptr) int { return clampInt(uint64(n)) }
	return nd.AdapterInfo{
		VendorID:              in.VendorID,
		DeviceID:              in.DeviceID,
		MaxInboundSGE:         u(in.MaxInboundSge),
		MaxInboundRequests:    u(in.MaxInboundRequests),
		MaxInboundLength:      u(in.MaxInboundLength),
		MaxOutboundSGE:        u(in.MaxOutboundSge),
		MaxOutboundRequests:   u(in.MaxOutboundRequests),
		MaxOutboundLength:     u(in.MaxOutboundLength),
		MaxInlineData:         u(in.MaxInlineData),
		MaxInboundReadLimit:   u(in.MaxInboundReadLimit),
		MaxOutboundReadLimit:  u(in.MaxOutboundReadLimit),
		MaxCQEntries:          u(in.MaxCqEntries),
		MaxRegistrationSize:   u(in.MaxRegistrationSize),
		MaxWindowSize:         u(in.MaxWindowSize),
		LargeRequestThreshold: u(in.LargeRequestThreshold),
		MaxCallerData:         u(in.MaxCallerData),
		MaxCalleeData:         u(in.MaxCalleeData),
		Flags:                 nd.AdapterCQResize,
	}
}

// adapterInfo2 is ND v2's ND2_ADAPTER_INFO as nd.AdapterInfo, field for
// field as ND's own v1-over-v2 layer maps them: inbound is ND v2's receive
// side, outbound its initiator side, both lengths its MaxTransferLength.
func adapterInfo2(in *ndabi.AdapterInfo2) nd.AdapterInfo {
	u := func(n uint32) int { return clampInt(uint64(n)) }
	return nd.AdapterInfo{
		VendorID:                   uint32(in.VendorID),
		DeviceID:                   uint32(in.DeviceID),
		MaxInboundSGE:              u(in.MaxReceiveSge),
		MaxInboundRequests:         u(in.MaxReceiveQueueDepth),
		MaxInboundLength:           u(in.MaxTransferLength),
		MaxOutboundSGE:             u(in.MaxInitiatorSge),
		MaxOutboundRequests:        u(in.MaxInitiatorQueueDepth),
		MaxOutboundLength:          u(in.MaxTransferLength),
		MaxInlineData:              u(in.MaxInlineDataSize),
		MaxInboundReadLimit:        u(in.MaxInboundReadLimit),
		MaxOutboundReadLimit:       u(in.MaxOutboundReadLimit),
		MaxCQEntries:               u(in.MaxCompletionQueueDepth),
		MaxRegistrationSize:        clampInt(uint64(in.MaxRegistrationSize)),
		MaxWindowSize:              clampInt(uint64(in.MaxWindowSize)),
		LargeRequestThreshold:      u(in.LargeRequestThreshold),
		MaxCallerData:              u(in.MaxCallerData),
		MaxCalleeData:              u(in.MaxCalleeData),
		Flags:                      nd.AdapterFlags(in.AdapterFlags),
		MaxSharedReceiveQueueDepth: u(in.MaxSharedReceiveQueueDepth),
	}
}

// ND v2 numbers the parameters of its calls otherwise than nd, which
// follows ND v1: these map ND v2's ND_INVALID_PARAMETER_n to nd's position
// of the same parameter; other statuses stay as they are.

// createQPParam maps IND2Adapter::CreateQueuePair's positions (iid, receive
// CQ, initiator CQ, context, receive depth, initiator depth, receive SGE,
// initiator SGE, inline size) to nd's CreateEndpoint.
func createQPParam(st nd.Status) nd.Status {
	switch st {
	case nd.ErrInvalidParameter2:
		return nd.ErrInvalidParameter1
	case nd.ErrInvalidParameter3:
		return nd.ErrInvalidParameter2
	case nd.ErrInvalidParameter5:
		return nd.ErrInvalidParameter3
	case nd.ErrInvalidParameter6:
		return nd.ErrInvalidParameter4
	case nd.ErrInvalidParameter7:
		return nd.ErrInvalidParameter5
	case nd.ErrInvalidParameter8:
		return nd.ErrInvalidParameter6
	}
	return st
}

// createQPWithSRQParam maps IND2Adapter::CreateQueuePairWithSrq's
// positions (iid, receive CQ, initiator CQ, SRQ, context, initiator depth,
// initiator SGE, inline size) to nd's CreateEndpointWithSRQ, whose SRQ
// stands where CreateEndpoint's InboundEntries does.
func createQPWithSRQParam(st nd.Status) nd.Status {
	switch st {
	case nd.ErrInvalidParameter2:
		return nd.ErrInvalidParameter1
	case nd.ErrInvalidParameter3:
		return nd.ErrInvalidParameter2
	case nd.ErrInvalidParameter4:
		return nd.ErrInvalidParameter3
	case nd.ErrInvalidParameter6:
		return nd.ErrInvalidParameter4
	case nd.ErrInvalidParameter7:
		return nd.ErrInvalidParameter6
	}
	return st
}

// rwParam maps IND2QueuePair::Read's and Write's positions (context, sge,
// nSge, remote address, remote token, flags) to ND v1's, which nd's Read
// and Write report (result, sgl, nSge, descriptor, offset, flags): the
// remote address and token are the descriptor.
func rwParam(st nd.Status) nd.Status {
	if st == nd.ErrInvalidParameter5 {
		return nd.ErrInvalidParameter4
	}
	return st
}

// bindParam maps IND2QueuePair::Bind's statuses to nd's Bind, whose
// positions are ND v1's and ND v2's alike (result, region, window, buffer,
// length, flags), except that nd reports a region that is not a live
// registration as ErrAccessViolation.
func bindParam(st nd.Status) nd.Status {
	if st == nd.ErrInvalidParameter2 {
		return nd.ErrAccessViolation
	}
	return st
}

// cqDepthParam maps IND2Adapter::CreateCompletionQueue's and
// IND2CompletionQueue::Resize's depth (parameters 3 and 1) to nd's
// ErrInvalidParameter, which nd's CreateCompletionQueue and Resize report
// for a size the adapter cannot serve.
func cqDepthParam(st nd.Status) nd.Status {
	switch st {
	case nd.ErrInvalidParameter1, nd.ErrInvalidParameter3:
		return nd.ErrInvalidParameter
	}
	return st
}

// listenBindStatus maps IND2Listener::Bind's statuses for a port in use
// (ND_SHARING_VIOLATION, ND_ADDRESS_ALREADY_EXISTS, and the
// STATUS_ADDRESS_ALREADY_ASSOCIATED ND's tests expect) to nd's Listen's,
// ErrAddressAlreadyExists.
func listenBindStatus(st nd.Status) nd.Status {
	switch st {
	case nd.ErrSharingViolation, nd.ErrAddressAlreadyAssociated:
		return nd.ErrAddressAlreadyExists
	}
	return st
}
