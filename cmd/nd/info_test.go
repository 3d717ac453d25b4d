package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/godirect/nd/provider/loop"
)

func TestInfo(t *testing.T) {
	code, stdout, stderr := runNd(t, "info", "-provider", "loop")
	if code != 0 {
		t.Fatalf("nd info: exit status %d\nstderr:\n%s", code, stderr)
	}
	want := []string{
		"Provider: loop\n",
		"Addresses:\n    127.0.0.1\n    127.0.0.2\n",
		"Adapter: 127.0.0.1\n",
		fmt.Sprintf("VendorId: 0x%08x\n", loop.Info.VendorID),
		fmt.Sprintf("DeviceId: %#x\n", loop.Info.DeviceID),
		fmt.Sprintf("MaxInboundSge: %d\n", loop.Info.MaxInboundSGE),
		fmt.Sprintf("MaxInboundRequests: %d\n", loop.Info.MaxInboundRequests),
		fmt.Sprintf("MaxInboundLength: %d\n", loop.Info.MaxInboundLength),
		fmt.Sprintf("MaxOutboundSge: %d\n", loop.Info.MaxOutboundSGE),
		fmt.Sprintf("MaxOutboundRequests: %d\n", loop.Info.MaxOutboundRequests),
		fmt.Sprintf("MaxOutboundLength: %d\n", loop.Info.MaxOutboundLength),
		fmt.Sprintf("MaxInlineData: %d\n", loop.Info.MaxInlineData),
		fmt.Sprintf("MaxInboundReadLimit: %d\n", loop.Info.MaxInboundReadLimit),
		fmt.Sprintf("MaxOutboundReadLimit: %d\n", loop.Info.MaxOutboundReadLimit),
		fmt.Sprintf("MaxSharedReceiveQueueDepth: %d\n", loop.Info.MaxSharedReceiveQueueDepth),
		fmt.Sprintf("MaxCqEntries: %d\n", loop.Info.MaxCQEntries),
		fmt.Sprintf("MaxRegistrationSize: %d\n", loop.Info.MaxRegistrationSize),
		fmt.Sprintf("MaxWindowSize: %d\n", loop.Info.MaxWindowSize),
		fmt.Sprintf("LargeRequestThreshold: %d\n", loop.Info.LargeRequestThreshold),
		fmt.Sprintf("MaxCallerData: %d\n", loop.Info.MaxCallerData),
		fmt.Sprintf("MaxCalleeData: %d\n", loop.Info.MaxCalleeData),
		fmt.Sprintf("AdapterFlags: 0x%08x\n", uint32(loop.Info.Flags)),
		"\n    ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED\n",
		"\n    ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED\n",
	}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", stdout)
	}

	code, stdout, _ = runNd(t, "info", "-provider", "loop", "127.0.0.2")
	if code != 0 || !strings.Contains(stdout, "Adapter: 127.0.0.2\n") {
		t.Errorf("nd info 127.0.0.2: exit status %d, output:\n%s", code, stdout)
	}
}

func TestInfoErrors(t *testing.T) {
	code, _, stderr := runNd(t, "info", "-provider", "loop", "10.9.8.7")
	if code != 1 || !strings.Contains(stderr, "OpenAdapter 10.9.8.7") || !strings.Contains(stderr, "ND_INVALID_ADDRESS") {
		t.Errorf("nd info 10.9.8.7: exit status %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = runNd(t, "info", "-provider", "nosuch")
	if code != 1 || !strings.Contains(stderr, "ND_NOT_SUPPORTED") || !strings.Contains(stderr, "known providers: loop") {
		t.Errorf("nd info -provider nosuch: exit status %d, stderr:\n%s", code, stderr)
	}
}
