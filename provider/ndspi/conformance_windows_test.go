//go:build windows && (amd64 || arm64)

package ndspi_test

import (
	"os"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/ndspi"
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

// TestConformanceInstalled runs the suite through the ND providers
// installed on this host (the Winsock catalog, or GODIRECT_NDSPI_DLL and
// _CLASS; GODIRECT_NDSPI_VERSION narrows it to one ND version): on a
// Windows host with an RDMA NIC's ND provider, the suite against the
// hardware. It skips where no provider is installed (under Wine, whose
// catalog keeps none). The differences of ND v1 and v2 themselves are
// skipped, with their reasons, as through godirect's DLL.
func TestConformanceInstalled(t *testing.T) {
	cfg, err := ndspi.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	p := ndspi.New(cfg)
	found, err := p.Installed()
	if err != nil {
		t.Skipf("no ND provider to test: %v", err)
	}
	v := 0
	for _, in := range found {
		t.Logf("found %s %q at %s: ND v%d, addresses %v, %v", in.ID, in.Name, in.Path, in.Version, in.Addresses, in.Err)
		if v == 0 && in.Err == nil {
			v = in.Version
		}
	}
	if v == 0 {
		t.Skip("no usable ND provider is installed on this host")
	}
	ndtest.RunSkipping(t, p, skipping(v, false))
}
