package ndspi

import (
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

func TestAdapterInfo(t *testing.T) {
	v1 := adapterInfo1(&ndabi.AdapterInfo1{VendorID: 0x1234, DeviceID: 7, MaxInboundSge: 4, MaxInboundRequests: 16, MaxInboundLength: 1 << 20,
		MaxOutboundSge: 5, MaxOutboundRequests: 17, MaxOutboundLength: 1 << 21, MaxInlineData: 64, MaxInboundReadLimit: 8,
		MaxOutboundReadLimit: 9, MaxCqEntries: 1 << 16, MaxRegistrationSize: 1 << 40, MaxWindowSize: 1 << 30,
		LargeRequestThreshold: 16384, MaxCallerData: 56, MaxCalleeData: 148})
	want1 := nd.AdapterInfo{VendorID: 0x1234, DeviceID: 7, MaxInboundSGE: 4, MaxInboundRequests: 16, MaxInboundLength: 1 << 20,
		MaxOutboundSGE: 5, MaxOutboundRequests: 17, MaxOutboundLength: 1 << 21, MaxInlineData: 64, MaxInboundReadLimit: 8,
		MaxOutboundReadLimit: 9, MaxCQEntries: 1 << 16, MaxRegistrationSize: 1<<31 - 1, MaxWindowSize: 1 << 30,
		LargeRequestThreshold: 16384, MaxCallerData: 56, MaxCalleeData: 148, Flags: nd.AdapterCQResize}
	if v1 != want1 {
		t.Errorf("adapterInfo1 =\n %+v\nwant\n %+v", v1, want1)
	}
	v2 := adapterInfo2(&ndabi.AdapterInfo2{InfoVersion: ndabi.NDVersion2, VendorID: 0x15B3, DeviceID: 0x1017, AdapterID: 3,
		MaxRegistrationSize: 1 << 32, MaxWindowSize: 1 << 20, MaxInitiatorSge: 30, MaxReceiveSge: 31, MaxReadSge: 30,
		MaxTransferLength: 1 << 30, MaxInlineDataSize: 220, MaxInboundReadLimit: 16, MaxOutboundReadLimit: 15,
		MaxReceiveQueueDepth: 32768, MaxInitiatorQueueDepth: 16384, MaxSharedReceiveQueueDepth: 4096, MaxCompletionQueueDepth: 1 << 22,
		InlineRequestThreshold: 128, LargeRequestThreshold: 65536, MaxCallerData: 56, MaxCalleeData: 148,
		AdapterFlags: uint32(nd.AdapterInOrderDMA | nd.AdapterLoopbackConnections)})
	want2 := nd.AdapterInfo{VendorID: 0x15B3, DeviceID: 0x1017, MaxInboundSGE: 31, MaxInboundRequests: 32768, MaxInboundLength: 1 << 30,
		MaxOutboundSGE: 30, MaxOutboundRequests: 16384, MaxOutboundLength: 1 << 30, MaxInlineData: 220, MaxInboundReadLimit: 16,
		MaxOutboundReadLimit: 15, MaxCQEntries: 1 << 22, MaxRegistrationSize: 1<<31 - 1, MaxWindowSize: 1 << 20,
		LargeRequestThreshold: 65536, MaxCallerData: 56, MaxCalleeData: 148,
		Flags: nd.AdapterInOrderDMA | nd.AdapterLoopbackConnections, MaxSharedReceiveQueueDepth: 4096}
	if v2 != want2 {
		t.Errorf("adapterInfo2 =\n %+v\nwant\n %+v", v2, want2)
	}
}

func TestParamMaps(t *testing.T) {
	p := func(n int) nd.Status { return nd.ErrInvalidParameter1 + nd.Status(n-1) }
	for _, c := range []struct {
		name   string
		f      func(nd.Status) nd.Status
		in, to []nd.Status
	}{
		// CreateQueuePair(iid, rcq, icq, ctx, rDepth, iDepth, rSGE, iSGE, inline) -> CreateEndpoint(in, out, 6 limits)
		{"CreateQueuePair", createQPParam, []nd.Status{p(2), p(3), p(5), p(6), p(7), p(8), p(9), nd.ErrNoMemory}, []nd.Status{p(1), p(2), p(3), p(4), p(5), p(6), p(9), nd.ErrNoMemory}},
		// CreateQueuePairWithSrq(iid, rcq, icq, srq, ctx, iDepth, iSGE, inline) -> CreateEndpointWithSRQ(in, out, srq|InboundEntries, OutboundEntries, -, OutboundSGE)
		{"CreateQueuePairWithSrq", createQPWithSRQParam, []nd.Status{p(2), p(3), p(4), p(6), p(7)}, []nd.Status{p(1), p(2), p(3), p(4), p(6)}},
		{"Read/Write", rwParam, []nd.Status{p(2), p(3), p(4), p(5), p(6)}, []nd.Status{p(2), p(3), p(4), p(4), p(6)}},
		{"Bind", bindParam, []nd.Status{p(2), p(3), p(4), p(6)}, []nd.Status{nd.ErrAccessViolation, p(3), p(4), p(6)}},
		{"CQ depth", cqDepthParam, []nd.Status{p(1), p(3), nd.ErrNotSupported}, []nd.Status{nd.ErrInvalidParameter, nd.ErrInvalidParameter, nd.ErrNotSupported}},
		{"listener Bind", listenBindStatus, []nd.Status{nd.ErrSharingViolation, nd.ErrAddressAlreadyAssociated, nd.ErrAddressAlreadyExists, nd.ErrInvalidAddress},
			[]nd.Status{nd.ErrAddressAlreadyExists, nd.ErrAddressAlreadyExists, nd.ErrAddressAlreadyExists, nd.ErrInvalidAddress}},
	} {
		for i, in := range c.in {
			if got := c.f(in); got != c.to[i] {
				t.Errorf("%s: %v -> %v, want %v", c.name, in.Name(), got.Name(), c.to[i].Name())
			}
		}
	}
}

func TestHresultText(t *testing.T) {
	for st, want := range map[nd.Status]string{
		nd.Status(ndabi.CLASS_E_CLASSNOTAVAILABLE): "CLASS_E_CLASSNOTAVAILABLE (the DLL serves no such class) (0x80040111)",
		nd.Status(ndabi.E_NOINTERFACE):             "E_NOINTERFACE (0x80004002)",
		nd.ErrInvalidAddress:                       nd.ErrInvalidAddress.Error(),
	} {
		if got := hresultText(st); got != want {
			t.Errorf("hresultText(%#x) = %q, want %q", uint32(st), got, want)
		}
	}
}
