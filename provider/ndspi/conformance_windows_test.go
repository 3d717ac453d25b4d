//go:build windows

package ndspi_test

import (
	"testing"

	"github.com/godirect/nd"
)

// TestConformance runs the conformance suite through provider ndspi
// against godirect's ND provider DLL, over its ND v2 and ND v1 interfaces
// and over each of its transports: TestConformance/v2/tcp,
// TestConformance/v1/shm, and so on.
func TestConformance(t *testing.T) {
	for _, v := range []int{2, 1} {
		for _, tr := range transports {
			t.Run(versionName(v)+"/"+tr.name, func(t *testing.T) {
				var p nd.Provider = dllProvider(t, tr.class, v)
				if tr.name == "tcp" {
					p = openNetwork{p}
				}
				runSuite(t, p, v)
			})
		}
	}
}

func versionName(v int) string {
	if v == 1 {
		return "v1"
	}
	return "v2"
}

// openNetwork is the provider over the DLL's tcp transport, which is on an
// open network as provider/tcp is (ndtest.OpenNetwork): an address no
// adapter serves looks like a host where nobody listens.
type openNetwork struct{ nd.Provider }

func (openNetwork) OpenNetwork() bool { return true }
