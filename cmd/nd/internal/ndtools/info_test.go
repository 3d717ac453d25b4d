package ndtools

import (
	"strings"
	"testing"

	"github.com/godirect/nd"
)

func TestAdapterFlagNames(t *testing.T) {
	got := adapterFlagNames(nd.AdapterInOrderDMA | nd.AdapterCQResize | 0x2 | 0x80000000)
	want := []string{
		"ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED",
		"ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED",
		"0x80000002 (unknown flags)",
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("adapterFlagNames = %q, want %q", got, want)
	}
	if got := adapterFlagNames(0); len(got) != 0 {
		t.Errorf("adapterFlagNames(0) = %q, want none", got)
	}
}
